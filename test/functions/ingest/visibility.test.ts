import { ChangeMessageVisibilityBatchCommand, type ChangeMessageVisibilityBatchCommandOutput, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { changeVisibilityInBatches } from "../../../functions/ingest/visibility";
import { sqsRecord } from "../helpers/sqs-events";

const QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq";
const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

function harness(reply: Partial<Omit<ChangeMessageVisibilityBatchCommandOutput, "$metadata">>) {
  const sqs = new SQSClient(clientOptions);
  const sqsMock = mockClient(sqs);
  sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves(reply);
  return { sqs, sqsMock };
}

describe("ingest/visibility", () => {
  it("sends each record's own timeout, ids numbered within the call", async () => {
    const t = harness({ Successful: [{ Id: "0" }, { Id: "1" }], Failed: [] });
    const [a, b] = [sqsRecord(), sqsRecord()];

    const failed = await changeVisibilityInBatches(t.sqs, QUEUE, [
      { record: a, seconds: 20 },
      { record: b, seconds: 900 },
    ]);

    expect(failed.size).to.equal(0);
    expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        QueueUrl: QUEUE,
        Entries: [
          { Id: "0", ReceiptHandle: a.receiptHandle, VisibilityTimeout: 20 },
          { Id: "1", ReceiptHandle: b.receiptHandle, VisibilityTimeout: 900 },
        ],
      },
    ]);
  });

  it("reports nothing failed when the reply lists no Failed entries at all", async () => {
    const t = harness({ Successful: [{ Id: "0" }] });

    expect((await changeVisibilityInBatches(t.sqs, QUEUE, [{ record: sqsRecord(), seconds: 20 }])).size).to.equal(0);
  });

  it("maps a failed entry back to its record, with code and message", async () => {
    const t = harness({ Successful: [{ Id: "0" }], Failed: [{ Id: "1", Code: "ReceiptHandleIsInvalid", SenderFault: true, Message: "expired" }] });
    const [a, b] = [sqsRecord(), sqsRecord()];

    const failed = await changeVisibilityInBatches(t.sqs, QUEUE, [
      { record: a, seconds: 20 },
      { record: b, seconds: 20 },
    ]);

    expect([...failed]).to.deep.equal([[b.messageId, "ReceiptHandleIsInvalid: expired"]]);
  });

  it("still names a failed entry that comes without a code or a message", async () => {
    // The SDK's types allow an entry whose code and message are unset; the record still failed.
    const t = harness({ Failed: [{ Id: "0", SenderFault: false, Code: undefined }] });
    const a = sqsRecord();

    const failed = await changeVisibilityInBatches(t.sqs, QUEUE, [{ record: a, seconds: 20 }]);

    expect([...failed]).to.deep.equal([[a.messageId, "?: "]]);
  });

  it("ignores a failed entry whose id it never sent, and fails none of the records for it", async () => {
    const t = harness({ Successful: [{ Id: "0" }], Failed: [{ Id: "7", Code: "InternalError", SenderFault: false, Message: "?" }] });

    const failed = await changeVisibilityInBatches(t.sqs, QUEUE, [{ record: sqsRecord(), seconds: 20 }]);

    expect(failed.size).to.equal(0);
  });

  it("fails every record of a call that fails whole, and only those", async () => {
    const sqs = new SQSClient(clientOptions);
    const sqsMock = mockClient(sqs);
    sqsMock
      .on(ChangeMessageVisibilityBatchCommand)
      .rejectsOnce(Object.assign(new Error("slow down"), { name: "RequestThrottled" }))
      .resolves({ Successful: [], Failed: [] });
    const records = Array.from({ length: 12 }, () => sqsRecord());

    const failed = await changeVisibilityInBatches(
      sqs,
      QUEUE,
      records.map((record) => ({ record, seconds: 20 })),
    );

    expect([...failed.keys()]).to.deep.equal(records.slice(0, 10).map((r) => r.messageId));
    expect(failed.get(records[0]!.messageId)).to.equal("RequestThrottled: slow down");
    expect(sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => c.args[0].input.Entries?.map((e) => e.Id))).to.deep.equal([
      ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
      ["0", "1"],
    ]);
  });
});
