import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { createGateway, type Gateway } from "../../functions/gpu/server";
import { FakeModel } from "../functions/helpers/fake-model";
import { FakeMetadata, testGatewayConfig } from "../functions/helpers/gpu-gateway";
import { RecordingLogger, RecordingMetrics } from "../functions/helpers/telemetry";
import { resetMoto } from "./helpers/moto";

const TABLE = "encache-gpu-keys-it";

/** Two gateways (two instance ids) in front of one fake model, sharing one key table in moto: the claims are real conditional writes. */
describe("gpu gateway against moto: two instances share one key table", function () {
  this.timeout(60_000);
  let dynamodb: DynamoDBClient;
  let db: DynamoDBDocumentClient;
  const model = new FakeModel();
  const gateways: Array<{ gateway: Gateway; port: number; logger: RecordingLogger }> = [];

  const post = (i: number, key: string) =>
    fetch(`http://127.0.0.1:${gateways[i]!.port}/windows`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ window: key }),
    }).then(async (r) => ({ status: r.status, body: await r.text(), replayed: r.headers.get("idempotency-replayed") }));

  beforeEach(async () => {
    await resetMoto();
    dynamodb = new DynamoDBClient({});
    db = DynamoDBDocumentClient.from(dynamodb);
    await dynamodb.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [{ AttributeName: "window_key", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "window_key", AttributeType: "S" }],
      }),
    );
    await dynamodb.send(new UpdateTimeToLiveCommand({ TableName: TABLE, TimeToLiveSpecification: { AttributeName: "expires_at", Enabled: true } }));
    model.requests.length = 0;
    model.reply = (r) => ({ status: 200, body: JSON.stringify({ served: r.key }) });
    await model.start();
    for (const instanceId of ["i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"]) {
      const logger = new RecordingLogger();
      const gateway = createGateway({
        config: testGatewayConfig(model.url, { keysTable: TABLE, modelConcurrency: 4, drainPollMs: 60_000 }),
        db,
        autoScaling: new AutoScalingClient({}),
        metadata: new FakeMetadata(),
        instanceId,
        fetch,
        logger,
        metrics: new RecordingMetrics(),
      });
      gateways.push({ gateway, port: await gateway.start({ port: 0, host: "127.0.0.1" }), logger });
    }
  });

  afterEach(async () => {
    for (const g of gateways.splice(0)) await g.gateway.stop();
    await model.stop();
  });

  it("the same key POSTed to both at once reaches the model once; the other answer is 409 or the repeat", async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `window-${i}`);
    const answers = await Promise.all(keys.map((k) => Promise.all([post(0, k), post(1, k)])));
    for (const [i, pair] of answers.entries()) {
      const statuses = pair.map((a) => a.status).sort();
      expect(statuses, keys[i]).to.satisfy((s: number[]) => (s[0] === 200 && s[1] === 200) || (s[0] === 200 && s[1] === 409));
      if (statuses[1] === 200)
        expect(
          pair.filter((a) => a.replayed === "true"),
          keys[i],
        ).to.have.length(1);
    }
    const perKey = new Map<string, number>();
    for (const r of model.requests) perKey.set(r.key ?? "", (perKey.get(r.key ?? "") ?? 0) + 1);
    expect([...perKey.entries()].sort()).to.deep.equal(keys.map((k) => [k, 1]).sort());
    // Every key is done in the table, by whichever instance won it, with the model's answer.
    for (const k of keys) {
      const { Item } = await db.send(new GetCommand({ TableName: TABLE, Key: { window_key: k } }));
      expect(Item).to.deep.include({ state: "done", response: JSON.stringify({ served: k }), response_status: 200 });
      expect(Item?.holder).to.be.oneOf(["i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"]);
      expect(Item?.expires_at).to.be.a("number");
    }
  });

  it("a key held at the model by one instance is 409 at the other, then the repeat answer once done", async () => {
    model.gate();
    const first = post(0, "held");
    const t0 = Date.now();
    while (model.requests.length === 0) {
      if (Date.now() - t0 > 10_000) throw new Error("the window never reached the model");
      await new Promise((r) => setTimeout(r, 10));
    }
    const second = await post(1, "held");
    expect(second.status).to.equal(409);
    model.open();
    expect((await first).status).to.equal(200);
    const third = await post(1, "held");
    expect(third).to.deep.equal({ status: 200, body: JSON.stringify({ served: "held" }), replayed: "true" });
    expect(model.requests).to.have.length(1);
    expect(gateways[1]!.logger.steps()).to.include.members(["window_conflict", "window_repeat"]);
  });

  it("a key whose model failed is released and processed again by the other instance", async () => {
    model.reply = () => ({ status: 500, body: "model crashed" });
    expect((await post(0, "retry-me")).status).to.equal(502);
    const { Item } = await db.send(new GetCommand({ TableName: TABLE, Key: { window_key: "retry-me" } }));
    expect(Item).to.equal(undefined);
    model.reply = (r) => ({ status: 200, body: JSON.stringify({ served: r.key }) });
    expect((await post(1, "retry-me")).status).to.equal(200);
    expect(model.requests.map((r) => r.key)).to.deep.equal(["retry-me", "retry-me"]);
    const after = await db.send(new GetCommand({ TableName: TABLE, Key: { window_key: "retry-me" } }));
    expect(after.Item).to.deep.include({ state: "done", holder: "i-0bbbbbbbbbbbbbbb2" });
  });
});
