import { expect } from "chai";
import { gpuConfigSchema, ingestConfigProblems, ingestConfigSchema } from "../../../infra/parts/ingest.config";
import { devConfig, scopedStackConfig } from "../helpers/stack-config";

type IngestInput = Parameters<typeof ingestConfigProblems>[0];

/** A consistent part-1 config: 6 × 30 s ≤ 180 s on both queues. */
function ingest(overrides: Partial<IngestInput> = {}): IngestInput {
  const consumer = { timeoutSeconds: 30, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: 2 };
  return {
    queueVisibilityTimeoutSeconds: 180,
    dlqVisibilityTimeoutSeconds: 180,
    messageRetentionSeconds: 345_600,
    window: consumer,
    dlqConsumer: { ...consumer, batchingWindowSeconds: 0 },
    ...overrides,
  };
}

describe("ingest stack config (infra/parts/ingest.config.ts)", () => {
  it("accepts the dev stack's encache:gpu and encache:ingest, with the stack's own GPU names", () => {
    // Act
    const gpu = gpuConfigSchema.parse(scopedStackConfig("dev").gpu);
    const part = ingestConfigSchema.parse(devConfig().ingest);

    // Assess
    expect(gpu).to.include({ nameTag: "encache-gpu-worker-dev", instanceIdParameter: "/encache/dev/gpu/instance_id" });
    expect(part.dlqParkSeconds).to.equal(900);
    expect(part.dlqConsumer.batchSize).to.equal(10);
  });

  it("finds nothing wrong with a consistent config", () => {
    expect(ingestConfigProblems(ingest())).to.deep.equal([]);
  });

  const cases: Array<{ title: string; overrides: Partial<IngestInput>; path: string; message: RegExp }> = [
    {
      title: "an ingest queue visibility below 6 × the window consumer's timeout",
      overrides: { queueVisibilityTimeoutSeconds: 179 },
      path: "queueVisibilityTimeoutSeconds",
      message: /at least 6 × ingest\.window\.timeoutSeconds \+ ingest\.window\.batchingWindowSeconds = 180 \(got 179\)/,
    },
    {
      title: "a DLQ visibility below 6 × the DLQ consumer's timeout",
      overrides: { dlqConsumer: { timeoutSeconds: 31, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: 2 } },
      path: "dlqVisibilityTimeoutSeconds",
      message: /= 186 \(got 180\)/,
    },
    {
      title: "a batch above 10 without a batching window (Lambda's rule)",
      overrides: { window: { timeoutSeconds: 30, memoryMb: 256, batchSize: 11, batchingWindowSeconds: 0, maxConcurrency: 2 } },
      path: "window.batchingWindowSeconds",
      message: /must be > 0 when batchSize is above 10/,
    },
    {
      title: "a retention as long as the DLQ's 14 days",
      overrides: { messageRetentionSeconds: 1_209_600 },
      path: "messageRetentionSeconds",
      message: /must be below 14 days/,
    },
  ];
  for (const c of cases) {
    it(`reports ${c.title} at ${c.path}`, () => {
      // Act
      const problems = ingestConfigProblems(ingest(c.overrides));

      // Assess
      expect(problems).to.have.length(1);
      expect(problems[0]!.path.join(".")).to.equal(c.path);
      expect(problems[0]!.message).to.match(c.message);
    });
  }

  const dlqConsumerCases: Array<{ title: string; dlqConsumer: object; path: string; message: RegExp }> = [
    {
      title: "a DLQ consumer batch above 10 (one ChangeMessageVisibilityBatch parks a batch)",
      dlqConsumer: { timeoutSeconds: 30, batchSize: 11, maxConcurrency: 2 },
      path: "dlqConsumer.batchSize",
      message: /at most 10/,
    },
    {
      title: "a DLQ consumer batching window (it would hold returned messages back)",
      dlqConsumer: { timeoutSeconds: 30, batchSize: 10, batchingWindowSeconds: 5, maxConcurrency: 2 },
      path: "dlqConsumer.batchingWindowSeconds",
      message: /must be 0/,
    },
  ];
  for (const c of dlqConsumerCases) {
    it(`rejects ${c.title}`, () => {
      // Act
      const result = ingestConfigSchema.safeParse({ ...(devConfig().ingest as object), dlqConsumer: c.dlqConsumer });
      // Assess
      expect(result.success).to.equal(false);
      const issue = result.error!.issues.find((i) => i.path.join(".") === c.path);
      expect(issue?.message).to.match(c.message);
    });
  }
});
