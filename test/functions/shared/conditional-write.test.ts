import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import {
  conditionalWrite,
  conditionFailureItem,
  type ConditionFailure,
  isConditionFailure,
  itemOfConditionFailure,
} from "../../../functions/shared/conditional-write";
import { conditionFailed } from "../helpers/dynamodb-errors";

const TABLE = "encache-test";

function documentClient() {
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
  return { db, dbMock: mockClient(db) };
}

/** A plain error carrying `name`, as tests and other runtimes raise it. */
const named = (name: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(`${name} happened`), { name, ...extra });

describe("shared/conditional-write", () => {
  describe("isConditionFailure: only a failed condition counts as one", () => {
    const cases: Array<{ what: string; error: unknown; is: boolean }> = [
      { what: "DynamoDB's ConditionalCheckFailedException", error: conditionFailed(), is: true },
      { what: "a plain Error with that name (tests, other runtimes)", error: named("ConditionalCheckFailedException"), is: true },
      { what: "a cancelled transaction", error: named("TransactionCanceledException"), is: false },
      { what: "throttling", error: named("ProvisionedThroughputExceededException"), is: false },
      { what: "a missing table", error: named("ResourceNotFoundException"), is: false },
      { what: "a non-Error object with that name", error: { name: "ConditionalCheckFailedException" }, is: false },
    ];
    for (const c of cases) {
      it(`${c.is ? "is" : "is not"} ${c.what}`, () => {
        expect(isConditionFailure(c.error)).to.equal(c.is);
      });
    }
  });

  describe("conditionFailureItem: the item a failed condition saw, in wire form", () => {
    const cases: Array<{ what: string; item: unknown; expected: unknown }> = [
      { what: "the item DynamoDB returned", item: { owner: { S: "me" } }, expected: { owner: { S: "me" } } },
      { what: "undefined when no item came back", item: undefined, expected: undefined },
      { what: "undefined, not null, when the error's Item is null", item: null, expected: undefined },
      { what: "undefined when a hand-made error's Item is not an object", item: "owner=me", expected: undefined },
    ];
    for (const c of cases) {
      it(`answers ${c.what}`, () => {
        const error = named("ConditionalCheckFailedException", c.item === undefined ? {} : { Item: c.item }) as ConditionFailure;
        expect(conditionFailureItem(error)).to.deep.equal(c.expected);
      });
    }
  });

  describe("itemOfConditionFailure: the item a failed condition saw, unmarshalled", () => {
    const cases: Array<{ what: string; error: unknown; expected: Record<string, unknown> | undefined }> = [
      {
        what: "the item, unmarshalled from its wire form",
        error: conditionFailed({ owner: { S: "me" }, until: { N: "5" } }),
        expected: { owner: "me", until: 5 },
      },
      { what: "undefined when the failure carries no item", error: conditionFailed(), expected: undefined },
      { what: "undefined when the item is empty", error: Object.assign(conditionFailed(), { Item: {} }), expected: undefined },
      { what: "undefined for a thrown undefined", error: undefined, expected: undefined },
      { what: "undefined for a thrown null", error: null, expected: undefined },
    ];
    for (const c of cases) {
      it(`answers ${c.what}`, () => {
        expect(itemOfConditionFailure(c.error)).to.deep.equal(c.expected);
      });
    }
  });

  describe("conditionalWrite", () => {
    it("asks DynamoDB for the old item on a failed condition, and sends the write otherwise as given", async () => {
      // Prepare
      const { db, dbMock } = documentClient();
      dbMock.on(UpdateCommand).resolves({});
      const update = new UpdateCommand({
        TableName: TABLE,
        Key: { pk: "lease#a" },
        UpdateExpression: "SET #owner = :me",
        ConditionExpression: "attribute_not_exists(#owner) OR #owner = :me",
        ExpressionAttributeNames: { "#owner": "owner" },
        ExpressionAttributeValues: { ":me": "me" },
      });
      // Act
      await conditionalWrite(db, update);
      // Assess
      expect(dbMock.commandCalls(UpdateCommand).map((c) => c.args[0].input)).to.deep.equal([
        {
          TableName: TABLE,
          Key: { pk: "lease#a" },
          UpdateExpression: "SET #owner = :me",
          ConditionExpression: "attribute_not_exists(#owner) OR #owner = :me",
          ExpressionAttributeNames: { "#owner": "owner" },
          ExpressionAttributeValues: { ":me": "me" },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        },
      ]);
    });

    it("answers applied, with the attributes the write returned", async () => {
      // Prepare
      const { db, dbMock } = documentClient();
      dbMock.on(PutCommand).resolves({ Attributes: { pk: "lease#a", owner: "before" } });
      // Act
      const outcome = await conditionalWrite(db, new PutCommand({ TableName: TABLE, Item: { pk: "lease#a", owner: "me" }, ReturnValues: "ALL_OLD" }));
      // Assess
      expect(outcome).to.deep.equal({ applied: true, attributes: { pk: "lease#a", owner: "before" } });
    });

    it("answers not applied, with the item the condition failed against, instead of throwing", async () => {
      // Prepare
      const { db, dbMock } = documentClient();
      dbMock.on(DeleteCommand).rejects(conditionFailed({ pk: { S: "lease#a" }, owner: { S: "someone else" } }));
      // Act
      const outcome = await conditionalWrite(db, new DeleteCommand({ TableName: TABLE, Key: { pk: "lease#a" }, ConditionExpression: "#owner = :me" }));
      // Assess
      expect(outcome).to.deep.equal({ applied: false, old: { pk: "lease#a", owner: "someone else" } });
    });

    it("answers not applied with no old item when the condition failed against no item", async () => {
      // Prepare
      const { db, dbMock } = documentClient();
      dbMock.on(DeleteCommand).rejects(conditionFailed());
      // Act
      const outcome = await conditionalWrite(db, new DeleteCommand({ TableName: TABLE, Key: { pk: "lease#a" }, ConditionExpression: "attribute_exists(pk)" }));
      // Assess
      expect(outcome).to.deep.equal({ applied: false, old: undefined });
    });

    const others = ["TransactionConflictException", "ProvisionedThroughputExceededException", "ResourceNotFoundException", "ValidationException"];
    for (const name of others) {
      it(`treats only a failed condition as an answer: ${name} propagates`, async () => {
        // Prepare
        const { db, dbMock } = documentClient();
        const error = named(name, { Item: { owner: { S: "me" } } });
        dbMock.on(UpdateCommand).rejects(error);
        // Act
        const thrown = await conditionalWrite(
          db,
          new UpdateCommand({ TableName: TABLE, Key: { pk: "lease#a" }, UpdateExpression: "SET n = :n", ExpressionAttributeValues: { ":n": 1 } }),
        ).then(
          () => undefined,
          (e: unknown) => e,
        );
        // Assess
        expect(thrown).to.equal(error);
      });
    }
  });
});
