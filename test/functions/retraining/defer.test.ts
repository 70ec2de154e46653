import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { expect } from "chai";
import {
  carriedAttributes,
  chunkEntries,
  deadLetterStamped,
  DEFERRALS_ATTRIBUTE,
  entryBytes,
  lineageOf,
  MAX_BATCH_BYTES,
  ORIGIN_ATTRIBUTE,
  resendDeferred,
} from "../../../functions/retraining/defer";
import { mockedLauncherDeps, QUARANTINE_URL, RETRAINING_URL } from "../helpers/retraining-deps";
import { sqsRecord } from "../helpers/sqs-events";

describe("retraining/launcher units", () => {
  describe("deferral lineage and batches", () => {
    const attr = (stringValue: string, dataType = "String") => ({ dataType, stringValue, stringListValues: [], binaryListValues: [] });
    const cases: Array<[string, Record<string, ReturnType<typeof attr>>, { origin: "own" | string; deferrals: number }]> = [
      ["a first delivery is its own origin", {}, { origin: "own", deferrals: 0 }],
      [
        "a copy keeps its origin and count",
        { [ORIGIN_ATTRIBUTE]: attr("0b6f-uuid"), [DEFERRALS_ATTRIBUTE]: attr("4", "Number") },
        { origin: "0b6f-uuid", deferrals: 4 },
      ],
      ["an origin with characters no message id has is ignored", { [ORIGIN_ATTRIBUTE]: attr("a b") }, { origin: "own", deferrals: 0 }],
      ["a count that is no whole number reads as 0", { [DEFERRALS_ATTRIBUTE]: attr("-2", "Number") }, { origin: "own", deferrals: 0 }],
    ];
    for (const [label, messageAttributes, want] of cases) {
      it(`lineage: ${label}`, () => {
        const record = sqsRecord("{}", { messageAttributes });
        expect(lineageOf(record)).to.deep.equal({ originMessageId: want.origin === "own" ? record.messageId : want.origin, deferrals: want.deferrals });
      });
    }

    it("carries attributes in the SQS API's spelling (binary decoded from base64), dropping the old lineage", () => {
      expect(
        carriedAttributes({
          a: attr("x", "String.custom"),
          b: { dataType: "Binary", binaryValue: "AQID", stringListValues: [], binaryListValues: [] },
          [ORIGIN_ATTRIBUTE]: attr("o"),
          [DEFERRALS_ATTRIBUTE]: attr("1", "Number"),
        }),
      ).to.deep.equal({ a: { DataType: "String.custom", StringValue: "x" }, b: { DataType: "Binary", BinaryValue: Buffer.from([1, 2, 3]) } });
    });

    it("counts a copy's size as SQS does: body plus attribute names, types and values", () => {
      expect(
        entryBytes({
          MessageBody: "é",
          MessageAttributes: { n: { DataType: "Number", StringValue: "12" }, b: { DataType: "Binary", BinaryValue: new Uint8Array(3) } },
        }),
      ).to.equal(2 + (1 + 6 + 2) + (1 + 6 + 3));
    });

    it("chunks by 10 entries and by the 256 KiB payload budget; an oversized entry goes alone", () => {
      const ten = (n: number) => Array.from({ length: n }, () => 1);
      expect(chunkEntries(ten(21), (x) => x).map((c) => c.length)).to.deep.equal([10, 10, 1]);
      const half = MAX_BATCH_BYTES / 2;
      expect(chunkEntries([half, half, 1, MAX_BATCH_BYTES + 1, 1], (x) => x)).to.deep.equal([[half, half], [1], [MAX_BATCH_BYTES + 1], [1]]);
      expect(chunkEntries([], (x: number) => x)).to.deep.equal([]);
    });

    it("an oversized first entry goes alone, with no empty call before it", () => {
      expect(chunkEntries([MAX_BATCH_BYTES + 1, 1], (x) => x)).to.deep.equal([[MAX_BATCH_BYTES + 1], [1]]);
    });

    it("counts an entry without a body, an attribute without a type and one without a value", () => {
      // The SDK's types let each of these be undefined.
      expect(
        entryBytes({ MessageBody: undefined, MessageAttributes: { k: { DataType: "String" }, ab: { DataType: undefined, StringValue: "xyz" } } }),
      ).to.equal(1 + 6 + 0 + (2 + 0 + 3));
    });
  });

  describe("resendDeferred: delayed copies through SendMessageBatch", () => {
    const requests = (records: SQSRecord[]) => records.map((record) => ({ record, lineage: { originMessageId: record.messageId, deferrals: 0 } }));
    const accepted = (input: SendMessageBatchCommandInput) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: "x", MD5OfMessageBody: "" })),
      Failed: [],
    });

    it("past the 256 KiB payload budget the copies are split over SendMessageBatch calls", async () => {
      const t = mockedLauncherDeps();
      t.sqsMock.on(SendMessageBatchCommand).callsFake(accepted);
      // 100 KiB bodies: two fit one call (200 KiB and their attributes), a third would pass 256 KiB.
      const records = Array.from({ length: 3 }, () => sqsRecord("x".repeat(100 * 1024)));

      const outcome = await resendDeferred(t.deps.sqs, RETRAINING_URL, requests(records), 60);

      const calls = t.sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
      expect(calls.map((c) => c.Entries?.map((e) => e.MessageBody?.length))).to.deep.equal([[102_400, 102_400], [102_400]]);
      expect(calls.map((c) => c.QueueUrl)).to.deep.equal([RETRAINING_URL, RETRAINING_URL]);
      expect([...outcome]).to.deep.equal(records.map((r) => [r.messageId, undefined]));
    });

    const answers: Array<[string, (input: SendMessageBatchCommandInput) => unknown, string[]]> = [
      ["no answer at all", () => undefined, ["not acknowledged by SendMessageBatch", "not acknowledged by SendMessageBatch"]],
      [
        "a refusal with its code and message, and one without either",
        (input) => ({
          Successful: [],
          Failed: [
            { Id: input.Entries?.[0]?.Id, Code: "InvalidParameterValue", SenderFault: true, Message: "too many attributes" },
            { Id: input.Entries?.[1]?.Id, SenderFault: false },
          ],
        }),
        ["InvalidParameterValue: too many attributes", "error: refused"],
      ],
    ];
    for (const [label, answer, reasons] of answers) {
      it(`an entry SQS does not accept keeps why (${label})`, async () => {
        const t = mockedLauncherDeps();
        t.sqsMock.on(SendMessageBatchCommand).callsFake(answer);
        const records = [sqsRecord("{}"), sqsRecord("{}")];

        const outcome = await resendDeferred(t.deps.sqs, RETRAINING_URL, requests(records), 60);

        expect([...outcome]).to.deep.equal(records.map((r, i) => [r.messageId, reasons[i]]));
      });
    }

    it("a call that throws fails exactly its own entries, with the error; the next call's entries still go", async () => {
      const t = mockedLauncherDeps();
      t.sqsMock.on(SendMessageBatchCommand).rejectsOnce(new Error("sqs down")).callsFake(accepted);
      const records = Array.from({ length: 11 }, () => sqsRecord("{}"));

      const outcome = await resendDeferred(t.deps.sqs, RETRAINING_URL, requests(records), 60);

      expect([...outcome]).to.deep.equal(records.map((r, i) => [r.messageId, i < 10 ? "Error: sqs down" : undefined]));
    });

    it("dead-letters a record that arrived without message attributes, stamped with its lineage", async () => {
      const t = mockedLauncherDeps();
      t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "q" });
      const record = { ...sqsRecord("{}"), messageAttributes: undefined } as unknown as SQSRecord;

      await deadLetterStamped(t.deps.sqs, QUARANTINE_URL, record, { originMessageId: "origin-1", deferrals: 2 }, "retries_exhausted: boom");

      expect(t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes).to.deep.equal({
        [ORIGIN_ATTRIBUTE]: { DataType: "String", StringValue: "origin-1" },
        [DEFERRALS_ATTRIBUTE]: { DataType: "Number", StringValue: "2" },
        "dead-letter-reason": { DataType: "String", StringValue: "retries_exhausted: boom" },
        "source-message-id": { DataType: "String", StringValue: record.messageId },
      });
    });
  });
});
