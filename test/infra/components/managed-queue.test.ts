import { expect } from "chai";
import { DLQ_RETENTION_SECONDS, resolveManagedQueueArgs } from "../../../infra/components/managed-queue";

describe("component validators and defaults (pure, no mocks)", () => {
  describe("resolveManagedQueueArgs", () => {
    it("defaults maxReceiveCount to 3 and retention to 4 days", () => {
      const r = resolveManagedQueueArgs({});
      expect(r.maxReceiveCount).to.equal(3);
      expect(r.messageRetentionSeconds).to.equal(345_600);
      expect(r.messageRetentionSeconds).to.be.below(DLQ_RETENTION_SECONDS);
    });
    const bad: Array<[string, Parameters<typeof resolveManagedQueueArgs>[0], RegExp]> = [
      ["maxReceiveCount 1", { maxReceiveCount: 1 }, /maxReceiveCount/],
      ["maxReceiveCount 1001", { maxReceiveCount: 1001 }, /maxReceiveCount/],
      ["retention equal to the DLQ's", { messageRetentionSeconds: DLQ_RETENTION_SECONDS }, /below the DLQ/],
      ["visibility over 12 h", { visibilityTimeoutSeconds: 43_201 }, /visibilityTimeoutSeconds/],
      ["retention under 60 s", { messageRetentionSeconds: 59 }, /messageRetentionSeconds/],
      [
        "retention shorter than maxReceiveCount × visibility (a failing message would expire before its DLQ)",
        { messageRetentionSeconds: 1799, visibilityTimeoutSeconds: 600, maxReceiveCount: 3 },
        /must cover every receive: ≥ maxReceiveCount × visibilityTimeoutSeconds = 1800 \(got 1799\)/,
      ],
    ];
    it("accepts a retention exactly as long as every receive", () => {
      expect(resolveManagedQueueArgs({ messageRetentionSeconds: 1800, visibilityTimeoutSeconds: 600, maxReceiveCount: 3 }).messageRetentionSeconds).to.equal(
        1800,
      );
    });
    for (const [name, args, reason] of bad) {
      it(`rejects ${name}`, () => expect(() => resolveManagedQueueArgs(args)).to.throw(reason));
    }
  });
});
