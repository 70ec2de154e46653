import { expect } from "chai";
import { queueConsumerDefaults, resolveQueueConsumerSizing } from "../../../infra/components/queue-consumer";

describe("component validators and defaults (pure, no mocks)", () => {
  describe("resolveQueueConsumerSizing", () => {
    it("fills the documented defaults", () => {
      const s = resolveQueueConsumerSizing({ queueVisibilityTimeoutSeconds: 180 });
      expect(s).to.include(queueConsumerDefaults);
    });
    it("refuses a visibility timeout shorter than 6 × timeout + window", () => {
      expect(() => resolveQueueConsumerSizing({ queueVisibilityTimeoutSeconds: 184, timeoutSeconds: 30, batchingWindowSeconds: 5 })).to.throw(
        /184s is shorter than 6 × timeout \(30s\) \+ batching window \(5s\) = 185s/,
      );
    });
    it("accepts exactly 6 × timeout + window", () => {
      expect(resolveQueueConsumerSizing({ queueVisibilityTimeoutSeconds: 185, timeoutSeconds: 30, batchingWindowSeconds: 5 }).timeoutSeconds).to.equal(30);
    });
    const bad: Array<[string, Partial<Parameters<typeof resolveQueueConsumerSizing>[0]>, RegExp]> = [
      ["batch over 10 without a window", { batchSize: 50 }, /batching/],
      ["maxConcurrency 1", { maxConcurrency: 1 }, /maxConcurrency/],
      ["timeout over 900", { timeoutSeconds: 901 }, /timeoutSeconds/],
      ["window over 300", { batchingWindowSeconds: 301 }, /batchingWindowSeconds/],
      ["memory under 128", { memoryMb: 64 }, /memoryMb/],
    ];
    for (const [name, args, reason] of bad) {
      it(`rejects ${name}`, () => expect(() => resolveQueueConsumerSizing({ queueVisibilityTimeoutSeconds: 43_200, ...args })).to.throw(reason));
    }
  });
});
