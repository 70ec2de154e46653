import { CompleteLifecycleActionCommand } from "@aws-sdk/client-auto-scaling";
import { expect } from "chai";
import { FLEET_GATEWAY_GRANTS, GATEWAY_GRANTS, GATEWAY_IAM_ACTIONS } from "../../../functions/gpu/iam";
import { calledActions } from "../../../functions/shared/grants";
import { advance, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { FLEET, GatewayHarness } from "../helpers/gpu-gateway";

/** The DocumentClient's command names differ from the API's: UpdateCommand sends UpdateItem. */
const ACTION_OF: Record<string, string> = {
  UpdateCommand: "dynamodb:UpdateItem",
  DeleteCommand: "dynamodb:DeleteItem",
  PutCommand: "dynamodb:PutItem",
  GetCommand: "dynamodb:GetItem",
  CompleteLifecycleActionCommand: "autoscaling:CompleteLifecycleAction",
};

describe("gpu gateway IAM: the action list matches what the code calls", function () {
  this.timeout(20_000);
  useFakeTime();
  let h: GatewayHarness;
  afterEach(() => h?.stop());

  it("every path together (claim, done, repeat, model failure and release, lease extension, conflict, drain and lifecycle completion) calls exactly GATEWAY_IAM_ACTIONS", async () => {
    h = await new GatewayHarness().start({ fleet: FLEET, modelConcurrency: 1, keyLeaseMs: 6000, modelTimeoutMs: 5000 });
    h.asgMock.on(CompleteLifecycleActionCommand).resolves({});
    // A window served, its repeat, a failed one (released), and one that waited long enough to extend its lease.
    expect((await until(h.post("a"))).status).to.equal(200);
    expect((await until(h.post("a"))).status).to.equal(200);
    h.model.reply = () => ({ status: 500 });
    expect((await until(h.post("b"))).status).to.equal(502);
    h.model.reply = () => ({ status: 200, body: "{}" });
    // One that waits for the single model slot long enough to extend its lease.
    h.model.gate();
    const c = h.post("c");
    await waitFor(() => h.model.requests.length === 3, 1000, "c at the model");
    const d = h.post("d");
    await waitFor(() => h.logger.withStep("window_claimed").length === 4, 1000, "d claimed");
    await advance(2000);
    h.model.open();
    await until(c);
    await until(d);
    // One held by another instance.
    h.table.put({ window_key: "e", state: "claimed", holder: "i-other", claim_token: "t", lease_expires_at: Date.now() + 60_000, expires_at: 1 });
    expect((await until(h.post("e"))).status).to.equal(409);
    await until(h.gateway.drain("spot-interruption"));

    const actions = [...h.table.mock.calls(), ...h.asgMock.calls()].map(
      (call) => ACTION_OF[call.args[0].constructor.name] ?? `unmapped:${call.args[0].constructor.name}`,
    );
    expect(h.logger.steps()).to.include.members(["window_done", "window_repeat", "key_released", "window_conflict", "lifecycle_completed"]);
    expect([...new Set(actions)]).to.have.members([...GATEWAY_IAM_ACTIONS]);
  });

  it("instance mode is granted the key table's writes only; fleet mode adds CompleteLifecycleAction on the stack's group", () => {
    expect(calledActions(GATEWAY_GRANTS)).to.deep.equal(["dynamodb:DeleteItem", "dynamodb:UpdateItem"]);
    expect(FLEET_GATEWAY_GRANTS.filter((g) => g.resource === "stack-gpu-group").flatMap((g) => g.actions)).to.deep.equal([
      "autoscaling:CompleteLifecycleAction",
    ]);
    expect(GATEWAY_IAM_ACTIONS).to.deep.equal(["autoscaling:CompleteLifecycleAction", "dynamodb:DeleteItem", "dynamodb:UpdateItem"]);
  });
});
