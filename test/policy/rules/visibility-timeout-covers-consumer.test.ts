/** policy/rules/visibility-timeout-covers-consumer.ts: visibility ≥ 6 × function timeout + batching window. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { T, fn, mapping, queue, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "visibility-timeout-covers-consumer";

/** A queue read by a 30 s function through a mapping with a 5 s batching window: 185 s needed. */
const consumed = (visibility: number) => [
  queue("jobs", {
    visibilityTimeoutSeconds: visibility,
    redrivePolicy: JSON.stringify({ deadLetterTargetArn: "arn:aws:sqs:eu-west-1:123456789012:jobs-dlq", maxReceiveCount: 3 }),
  }),
  fn("jobs-consumer", { timeout: 30 }),
  mapping(
    "jobs",
    { maximumBatchingWindowInSeconds: 5, functionResponseTypes: ["ReportBatchItemFailures"] },
    { deps: { eventSourceArn: [urnOf(T.queue, "jobs")], functionName: [urnOf(T.fn, "jobs-consumer")] } },
  ),
];

describe(POLICY, () => {
  it("passes the good ingest recording (360 s over a 30 s consumer, 400 s over a 60 s + 5 s one)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a visibility of exactly 6 × 30 s + 5 s", async () => {
      // Prepare
      const rs = consumed(185);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });

    it("fails a visibility one second short", async () => {
      // Prepare
      const rs = consumed(184);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.queue, "jobs"),
        message: /184s is below 185s \(6 × 'jobs-consumer' timeout 30s \+ batching window 5s/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message?: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "visibility 100 with function timeout 30",
        urn: U.ingest,
        message: /100s is below 180s/,
        mutate: (rs) => setInput(rs, U.ingest, "visibilityTimeoutSeconds", 100),
      },
      {
        title: "the DLQ consumer's batching window pushing past the DLQ's visibility",
        urn: U.dlq,
        message: /400s is below 425s/,
        mutate: (rs) => setInput(rs, U.dlqFn, "timeout", 70),
      },
      { title: "visibility left at the 30 s default", urn: U.ingest, mutate: (rs) => setInput(rs, U.ingest, "visibilityTimeoutSeconds", undefined) },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });
});
