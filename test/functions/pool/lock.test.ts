import { type AttributeValue, DeleteItemCommand, DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { acquireLock, type AcquireResult, releaseLock } from "../../../functions/pool/lock";
import { conditionFailed } from "../helpers/dynamodb-errors";
import { TABLE } from "../helpers/pool-fakes";

const NOW = 1_767_225_600;
const KEY = "i-00000000000000abc";

function arrange() {
  const dynamodb = new DynamoDBClient({ region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" } });
  return { dynamodb, mock: mockClient(dynamodb) };
}

const lockItem = (owner: string, expiresAt: number): Record<string, AttributeValue> => ({
  instance_id: { S: KEY },
  owner: { S: owner },
  expires_at: { N: String(expiresAt) },
});

describe("pool lock (conditional writes in the claim table)", () => {
  it("asks DynamoDB for the old item whenever a lock write's condition fails", async () => {
    const t = arrange();
    t.mock.on(PutItemCommand).resolves({});
    t.mock.on(DeleteItemCommand).resolves({});

    await acquireLock(t, TABLE, KEY, "wf-1", NOW, NOW + 600);
    await releaseLock(t, TABLE, KEY, "wf-1");

    expect(t.mock.commandCalls(PutItemCommand)[0]?.args[0].input.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
    expect(t.mock.commandCalls(DeleteItemCommand)[0]?.args[0].input.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
  });

  it("acquireLock writes the key, owner, expiry and extra attributes, conditioned on no unexpired lock", async () => {
    const t = arrange();
    t.mock.on(PutItemCommand).resolves({});

    const result = await acquireLock(t, TABLE, KEY, "wf-1", NOW, NOW + 600, { resource_class: "gpu-small" });

    expect(result).to.deep.equal({ acquired: true, expiresAt: NOW + 600, recovered: false });
    expect(t.mock.commandCalls(PutItemCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        TableName: TABLE,
        Item: { instance_id: { S: KEY }, owner: { S: "wf-1" }, expires_at: { N: String(NOW + 600) }, resource_class: { S: "gpu-small" } },
        ConditionExpression: "attribute_not_exists(#k) OR #e < :now",
        ExpressionAttributeNames: { "#k": "instance_id", "#e": "expires_at" },
        ExpressionAttributeValues: { ":now": { N: String(NOW) } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    ]);
  });

  it("releaseLock deletes the key only if the caller still owns it", async () => {
    const t = arrange();
    t.mock.on(DeleteItemCommand).resolves({});

    expect(await releaseLock(t, TABLE, KEY, "wf-1")).to.equal(true);

    expect(t.mock.commandCalls(DeleteItemCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        TableName: TABLE,
        Key: { instance_id: { S: KEY } },
        ConditionExpression: "#o = :owner",
        ExpressionAttributeNames: { "#o": "owner" },
        ExpressionAttributeValues: { ":owner": { S: "wf-1" } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    ]);
  });

  it("releaseLock still propagates errors other than a failed condition", async () => {
    const t = arrange();
    t.mock.on(DeleteItemCommand).rejects(Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" }));

    let error: unknown;
    try {
      await releaseLock(t, TABLE, KEY, "wf-1");
    } catch (e) {
      error = e;
    }

    expect((error as Error).name).to.equal("ProvisionedThroughputExceededException");
  });

  describe("acquireLock resolves a failed condition by the owner in the old item", () => {
    const cases: Array<{ title: string; old: Record<string, AttributeValue> | undefined; expected: AcquireResult }> = [
      {
        title: "the caller's own item (the first attempt applied, its response was lost): acquired, recovered, with the stored expiry",
        old: lockItem("wf-1", NOW + 600),
        expected: { acquired: true, expiresAt: NOW + 600, recovered: true },
      },
      {
        title: "an earlier lock of the same owner: acquired, recovered, until that lock's expiry",
        old: lockItem("wf-1", NOW + 30),
        expected: { acquired: true, expiresAt: NOW + 30, recovered: true },
      },
      {
        title: "another owner's item: a lost race, naming the holder",
        old: lockItem("wf-2", NOW + 600),
        expected: { acquired: false, holder: "wf-2", expiresAt: NOW + 600 },
      },
      {
        title: "an old item without owner or expiry (not written by this code): a lost race with no holder",
        old: { instance_id: { S: KEY } },
        expected: { acquired: false, holder: undefined, expiresAt: undefined },
      },
      {
        title: "no old item (a store that ignores ALL_OLD): nothing proves it ours, so a lost race",
        old: undefined,
        expected: { acquired: false, holder: undefined, expiresAt: undefined },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        const t = arrange();
        t.mock.on(PutItemCommand).rejects(conditionFailed(c.old));

        const result = await acquireLock(t, TABLE, KEY, "wf-1", NOW, NOW + 600);

        expect(result).to.deep.equal(c.expected);
      });
    }
  });

  it("acquireLock still propagates errors other than a failed condition", async () => {
    const t = arrange();
    t.mock.on(PutItemCommand).rejects(Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" }));

    let error: unknown;
    try {
      await acquireLock(t, TABLE, KEY, "wf-1", NOW, NOW + 600);
    } catch (e) {
      error = e;
    }

    expect((error as Error).name).to.equal("ProvisionedThroughputExceededException");
  });

  describe("releaseLock resolves a failed condition by what is left", () => {
    const cases: Array<{ title: string; old: Record<string, AttributeValue> | undefined; released: boolean }> = [
      { title: "nothing left (the first attempt deleted it, its response was lost): released", old: undefined, released: true },
      { title: "another owner's lock: not released, and left alone", old: lockItem("wf-2", NOW + 600), released: false },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        const t = arrange();
        t.mock.on(DeleteItemCommand).rejects(conditionFailed(c.old));

        const released = await releaseLock(t, TABLE, KEY, "wf-1");

        expect(released).to.equal(c.released);
        expect(t.mock.commandCalls(DeleteItemCommand)).to.have.length(1);
      });
    }
  });
});
