/** policy/rules/queue-has-dlq.ts: every queue declares a redrive policy, unless its role tag says it is a DLQ or a quarantine. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { X, platformRecording } from "../helpers/platform";
import { T, add, queue, queueArn, setInput, urnOf } from "../helpers/recording";
import { UNKNOWN_STRING } from "../../../policy/testing/engine";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "queue-has-dlq";
const MODES: Mode[] = ["update", "first-preview"];

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`${mode}: passes the good ingest recording (redriven source, its tagged DLQ, a tagged quarantine)`, async () => {
      // Prepare
      const rs = ingestRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });
  }

  describe("built in one line", () => {
    for (const mode of MODES) {
      // On a first preview the queue's redrivePolicy OUTPUT is unknown (Optional+Computed, left unset):
      // the rule must decide from the input, which says plainly that there is none.
      it(`${mode}: fails a lone queue without a redrive policy, at mandatory level`, async () => {
        // Prepare
        const rs = [queue("orders", { visibilityTimeoutSeconds: 60 })];
        // Act
        const violations = await evaluate(rs, { mode });
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.queue, "orders"), message: /Queue 'orders' has no redrive policy/ });
      });
    }

    it("passes a queue whose literal redrive policy names a DLQ outside the stack", async () => {
      // Prepare
      const rs = [queue("orders", { redrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn("shared-dlq"), maxReceiveCount: 3 }) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });

    it("passes a redrive policy that is unknown on this preview (built from a DLQ's ARN): it is declared", async () => {
      // Prepare
      const rs = [queue("orders", { redrivePolicy: UNKNOWN_STRING })];
      // Act
      const violations = await evaluate(rs, { mode: "first-preview" });
      // Assess
      expectNoViolationOf(violations, POLICY);
    });

    const noTarget: Array<[string, unknown]> = [
      ["an empty string", ""],
      ["JSON without deadLetterTargetArn", JSON.stringify({ maxReceiveCount: 3 })],
      ["an empty deadLetterTargetArn", JSON.stringify({ deadLetterTargetArn: "", maxReceiveCount: 3 })],
      ["text that is not JSON", "not json"],
    ];
    for (const [title, redrivePolicy] of noTarget) {
      it(`fails a redrive policy that is ${title}`, async () => {
        // Prepare
        const rs = [queue("orders", { redrivePolicy })];
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.queue, "orders") });
      });
    }
  });

  describe("fails", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a queue added without a redrive policy",
        recording: ingestRecording,
        urn: urnOf(T.queue, "ingest-extra"),
        mutate: (rs) => add(rs, queue("ingest-extra", { visibilityTimeoutSeconds: 60 }, { state: {} })),
      },
      {
        title: "a source queue that loses its redrive policy, its DLQ left behind",
        recording: ingestRecording,
        urn: U.ingest,
        mutate: (rs) => setInput(rs, U.ingest, "redrivePolicy", undefined),
      },
      {
        title: "the quarantine queue that loses its tag",
        recording: ingestRecording,
        urn: U.quarantine,
        mutate: (rs) => setInput(rs, U.quarantine, "tags", { "encache:part": "ingest" }),
      },
      {
        title: "an untagged queue with neither redrive nor role",
        recording: platformRecording,
        urn: X.scheduleDlq,
        mutate: (rs) => setInput(rs, X.scheduleDlq, "tags", {}),
      },
    ];
    for (const c of cases) {
      for (const mode of MODES) {
        it(`${mode}: ${c.title}`, async () => {
          // Prepare
          const rs = c.recording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn });
        });
      }
    }
  });
});
