import { CompleteLifecycleActionCommand } from "@aws-sdk/client-auto-scaling";
import { expect } from "chai";
import type { KeyItem } from "../../../functions/gpu/keys";
import { advance, settle, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { httpCall, type ModelReply } from "../helpers/fake-model";
import { FLEET, GatewayHarness, INSTANCE_ID } from "../helpers/gpu-gateway";
import type { TableFault } from "../helpers/gpu-key-table";

const NOW = Date.UTC(2026, 0, 1);

const other = (over: Partial<KeyItem> = {}): KeyItem => ({
  window_key: "w-1",
  state: "claimed",
  holder: "i-other",
  claim_token: "their-token",
  lease_expires_at: NOW + 30_000,
  expires_at: 1,
  ...over,
});

const noActiveAction = () =>
  Object.assign(new Error("No active Lifecycle Action found with instance ID i-0123456789abcdef0"), {
    name: "ValidationError",
    $fault: "client",
    $metadata: { httpStatusCode: 400 },
  });

describe("gpu gateway: the HTTP contract (functions/gpu/server.ts)", function () {
  this.timeout(20_000);
  useFakeTime(NOW);
  let h: GatewayHarness;
  afterEach(async () => {
    await h?.stop();
  });

  describe("POST servicePath", () => {
    interface Case {
      name: string;
      before?: KeyItem;
      faults?: TableFault[];
      down?: boolean;
      reply?: ModelReply;
      key?: string | null;
      body?: string;
      status: number;
      modelCalls: number;
      body_?: string;
      replayed?: boolean;
      itemAfter: "done" | "none" | "unchanged" | "claimed";
      steps: string[];
    }
    const served = JSON.stringify({ served: "w-1" });
    const cases: Case[] = [
      {
        name: "a fresh key: claimed, sent to the model once, marked done, 200 with the model's body",
        status: 200,
        modelCalls: 1,
        body_: served,
        itemAfter: "done",
        steps: ["window_claimed", "window_done"],
      },
      {
        name: "a repeat of a done key: 200 with the stored answer, Idempotency-Replayed, the model not reached",
        before: other({ state: "done", response: '{"stored":true}', response_status: 200 }),
        status: 200,
        modelCalls: 0,
        body_: '{"stored":true}',
        replayed: true,
        itemAfter: "unchanged",
        steps: ["window_repeat"],
      },
      {
        name: "a key in progress elsewhere (live lease): 409, the model not reached",
        before: other(),
        status: 409,
        modelCalls: 0,
        itemAfter: "unchanged",
        steps: ["window_conflict"],
      },
      {
        name: "an expired lease elsewhere is taken over and served",
        before: other({ lease_expires_at: NOW - 1 }),
        status: 200,
        modelCalls: 1,
        body_: served,
        itemAfter: "done",
        steps: ["window_claimed", "window_done"],
      },
      {
        name: "a claim whose answer was lost is resolved by its own token and served once",
        faults: ["lost"],
        status: 200,
        modelCalls: 1,
        body_: served,
        itemAfter: "done",
        steps: ["window_claimed", "window_done"],
      },
      {
        name: "model 5xx: the key is released, 502",
        reply: { status: 500, body: "CUDA OOM" },
        status: 502,
        modelCalls: 1,
        itemAfter: "none",
        steps: ["window_claimed", "model_failed", "key_released"],
      },
      {
        name: "model 503: 502 as well (any non-4xx failure)",
        reply: { status: 503 },
        status: 502,
        modelCalls: 1,
        itemAfter: "none",
        steps: ["window_claimed", "model_failed", "key_released"],
      },
      {
        name: "model 4xx: its own status and body pass through, the key is released",
        reply: { status: 422, body: '{"error":"bad window"}' },
        status: 422,
        modelCalls: 1,
        body_: '{"error":"bad window"}',
        itemAfter: "none",
        steps: ["window_claimed", "model_failed", "key_released"],
      },
      {
        name: "DynamoDB failing after every re-send: 503, the model not reached",
        down: true,
        status: 503,
        modelCalls: 0,
        itemAfter: "none",
        steps: ["key_store_failed"],
      },
      { name: "no Idempotency-Key: 400", key: null, status: 400, modelCalls: 0, itemAfter: "none", steps: [] },
      { name: "a blank Idempotency-Key: 400", key: "  ", status: 400, modelCalls: 0, itemAfter: "none", steps: [] },
      { name: "a body that is not JSON: 400", body: "not json{", status: 400, modelCalls: 0, itemAfter: "none", steps: [] },
    ];
    for (const c of cases)
      it(c.name, async () => {
        // Prepare
        h = await new GatewayHarness().start();
        if (c.before) h.table.put(c.before);
        h.table.faults.push(...(c.faults ?? []));
        h.table.down = c.down ?? false;
        const reply = c.reply;
        if (reply) h.model.reply = () => reply;
        // Act
        const res = await until(h.post(c.key === null ? undefined : (c.key ?? "w-1"), c.body));
        // Assess
        expect(res.status).to.equal(c.status);
        expect(h.model.requests).to.have.length(c.modelCalls);
        if (c.modelCalls > 0) expect(h.model.requests[0]).to.deep.equal({ key: "w-1", body: JSON.stringify({ window: "w-1" }) });
        if (c.body_ !== undefined) expect(res.body).to.equal(c.body_);
        expect(res.headers["idempotency-replayed"]).to.equal(c.replayed ? "true" : undefined);
        const after = h.table.item("w-1");
        if (c.itemAfter === "none") expect(after).to.equal(undefined);
        if (c.itemAfter === "unchanged") expect(after).to.deep.equal(c.before);
        if (c.itemAfter === "done") {
          expect(after).to.deep.include({ state: "done", holder: INSTANCE_ID, response: c.body_, response_status: 200 });
          expect(after?.done_at).to.be.within(NOW, NOW + 100);
        }
        expect(h.logger.steps().filter((s) => s !== "gateway_started")).to.deep.equal(c.steps);
        expect(h.gateway.status().active).to.equal(0);
      });

    it("the model refusing the connection: 502 and the key released", async () => {
      h = await new GatewayHarness().start({ modelUrl: "http://127.0.0.1:1" });
      const res = await until(h.post("w-1"));
      expect(res.status).to.equal(502);
      expect(JSON.parse(res.body)).to.deep.include({ reason: "unreachable" });
      expect(h.table.items.size).to.equal(0);
    });

    it("the model not answering within GPU_MODEL_TIMEOUT_MS: 502 (timeout) and the key released", async () => {
      h = await new GatewayHarness().start({ modelTimeoutMs: 5000 });
      h.model.reply = () => "hang";
      const answer = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "the window at the model");
      await advance(4900);
      expect(h.gateway.status().active).to.equal(1);
      const res = await until(answer);
      expect(res.status).to.equal(502);
      expect(JSON.parse(res.body)).to.deep.include({ reason: "timeout" });
      expect(h.table.items.size).to.equal(0);
      expect(h.logger.withStep("model_failed")[0]?.fields).to.deep.include({ reason: "timeout" });
    });

    it("a key whose model failed is served by its next delivery", async () => {
      h = await new GatewayHarness().start();
      h.model.reply = () => ({ status: 500 });
      expect((await until(h.post("w-1"))).status).to.equal(502);
      h.model.reply = () => ({ status: 200, body: "{}" });
      expect((await until(h.post("w-1"))).status).to.equal(200);
      expect(h.table.item("w-1")).to.deep.include({ state: "done" });
    });

    it("the same key twice at once on one gateway: the second gets 409 before any write", async () => {
      h = await new GatewayHarness().start();
      h.model.gate();
      const first = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "the first at the model");
      const writes = h.table.mock.calls().length;
      const second = await until(h.post("w-1"));
      expect(second.status).to.equal(409);
      expect(h.table.mock.calls().length).to.equal(writes);
      h.model.open();
      expect((await until(first)).status).to.equal(200);
      expect(h.model.requests).to.have.length(1);
    });

    it("at most GPU_MODEL_CONCURRENCY windows at the model; the others wait and go in arrival order", async () => {
      h = await new GatewayHarness().start({ modelConcurrency: 2 });
      h.model.gate();
      const keys = ["a", "b", "c", "d", "e"];
      const answers = [];
      for (const [i, key] of keys.entries()) {
        answers.push(h.post(key));
        await waitFor(() => h.gateway.status().active === i + 1 && h.logger.withStep("window_claimed").length === i + 1, 1000, `${key} claimed`);
      }
      expect(h.model.requests.map((r) => r.key)).to.deep.equal(["a", "b"]);
      expect(h.gateway.status().active).to.equal(5);
      h.model.open(1);
      await waitFor(() => h.model.requests.length === 3, 1000, "the third at the model");
      expect(h.model.requests.map((r) => r.key)).to.deep.equal(["a", "b", "c"]);
      h.model.open();
      const statuses = await Promise.all(answers.map((a) => until(a)));
      expect(statuses.map((s) => s.status)).to.deep.equal([200, 200, 200, 200, 200]);
      expect(h.model.requests.map((r) => r.key)).to.deep.equal(keys);
      expect(h.model.maxAtModel).to.equal(2);
    });

    it("a window that waited for its slot past the lease's margin extends its claim before the model", async () => {
      h = await new GatewayHarness().start({ modelConcurrency: 1, keyLeaseMs: 6000, modelTimeoutMs: 5000 });
      h.model.gate();
      const first = h.post("a");
      await waitFor(() => h.model.requests.length === 1, 1000, "a at the model");
      const second = h.post("b");
      await waitFor(() => h.gateway.status().active === 2 && h.logger.withStep("window_claimed").length === 2, 1000, "b claimed");
      const claimedLease = h.table.item("b")?.lease_expires_at as number;
      await advance(2000);
      h.model.open();
      expect((await until(first)).status).to.equal(200);
      expect((await until(second)).status).to.equal(200);
      const extends_ = h.table.mock
        .calls()
        .filter((c) => String((c.args[0].input as { UpdateExpression?: string }).UpdateExpression).startsWith("SET #lease_expires_at"));
      expect(extends_).to.have.length(1);
      expect(h.table.item("b")?.lease_expires_at as number).to.be.at.least(claimedLease + 2000);
    });

    it("unknown paths answer 404, wrong methods 405", async () => {
      h = await new GatewayHarness().start();
      expect((await until(httpCall(`http://127.0.0.1:${h.port}/nope`))).status).to.equal(404);
      expect((await until(httpCall(`http://127.0.0.1:${h.port}/windows`))).status).to.equal(405);
      expect((await until(httpCall(`http://127.0.0.1:${h.port}/status`, { method: "POST", body: "{}" }))).status).to.equal(405);
    });
  });

  describe("GET statusPath", () => {
    const cases = [
      { name: "model healthy, not draining: 200", health: 200, drain: false, status: 200 },
      { name: "model health failing: 503", health: 500, drain: false, status: 503 },
      { name: "draining (model healthy): 503", health: 200, drain: true, status: 503 },
    ];
    for (const c of cases)
      it(c.name, async () => {
        h = await new GatewayHarness().start();
        h.model.health = c.health;
        if (c.drain) void h.gateway.drain("SIGTERM");
        await advance(3000);
        const res = await until(h.status());
        expect(res.status).to.equal(c.status);
        const body = JSON.parse(res.body) as { active: number; idleSeconds: number; draining: boolean };
        expect(body).to.deep.include({ active: 0, draining: c.drain });
        expect(body.idleSeconds).to.be.closeTo(3, 0.05);
      });

    it("reports the windows held and idleSeconds since the last one finished", async () => {
      h = await new GatewayHarness().start();
      h.model.gate();
      const answer = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "at the model");
      expect(JSON.parse((await until(h.status())).body)).to.deep.include({ active: 1, idleSeconds: 0 });
      h.model.open();
      await until(answer);
      await advance(1500);
      const body = JSON.parse((await until(h.status())).body) as { active: number; idleSeconds: number };
      expect(body.active).to.equal(0);
      expect(body.idleSeconds).to.be.closeTo(1.5, 0.05);
    });
  });

  describe("drain", () => {
    const signals: Array<[string, string, { status: number; body: string }]> = [
      ["the Auto Scaling target lifecycle state Terminated", "autoscaling/target-lifecycle-state", { status: 200, body: "Terminated" }],
      ["a Spot interruption notice", "spot/instance-action", { status: 200, body: '{"action":"terminate","time":"2026-01-01T00:02:00Z"}' }],
      ["a rebalance recommendation", "events/recommendations/rebalance", { status: 200, body: '{"noticeTime":"2026-01-01T00:00:00Z"}' }],
    ];
    for (const [name, path, answer] of signals)
      it(`on ${name}: POST and status 503, the held window finished, then CompleteLifecycleAction (retried on ValidationError)`, async () => {
        // Prepare: fleet mode, one window at the model
        h = await new GatewayHarness().start({ fleet: FLEET, drainPollMs: 1000 });
        h.asgMock.on(CompleteLifecycleActionCommand).rejectsOnce(noActiveAction()).rejectsOnce(noActiveAction()).resolves({});
        h.model.gate();
        const held = h.post("w-1");
        await waitFor(() => h.model.requests.length === 1, 1000, "at the model");
        // Act: the signal shows at the next poll
        h.metadata.answers.set(path, answer);
        await advance(1000);
        // Assess
        expect(h.logger.withStep("drain_started")).to.have.length(1);
        expect((await until(h.post("w-2"))).status).to.equal(503);
        const status = await until(h.status());
        expect([status.status, JSON.parse(status.body).draining]).to.deep.equal([503, true]);
        await advance(3000); // within the model's 5 s timeout: the window is still held
        expect(h.gateway.status().active).to.equal(1);
        expect(h.asgMock.commandCalls(CompleteLifecycleActionCommand)).to.have.length(0);
        h.model.open();
        expect((await until(held)).status).to.equal(200);
        await waitFor(() => h.logger.withStep("lifecycle_completed").length === 1, 10_000, "lifecycle_completed");
        const calls = h.asgMock.commandCalls(CompleteLifecycleActionCommand);
        expect(calls).to.have.length(3);
        expect(calls[2]!.args[0].input).to.deep.equal({
          AutoScalingGroupName: FLEET.groupName,
          LifecycleHookName: FLEET.hookName,
          InstanceId: INSTANCE_ID,
          LifecycleActionResult: "CONTINUE",
        });
        const steps = h.logger.steps();
        expect(steps.indexOf("drain_done")).to.be.above(steps.indexOf("window_done"));
        expect(h.model.requests).to.have.length(1);
      });

    it("windows still waiting for a model slot when a drain begins are handed back (503, key released); the one at the model finishes", async () => {
      // Prepare: one model slot, one window at the model and two waiting for it
      h = await new GatewayHarness().start({ modelConcurrency: 1 });
      h.model.gate();
      const atModel = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "w-1 at the model");
      const waiting = [h.post("w-2"), h.post("w-3")];
      await waitFor(() => h.logger.withStep("window_claimed").length === 3, 1000, "w-2 and w-3 claimed");
      // Act: the drain begins, then the model answers w-1, which frees the slot the others wait for
      const drained = h.gateway.drain("SIGTERM");
      h.model.open();
      // Assess
      expect((await until(atModel)).status).to.equal(200);
      expect((await Promise.all(waiting.map((w) => until(w)))).map((r) => r.status)).to.deep.equal([503, 503]);
      await until(drained);
      expect(h.model.requests.map((r) => r.key)).to.deep.equal(["w-1"]);
      expect(h.logger.withStep("window_handed_back")).to.have.length(2);
      expect([...h.table.items.keys()]).to.deep.equal(["w-1"]);
      expect(h.table.items.get("w-1")?.state).to.equal("done");
    });

    it("the waiting windows are handed back as soon as the drain begins, all together, while the window at the model still runs", async () => {
      // Prepare: one model slot held by w-1 (the model does not answer), three windows waiting for it
      h = await new GatewayHarness().start({ modelConcurrency: 1 });
      h.model.gate();
      const atModel = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "w-1 at the model");
      const waiting = ["w-2", "w-3", "w-4"].map((k) => h.post(k));
      await waitFor(() => h.logger.withStep("window_claimed").length === 4, 1000, "the waiters claimed");
      // Act: the drain begins; the model still holds w-1
      const drained = h.gateway.drain("SIGTERM");
      // Assess: every waiter is answered 503 and its key gone before w-1 finishes
      expect((await Promise.all(waiting.map((w) => until(w)))).map((r) => r.status)).to.deep.equal([503, 503, 503]);
      expect(h.logger.withStep("window_handed_back")).to.have.length(3);
      expect([...h.table.items.keys()]).to.deep.equal(["w-1"]);
      expect(h.gateway.status().active).to.equal(1);
      h.model.open();
      expect((await until(atModel)).status).to.equal(200);
      await until(drained);
      expect(h.model.requests.map((r) => r.key)).to.deep.equal(["w-1"]);
    });

    it("no drain while the target state is InService and no notice is out; an unreadable metadata is logged once", async () => {
      h = await new GatewayHarness().start({ fleet: FLEET });
      h.metadata.answers.set("autoscaling/target-lifecycle-state", { status: 200, body: "InService" });
      await advance(3000);
      h.metadata.down = true;
      await advance(3000);
      expect(h.metadata.reads).to.be.at.least(12);
      expect(h.gateway.status().draining).to.equal(false);
      expect(h.logger.withStep("metadata_unreadable")).to.have.length(1);
    });

    it("on SIGTERM (fleet mode): waits for active 0, then completes the lifecycle action", async () => {
      h = await new GatewayHarness().start({ fleet: FLEET });
      h.asgMock.on(CompleteLifecycleActionCommand).rejectsOnce(noActiveAction()).resolves({});
      h.model.gate();
      const held = h.post("w-1");
      await waitFor(() => h.model.requests.length === 1, 1000, "at the model");
      let drained = false;
      const drain = h.gateway.drain("SIGTERM").then(() => (drained = true));
      await advance(3000);
      expect(drained).to.equal(false);
      expect(h.asgMock.commandCalls(CompleteLifecycleActionCommand)).to.have.length(0);
      h.model.open();
      expect((await until(held)).status).to.equal(200);
      await until(drain);
      expect(h.asgMock.commandCalls(CompleteLifecycleActionCommand)).to.have.length(2);
      expect(h.logger.steps()).to.include.members(["drain_started", "drain_done", "lifecycle_completed"]);
    });

    it("on SIGTERM with no lifecycle action to complete: gives up after its bound and the drain ends", async () => {
      h = await new GatewayHarness().start({ fleet: FLEET }, { sigtermCompleteMs: 10_000 });
      h.asgMock.on(CompleteLifecycleActionCommand).rejects(noActiveAction());
      await until(h.gateway.drain("SIGTERM"), 30_000);
      const calls = h.asgMock.commandCalls(CompleteLifecycleActionCommand).length;
      expect(calls).to.be.within(2, 6);
      expect(h.logger.withStep("lifecycle_not_completed")).to.have.length(1);
    });

    it("instance mode (no group): drains on a notice and never calls CompleteLifecycleAction", async () => {
      h = await new GatewayHarness().start();
      h.metadata.answers.set("spot/instance-action", { status: 200, body: "{}" });
      await advance(1000);
      await settle();
      await until(h.gateway.drain("SIGTERM"));
      await advance(5000);
      expect(h.logger.withStep("drain_done")).to.have.length(1);
      expect(h.asgMock.calls()).to.have.length(0);
    });
  });
});
