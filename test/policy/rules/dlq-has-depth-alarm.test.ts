/** policy/rules/dlq-has-depth-alarm.ts (advisory): every DLQ and terminal queue has a depth alarm derived from it. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { X, platformRecording } from "../helpers/platform";
import { T, alarm, queue, remove, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "dlq-has-depth-alarm";

const parked = urnOf(T.queue, "parked");
const quarantine = () => queue("parked", { tags: { "encache:queue-role": "quarantine" } });

describe(POLICY, () => {
  it("passes the good ingest recording (DLQ and quarantine both alarmed)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a quarantine queue with a depth alarm whose dimensions come from it", async () => {
      // Prepare
      const rs = [
        quarantine(),
        alarm("parked-depth", { metricName: "ApproximateNumberOfMessagesVisible", dimensions: { QueueName: "parked" } }, { deps: { dimensions: [parked] } }),
      ];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails an alarm that names the queue literally instead of deriving from it", async () => {
      // Prepare
      const rs = [quarantine(), alarm("parked-depth", { metricName: "ApproximateNumberOfMessagesVisible", dimensions: { QueueName: "parked" } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "advisory",
        urn: parked,
        message: /Terminal queue 'parked' has no MetricAlarm on ApproximateNumberOfMessagesVisible/,
      });
    });
  });

  describe("fails (advisory)", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urn: string; message?: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      { title: "the ingest DLQ's depth alarm removed", recording: ingestRecording, urn: U.dlq, mutate: (rs) => remove(rs, U.dlqAlarm) },
      {
        title: "a quarantine alarm that watches the wrong metric",
        recording: ingestRecording,
        urn: U.quarantine,
        mutate: (rs) => setInput(rs, U.quarantineAlarm, "metricName", "NumberOfMessagesSent"),
      },
      {
        title: "a scheduler DLQ without a depth alarm",
        recording: platformRecording,
        urn: X.scheduleDlq,
        message: /no MetricAlarm/,
        mutate: (rs) => remove(rs, X.scheduleDlqAlarm),
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
        expectViolation(violations, { policy: POLICY, level: "advisory", urn: c.urn, message: c.message });
      });
    }
  });
});
