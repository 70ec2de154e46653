/** policy/rules/queue-has-dlq.ts: every queue redrives to a DLQ, or is a terminal sink nobody reads. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { X, platformRecording } from "../helpers/platform";
import { T, add, mapping, queue, queueArn, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "queue-has-dlq";

describe(POLICY, () => {
  it("passes the good ingest recording (redriven source, its DLQ, a tagged quarantine)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("fails a lone queue without a redrive policy", async () => {
      // Prepare
      const rs = [queue("orders", { visibilityTimeoutSeconds: 60 })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.queue, "orders"), message: /Queue 'orders' has no redrive policy/ });
    });

    it("passes a queue whose literal redrive policy names a DLQ outside the stack", async () => {
      // Prepare
      const rs = [queue("orders", { redrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn("shared-dlq"), maxReceiveCount: 3 }) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });
  });

  describe("fails", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string; message?: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a queue added without a redrive policy",
        recording: ingestRecording,
        urn: urnOf(T.queue, "ingest-extra"),
        mutate: (rs) => add(rs, queue("ingest-extra", { visibilityTimeoutSeconds: 60 }, { state: {} })),
      },
      {
        title: "the quarantine queue that loses its tag",
        recording: ingestRecording,
        urn: U.quarantine,
        mutate: (rs) => setInput(rs, U.quarantine, "tags", { "encache:part": "ingest" }),
      },
      {
        title: "a mapping that reads the quarantine queue",
        recording: ingestRecording,
        urn: U.quarantine,
        message: /terminal sink.*ingest-quarantine-reader/,
        mutate: (rs) => {
          setInput(rs, U.quarantine, "visibilityTimeoutSeconds", 400);
          add(
            rs,
            mapping(
              "ingest-quarantine-reader",
              { eventSourceArn: queueArn("ingest-quarantine"), functionName: "ingest-window", functionResponseTypes: ["ReportBatchItemFailures"] },
              { deps: { eventSourceArn: [U.quarantine], functionName: [U.windowFn] }, state: {} },
            ),
          );
        },
      },
      {
        title: "a consumer reading a terminal scheduler DLQ",
        recording: platformRecording,
        urn: X.scheduleDlq,
        message: /terminal sink but event source mapping/,
        also: [["visibility-timeout-covers-consumer", X.scheduleDlq]],
        mutate: (rs) =>
          add(
            rs,
            mapping(
              "drain-schedules-dlq",
              { batchSize: 1, functionResponseTypes: ["ReportBatchItemFailures"] },
              { deps: { eventSourceArn: [X.scheduleDlq], functionName: [U.windowFn] }, state: {} },
            ),
          ),
      },
      {
        title: "an untagged queue with neither redrive nor role",
        recording: platformRecording,
        urn: X.scheduleDlq,
        mutate: (rs) => setInput(rs, X.scheduleDlq, "tags", {}),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = c.recording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message, also: c.also });
      });
    }
  });
});
