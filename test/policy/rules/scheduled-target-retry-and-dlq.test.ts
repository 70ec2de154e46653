/** policy/rules/scheduled-target-retry-and-dlq.ts: schedules and EventBridge targets retry, then park in a DLQ. */
import type { RecordedResource } from "../../../policy/testing/types";
import { FU, fleetRecording } from "../helpers/fleet";
import { X, platformRecording, setTarget } from "../helpers/platform";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, add, editInput, eventTarget, queueArn, resource, schedule, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "scheduled-target-retry-and-dlq";

const retry = { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 };

describe(POLICY, () => {
  it("passes the good platform recording (the nightly schedule retries and dead-letters)", async () => {
    // Prepare
    const rs = platformRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("passes a schedule whose target and DLQ ARNs are still unknown (first preview)", async () => {
    // Prepare
    const rs = platformRecording();
    // Act
    const violations = await evaluate(rs, { mode: "first-preview" });
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes an event target with a retry policy and a DLQ", async () => {
      // Prepare
      const rs = [eventTarget("on-event", { rule: "r", arn: queueArn("jobs"), retryPolicy: retry, deadLetterConfig: { arn: queueArn("jobs-dlq") } })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails a schedule without a target", async () => {
      // Prepare
      const rs = [schedule("tick", { scheduleExpression: "rate(1 hour)" })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.schedule, "tick"), message: /Schedule 'tick' has no target/ });
    });
  });

  describe("fails", () => {
    const cases: {
      title: string;
      recording: () => RecordedResource[];
      urn: string;
      message: RegExp;
      count?: number;
      mutate: (rs: RecordedResource[]) => void;
    }[] = [
      {
        title: "a schedule without a retry policy",
        recording: platformRecording,
        urn: X.schedule,
        message: /no retry policy/,
        mutate: (rs) => setTarget(rs, (t) => delete t.retryPolicy),
      },
      {
        title: "a schedule without a dead-letter queue",
        recording: platformRecording,
        urn: X.schedule,
        message: /no dead-letter queue/,
        mutate: (rs) => setTarget(rs, (t) => delete t.deadLetterConfig),
      },
      {
        title: "an EventBridge rule target without retry or DLQ (once for each)",
        recording: platformRecording,
        urn: X.eventTarget,
        message: /Event target 'on-event' has no retry policy/,
        count: 2,
        mutate: (rs) => add(rs, resource(T.eventTarget, "on-event", { rule: "r", arn: "arn:aws:sqs:eu-west-1:123456789012:ingest" })),
      },
      {
        title: "a fleet housekeeping schedule without a dead-letter queue",
        recording: fleetRecording,
        urn: FU.schedule,
        message: /no dead-letter queue/,
        mutate: (rs) => editInput(rs, FU.schedule, "target", (t) => delete t.deadLetterConfig),
      },
      {
        title: "a retraining ECS schedule without a DLQ",
        recording: retrainingRecording,
        urn: R.ecsSchedule,
        message: /no dead-letter queue/,
        mutate: (rs) => editInput(rs, R.ecsSchedule, "target", (t) => delete t.deadLetterConfig),
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
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message, count: c.count });
      });
    }
  });
});
