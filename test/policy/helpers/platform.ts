/**
 * A GOOD recording for the rules several parts share (tables, schedules, terminal DLQ sinks): the
 * ingest recording plus a state table, a scheduler DLQ with its depth alarm, and a nightly
 * schedule that targets the ingest queue and dead-letters into that DLQ.
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "./ingest";
import { ALERT_TOPIC_ARN, T, add, find, resource, setInput, urnOf } from "./recording";

export const X = {
  table: urnOf(T.table, "state"),
  schedule: urnOf(T.schedule, "nightly"),
  scheduleDlq: urnOf(T.queue, "schedules-dlq"),
  scheduleDlqAlarm: urnOf(T.alarm, "schedules-dlq-depth"),
  scheduleRole: urnOf(T.role, "nightly-role"),
  eventTarget: urnOf(T.eventTarget, "on-event"),
  vpc: urnOf("awsx:ec2:Vpc", "platform-vpc"),
  flowLog: urnOf("aws:ec2/flowLog:FlowLog", "platform-flow-log"),
  defaultSg: urnOf("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup", "platform-default-sg"),
  consumersSg: urnOf("aws:ec2/securityGroup:SecurityGroup", "ingest-consumers-sg"),
} as const;

/** The network as the Network component and the parts declare it: flow logs, a closed default group, HTTPS-only egress. */
function network(): RecordedResource[] {
  return [
    resource("awsx:ec2:Vpc", "platform-vpc", { cidrBlock: "10.40.0.0/16" }, { state: { vpcId: "vpc-0123" } }),
    resource(
      "aws:ec2/flowLog:FlowLog",
      "platform-flow-log",
      { vpcId: "vpc-0123", trafficType: "ALL", logDestinationType: "cloud-watch-logs" },
      { deps: { vpcId: [X.vpc] } },
    ),
    resource(
      "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
      "platform-default-sg",
      { vpcId: "vpc-0123", ingress: [], egress: [] },
      { deps: { vpcId: [X.vpc] } },
    ),
    resource(
      "aws:ec2/securityGroup:SecurityGroup",
      "ingest-consumers-sg",
      {
        vpcId: "vpc-0123",
        egress: [
          { protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], description: "AWS APIs" },
          { protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.40.0.0/16"], description: "the GPU ingest service" },
        ],
      },
      { deps: { vpcId: [X.vpc] } },
    ),
  ];
}

export function platformRecording(): RecordedResource[] {
  const rs = ingestRecording();
  add(
    rs,
    ...network(),
    resource(T.table, "state", {
      hashKey: "model_name",
      attributes: [{ name: "model_name", type: "S" }],
      billingMode: "PAY_PER_REQUEST",
      pointInTimeRecovery: { enabled: true },
      serverSideEncryption: { enabled: true },
    }),
    resource(T.queue, "schedules-dlq", { messageRetentionSeconds: 1_209_600, sqsManagedSseEnabled: true, tags: { "encache:queue-role": "dlq" } }),
    resource(
      T.alarm,
      "schedules-dlq-depth",
      { metricName: "ApproximateNumberOfMessagesVisible", namespace: "AWS/SQS", dimensions: { QueueName: "schedules-dlq" }, alarmActions: [ALERT_TOPIC_ARN] },
      { deps: { dimensions: [X.scheduleDlq] } },
    ),
    resource(T.role, "nightly-role", { assumeRolePolicy: { Version: "2012-10-17", Statement: [] } }),
    resource(
      T.schedule,
      "nightly",
      {
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
      { deps: { target: [U.ingest, X.scheduleRole, X.scheduleDlq] } },
    ),
  );
  return rs;
}

/** Edits the nightly schedule's target (a copy, written back to inputs and outputs). */
export function setTarget(rs: RecordedResource[], edit: (t: Record<string, unknown>) => void): void {
  const t = structuredClone(find(rs, X.schedule).inputs.target) as Record<string, unknown>;
  edit(t);
  setInput(rs, X.schedule, "target", t);
}
