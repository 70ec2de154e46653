import { expect } from "chai";
import { once, processSqsBatch, approximateReceiveCount } from "../../../functions/shared/sqs";
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
});
