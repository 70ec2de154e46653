/**
 * A GOOD recording for the rules several parts share (tables, schedules, terminal DLQ sinks): the
 * ingest recording plus a state table, a scheduler DLQ with its depth alarm, and a nightly
 * schedule that targets the ingest queue and dead-letters into that DLQ.
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "./ingest";
import { ALERT_TOPIC_ARN, T, add, editInput, find, fn, resource, setInput, urnOf } from "./recording";

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
  /** Instance mode's GPU group: the service port from the consumers' group (infra/parts/ingest.ts createSecurityGroups). */
  gpuSg: urnOf("aws:ec2/securityGroup:SecurityGroup", "ingest-gpu-sg"),
  idleFn: urnOf(T.fn, "ingest-gpu-idle"),
} as const;

/** The GPU service's port, and the env the ingest functions name it with (functions/ingest/env.ts). */
export const GPU_PORT = 8080;
const SUBNETS = ["subnet-0a11", "subnet-0b22"];
/** A function in the consumers' group, in the VPC's private subnets, as QueueConsumer's `vpc` sets it. */
export const CONSUMER_VPC = { securityGroupIds: ["sg-0consumers"], subnetIds: SUBNETS };

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
      { deps: { vpcId: [X.vpc] }, state: { id: "sg-0consumers" } },
    ),
  ];
}

/**
 * The GPU paths of instance mode: the window and DLQ consumers POST to the instance, the idle
 * check GETs its status, all three from the consumers' group, which the GPU's group admits.
 */
function gpuPaths(rs: RecordedResource[]): void {
  add(
    rs,
    resource(
      "aws:ec2/securityGroup:SecurityGroup",
      "ingest-gpu-sg",
      {
        vpcId: "vpc-0123",
        ingress: [{ protocol: "tcp", fromPort: GPU_PORT, toPort: GPU_PORT, securityGroups: ["sg-0consumers"], description: "GPU ingest service" }],
        egress: [{ protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], description: "the SSM agent (Session Manager)" }],
      },
      { deps: { vpcId: [X.vpc], ingress: [X.consumersSg] }, state: { id: "sg-0gpu" } },
    ),
  );
  setInput(rs, U.gpu, "vpcSecurityGroupIds", ["sg-0gpu"]);
  find(rs, U.gpu).propertyDependencies.vpcSecurityGroupIds = [X.gpuSg];
  const gpuEnv = {
    GPU_SERVICE_PORT: String(GPU_PORT),
    GPU_SERVICE_PATH: "/ingest/window",
    GPU_INSTANCE_ID_PARAM: "/encache/dev/gpu/instance_id",
    GPU_NAME_TAG: "encache-gpu",
  };
  for (const urn of [U.windowFn, U.dlqFn]) {
    editInput<{ variables: Record<string, string> }>(rs, urn, "environment", (e) => {
      delete e.variables.GPU_SERVICE_URL;
      Object.assign(e.variables, gpuEnv);
    });
    setInput(rs, urn, "vpcConfig", CONSUMER_VPC);
    find(rs, urn).propertyDependencies.vpcConfig = [X.vpc, X.consumersSg];
  }
  add(
    rs,
    fn(
      "ingest-gpu-idle",
      {
        runtime: "nodejs22.x",
        handler: "index.handler",
        timeout: 60,
        environment: {
          variables: { GPU_SERVICE_PORT: String(GPU_PORT), GPU_STATUS_PATH: "/status", GPU_INSTANCE_ID_PARAM: "/encache/dev/gpu/instance_id" },
        },
        vpcConfig: CONSUMER_VPC,
      },
      { deps: { vpcConfig: [X.vpc, X.consumersSg] } },
    ),
  );
}

export function platformRecording(): RecordedResource[] {
  const rs = ingestRecording();
  add(rs, ...network());
  gpuPaths(rs);
  add(
    rs,
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
