import { expect } from "chai";
import { evaluatePolicies, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { add, find, ingestRecording, remove, setInput, T, U, urnOf } from "./fixtures/ingest";

/**
 * Rules shared by several parts (tables, schedules, terminal DLQ sinks), tried on the ingest
 * fixture extended with a table, a scheduler DLQ and a schedule that uses it.
 */
const X = {
  table: urnOf("aws:dynamodb/table:Table", "state"),
  schedule: urnOf("aws:scheduler/schedule:Schedule", "nightly"),
  scheduleDlq: urnOf(T.queue, "schedules-dlq"),
  scheduleDlqAlarm: urnOf(T.alarm, "schedules-dlq-depth"),
  scheduleRole: urnOf(T.role, "nightly-role"),
  eventTarget: urnOf("aws:cloudwatch/eventTarget:EventTarget", "on-event"),
};

function platformRecording(): RecordedResource[] {
  const rs = ingestRecording();
  add(rs, {
    type: "aws:dynamodb/table:Table",
    name: "state",
    inputs: { hashKey: "model_name", attributes: [{ name: "model_name", type: "S" }], billingMode: "PAY_PER_REQUEST", pointInTimeRecovery: { enabled: true } },
  });
  add(rs, {
    type: T.queue,
    name: "schedules-dlq",
    inputs: { messageRetentionSeconds: 1_209_600, sqsManagedSseEnabled: true, tags: { "encache:queue-role": "dlq" } },
  });
  add(rs, {
    type: T.alarm,
    name: "schedules-dlq-depth",
    inputs: { metricName: "ApproximateNumberOfMessagesVisible", namespace: "AWS/SQS", dimensions: { QueueName: "schedules-dlq" } },
    propertyDependencies: { dimensions: [X.scheduleDlq] },
  });
  add(rs, { type: T.role, name: "nightly-role", inputs: { assumeRolePolicy: { Version: "2012-10-17", Statement: [] } } });
  add(rs, {
    type: "aws:scheduler/schedule:Schedule",
    name: "nightly",
    inputs: {
      scheduleExpression: "rate(1 day)",
      flexibleTimeWindow: { mode: "OFF" },
      target: {
        arn: "arn:aws:sqs:eu-west-1:123456789012:ingest",
        roleArn: "arn:aws:iam::123456789012:role/nightly-role",
        input: '{"trigger":"scheduled"}',
        retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 },
        deadLetterConfig: { arn: "arn:aws:sqs:eu-west-1:123456789012:schedules-dlq" },
      },
    },
    propertyDependencies: { target: [U.ingest, X.scheduleRole, X.scheduleDlq] },
  });
  return rs;
}

async function run(mutate: (rs: RecordedResource[]) => void = () => {}): Promise<Violation[]> {
  const rs = platformRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies);
}

function target(rs: RecordedResource[]): Record<string, unknown> {
  return find(rs, X.schedule).inputs.target as Record<string, unknown>;
}

function setTarget(rs: RecordedResource[], edit: (t: Record<string, unknown>) => void): void {
  const t = structuredClone(target(rs));
  edit(t);
  setInput(rs, X.schedule, "target", t);
}

describe("shared rules: tables, schedules, terminal DLQ sinks", () => {
  it("the extended good fixture has no violations", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("a schedule whose DLQ ARN is still unknown (first preview) passes", async () => {
    expect(await run((rs) => setTarget(rs, (t) => (t.deadLetterConfig = { arn: UNKNOWN.unknownStringValue })))).to.deep.equal([]);
  });

  const cases: Array<{ title: string; rule: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      title: "a table without PITR",
      rule: "dynamodb-table-pitr",
      urn: X.table,
      message: /Table 'state' must enable point-in-time recovery/,
      mutate: (rs) => setInput(rs, X.table, "pointInTimeRecovery", { enabled: false }),
    },
    {
      title: "a table that never mentions PITR",
      rule: "dynamodb-table-pitr",
      urn: X.table,
      message: /point-in-time recovery/,
      mutate: (rs) => setInput(rs, X.table, "pointInTimeRecovery", undefined),
    },
    {
      title: "a schedule without a retry policy",
      rule: "scheduled-target-retry-and-dlq",
      urn: X.schedule,
      message: /no retry policy/,
      mutate: (rs) => setTarget(rs, (t) => delete t.retryPolicy),
    },
    {
      title: "a schedule without a dead-letter queue",
      rule: "scheduled-target-retry-and-dlq",
      urn: X.schedule,
      message: /no dead-letter queue/,
      mutate: (rs) => setTarget(rs, (t) => delete t.deadLetterConfig),
    },
    {
      title: "an EventBridge rule target without retry or DLQ",
      rule: "scheduled-target-retry-and-dlq",
      urn: X.eventTarget,
      message: /Event target 'on-event' has no retry policy/,
      mutate: (rs) => add(rs, { type: "aws:cloudwatch/eventTarget:EventTarget", name: "on-event", inputs: { rule: "r", arn: "arn:aws:sqs:eu-west-1:123456789012:ingest" } }),
    },
    {
      title: "a consumer reading a terminal scheduler DLQ",
      rule: "queue-has-dlq",
      urn: X.scheduleDlq,
      message: /terminal sink but event source mapping/,
      mutate: (rs) =>
        add(rs, {
          type: T.mapping,
          name: "drain-schedules-dlq",
          inputs: { batchSize: 1, functionResponseTypes: ["ReportBatchItemFailures"] },
          propertyDependencies: { eventSourceArn: [X.scheduleDlq], functionName: [U.windowFn] },
        }),
    },
    {
      title: "a scheduler DLQ without a depth alarm",
      rule: "dlq-has-depth-alarm",
      urn: X.scheduleDlq,
      message: /no MetricAlarm/,
      mutate: (rs) => remove(rs, X.scheduleDlqAlarm),
    },
  ];

  for (const c of cases) {
    it(`catches ${c.title}`, async () => {
      const violations = await run(c.mutate);
      const fired = violations.filter((v) => v.policy === c.rule);
      expect(fired.map((v) => v.urn), JSON.stringify(violations)).to.include(c.urn);
      const messages = fired.filter((v) => v.urn === c.urn).map((v) => v.message);
      expect(messages.some((m) => c.message.test(m)), messages.join("\n")).to.equal(true);
    });
  }

  describe("maxReceiveCount on a first preview, when the redrive JSON is unknown", () => {
    const firstPreview = (count: string) => (rs: RecordedResource[]) => {
      setInput(rs, U.ingest, "redrivePolicy", UNKNOWN.unknownStringValue);
      setInput(rs, U.ingest, "tags", { "encache:queue-role": "source", "encache:max-receive-count": count });
    };
    it("reads the literal encache:max-receive-count tag and catches 1", async () => {
      const violations = (await run(firstPreview("1"))).filter((v) => v.policy === "dlq-retention-exceeds-source");
      expect(violations.map((v) => [v.urn, v.enforcementLevel])).to.deep.equal([[U.ingest, "mandatory"]]);
      expect(violations[0]!.message).to.match(/maxReceiveCount 1/);
    });
    it("passes 3", async () => {
      expect((await run(firstPreview("3"))).filter((v) => v.policy === "dlq-retention-exceeds-source")).to.deep.equal([]);
    });
  });

  it("an untagged queue with neither redrive nor role is still caught", async () => {
    const violations = await run((rs) => setInput(rs, X.scheduleDlq, "tags", {}));
    expect(violations.filter((v) => v.policy === "queue-has-dlq").map((v) => v.urn)).to.deep.equal([X.scheduleDlq]);
  });
});
