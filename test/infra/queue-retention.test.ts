import { expect } from "chai";
import { parseStackConfig, queueBudgets } from "../../infra/config";
import { configError, devConfig, stackConfig, withValue } from "./helpers/stack-config";

describe("queue retention covers every receive (infra/config.ts queueRetentionProblems)", () => {
  it("both committed stacks keep every queue's messages through all their receives", () => {
    for (const raw of [devConfig(), stackConfig("prod")]) {
      const cfg = parseStackConfig(raw);
      for (const q of queueBudgets(cfg)) {
        expect(q.retentionSeconds, q.queue).to.be.at.least(q.visibilitySeconds * cfg.queues.maxReceiveCount);
      }
    }
  });

  it("rejects prod's refill queue without its retention: four 2-minute periods are less than 3 × 540 s", () => {
    // Prepare: the committed prod config as it was before pool.refill.messageRetentionSeconds.
    const raw = withValue(stackConfig("prod"), "pool.refill.messageRetentionSeconds", undefined);

    // Act
    const message = configError(raw).message;

    // Assess
    expect(message).to.include("encache:pool.refill.queueVisibilityTimeoutSeconds:");
    expect(message).to.match(/pool-refill queue keeps a message 480 s \(4 × pool\.refill\.everyMinutes/);
    expect(message).to.include("3 × 540 s (pool.refill.queueVisibilityTimeoutSeconds) = 1620 s");
  });

  const cases: Array<{ title: string; edits: Array<[string, unknown]>; key: string; numbers: string }> = [
    { title: "the ingest queue", edits: [["ingest.messageRetentionSeconds", 500]], key: "encache:ingest.messageRetentionSeconds", numbers: "3 × 180 s" },
    {
      title: "the retraining queue",
      edits: [["retraining.messageRetentionSeconds", 1000]],
      key: "encache:retraining.messageRetentionSeconds",
      numbers: "3 × 600 s",
    },
    {
      title: "the worker queue (visibility derived from the heartbeat)",
      edits: [["worker.messageRetentionSeconds", 60]],
      key: "encache:worker.messageRetentionSeconds",
      numbers: "(worker.heartbeatSeconds and worker.maxVisibilitySeconds)",
    },
    {
      title: "a pool queue (adverts)",
      edits: [
        ["pool.advertRetentionSeconds", 60],
        ["pool.refill.everyMinutes", 1],
      ],
      key: "encache:pool.advertRetentionSeconds",
      numbers: "3 × 30 s",
    },
    {
      title: "the refill queue with an explicit retention",
      edits: [["pool.refill.messageRetentionSeconds", 600]],
      key: "encache:pool.refill.messageRetentionSeconds",
      numbers: "3 × 360 s",
    },
    {
      title: "a fleet queue (its retention is the ManagedQueue default, 4 days)",
      edits: [
        ["queues.maxReceiveCount", 10],
        ["fleet.termination.queueVisibilityTimeoutSeconds", 43_200],
      ],
      key: "encache:fleet.termination.queueVisibilityTimeoutSeconds",
      numbers: "10 × 43200 s",
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.title}, naming ${c.key}`, () => {
      // Prepare
      let raw = devConfig();
      for (const [key, value] of c.edits) raw = withValue(raw, key, value);

      // Act
      const message = configError(raw).message;

      // Assess
      expect(message).to.include(`${c.key}:`);
      expect(message).to.include(c.numbers);
      expect(message).to.include("would expire before it reaches its DLQ");
    });
  }
});
