import type { Context, SQSRecord, SQSRecordAttributes } from "aws-lambda";
import { expect } from "chai";
import { once, processSqsBatch, approximateReceiveCount, messageAgeSeconds } from "../../../functions/shared/sqs";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";

describe("shared/sqs", () => {
  it("returns every record as a failure, instead of throwing, when the whole batch fails", async () => {
    const records = [sqsRecord(), sqsRecord()];

    const result = await processSqsBatch(sqsEvent(...records), async () => {
      throw new Error("boom");
    });

    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).to.have.members(records.map((r) => r.messageId));
  });

  it("reports only the records whose handler threw", async () => {
    const ok = sqsRecord("ok");
    const bad = sqsRecord("bad");

    const result = await processSqsBatch(sqsEvent(ok, bad), async (record) => {
      if (record.body === "bad") throw new Error("bad record");
    });

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: bad.messageId }]);
  });

  it("once() shares one call between concurrent callers", async () => {
    let calls = 0;
    const shared = once(async () => ++calls);

    const results = await Promise.all([shared(), shared(), shared()]);

    expect(results).to.deep.equal([1, 1, 1]);
    expect(calls).to.equal(1);
  });

  it("reads ApproximateReceiveCount as a number", () => {
    const record = sqsRecord("x", { attributes: { ...sqsRecord().attributes, ApproximateReceiveCount: "7" } });

    expect(approximateReceiveCount(record)).to.equal(7);
  });

  it("hands every record handler the invocation's Lambda context", async () => {
    // Prepare
    const context = { awsRequestId: "req-1", getRemainingTimeInMillis: () => 30_000 } as unknown as Context;
    const seen: Array<Context | undefined> = [];
    // Act
    await processSqsBatch(sqsEvent(sqsRecord(), sqsRecord()), async (_record, ctx) => void seen.push(ctx), context);
    // Assess
    expect(seen).to.have.length(2);
    expect(seen[0]).to.equal(context);
    expect(seen[1]).to.equal(context);
  });

  /**
   * Lambda's type says a record's attributes are always there; test/fuzz drops and garbles them
   * on purpose, and a record must still be handled (hence the casts through unknown).
   */
  const withAttributes = (attributes: Record<string, string> | undefined): SQSRecord => {
    const record: Partial<SQSRecord> = { ...sqsRecord("x") };
    if (attributes === undefined) delete record.attributes;
    else record.attributes = attributes as unknown as SQSRecordAttributes;
    return record as SQSRecord;
  };

  describe("approximateReceiveCount: garbled or missing counts read as 0", () => {
    const cases: Array<[string, Record<string, string> | undefined, number]> = [
      ["a count", { ApproximateReceiveCount: "3" }, 3],
      ["a count that is not a number", { ApproximateReceiveCount: "abc" }, 0],
      ["no count", {}, 0],
      ["no attributes at all", undefined, 0],
    ];
    for (const [what, attributes, expected] of cases) {
      it(`${what} → ${expected}`, () => {
        expect(approximateReceiveCount(withAttributes(attributes))).to.equal(expected);
      });
    }
  });

  describe("messageAgeSeconds: whole seconds since SentTimestamp, never negative", () => {
    const SENT = 1_700_000_000_000;
    const cases: Array<[string, Record<string, string> | undefined, number, number]> = [
      ["2.999 s after sending", { SentTimestamp: String(SENT) }, SENT + 2_999, 2],
      ["exactly a day after sending", { SentTimestamp: String(SENT) }, SENT + 86_400_000, 86_400],
      ["a clock behind the sender's", { SentTimestamp: String(SENT) }, SENT - 5_000, 0],
      ["a timestamp that is not a number", { SentTimestamp: "abc" }, SENT, 0],
      ["no timestamp", {}, SENT, 0],
      ["no attributes at all", undefined, SENT, 0],
    ];
    for (const [what, attributes, now, expected] of cases) {
      it(`${what} → ${expected}`, () => {
        expect(messageAgeSeconds(withAttributes(attributes), now)).to.equal(expected);
      });
    }
  });
});
