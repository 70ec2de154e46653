import { expect } from "chai";
import { DLQ_RETENTION_SECONDS, resolveManagedQueueArgs } from "../../../infra/components/managed-queue";
import { queueConsumerDefaults, resolveQueueConsumerSizing } from "../../../infra/components/queue-consumer";
import { gpuInstanceDefaults, resolveGpuInstanceArgs } from "../../../infra/components/gpu-instance";

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
    ];
    for (const [name, args, reason] of bad) {
      it(`rejects ${name}`, () => expect(() => resolveManagedQueueArgs(args)).to.throw(reason));
    }
  });

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

  describe("resolveGpuInstanceArgs", () => {
    it("defaults the Name tag and the id parameter to the seed's", () => {
      const r = resolveGpuInstanceArgs({ instanceType: "g5.xlarge" });
      expect(r.nameTag).to.equal("encache-gpu-worker");
      expect(r.instanceIdParameter).to.equal("/encache/gpu/instance_id");
      expect(r.amiParameter).to.equal(gpuInstanceDefaults.amiParameter);
    });
    for (const t of ["g5.xlarge", "p4d.24xlarge", "g6e.2xlarge", "inf2.xlarge", "g4dn.metal"]) {
      it(`accepts ${t}`, () => expect(resolveGpuInstanceArgs({ instanceType: t }).instanceType).to.equal(t));
    }
    const bad: Array<[string, RegExp]> = [
      ["g5", /not an EC2 instance type/],
      ["G5.XLARGE", /not an EC2 instance type/],
      ["m5.large", /no GPU/],
      ["t3.micro", /no GPU/],
    ];
    for (const [t, reason] of bad) {
      it(`rejects ${t}`, () => expect(() => resolveGpuInstanceArgs({ instanceType: t })).to.throw(reason));
    }
  });
});
