/**
 * A GOOD recording of the ingest part, shaped like what the offline plan records for the real
 * program: every edge the rules follow is a propertyDependency, never a parsed ARN.
 * `ingestRecording()` returns a fresh deep copy, so each test may mutate it freely.
 */
import type { RecordedResource } from "../../../policy/testing/types";
import {
  ACCOUNT,
  INGEST,
  T,
  alarm,
  arnOf as arn,
  attachment,
  component,
  fn,
  lambdaTrust,
  logGroup,
  managedPolicy,
  mapping,
  queue,
  queueArn,
  queueUrl,
  resource,
  role,
  roleArn,
  rolePolicy,
  instance,
  urnOf,
} from "./recording";

/** URNs of the resources tests mutate or expect in violations. */
export const U = {
  part: INGEST.urn,
  ingest: urnOf(T.queue, "ingest"),
  dlq: urnOf(T.queue, "ingest-dlq"),
  quarantine: urnOf(T.queue, "ingest-quarantine"),
  redriveAllow: urnOf(T.redriveAllow, "ingest-dlq"),
  dlqAlarm: urnOf(T.alarm, "ingest-dlq-depth"),
  quarantineAlarm: urnOf(T.alarm, "ingest-quarantine-depth"),
  windowRole: urnOf(T.role, "ingest-window"),
  windowPolicy: urnOf(T.rolePolicy, "ingest-window"),
  windowFn: urnOf(T.fn, "ingest-window"),
  windowMapping: urnOf(T.mapping, "ingest-window"),
  dlqRole: urnOf(T.role, "ingest-dlq-consumer"),
  dlqPolicy: urnOf(T.rolePolicy, "ingest-dlq-consumer"),
  dlqFn: urnOf(T.fn, "ingest-dlq-consumer"),
  dlqMapping: urnOf(T.mapping, "ingest-dlq-consumer"),
  gpuPolicy: urnOf(T.policy, "gpu-ec2"),
  gpuAttachment: urnOf(T.attachment, "ingest-dlq-consumer-gpu-ec2"),
  gpu: urnOf(T.instance, "gpu"),
} as const;

/** Ingest's queues are tagged with their part, on top of any tags of their own. */
function ingestQueue(name: string, inputs: Record<string, unknown>, deps?: Record<string, string[]>): RecordedResource {
  return queue(name, { ...inputs, tags: { "encache:part": "ingest", ...((inputs.tags as Record<string, string>) ?? {}) } }, { deps });
}

function depthAlarm(name: string, queueName: string, queueUrn: string): RecordedResource {
  const inputs = {
    namespace: "AWS/SQS",
    metricName: "ApproximateNumberOfMessagesVisible",
    dimensions: { QueueName: queueName },
    statistic: "Maximum",
    period: 60,
    evaluationPeriods: 1,
    threshold: 0,
    comparisonOperator: "GreaterThanThreshold",
    treatMissingData: "notBreaching",
  };
  return alarm(name, inputs, { deps: { dimensions: [queueUrn] } });
}

interface ConsumerSpec {
  name: string;
  queueUrn: string;
  queueName: string;
  timeout: number;
  batchSize: number;
  window: number;
  statements: Record<string, unknown>[];
  environment: Record<string, string>;
}

/** A queue consumer as the program builds it: role, RolePolicy, log group, function, mapping. */
function consumer(c: ConsumerSpec): RecordedResource[] {
  const roleUrn = urnOf(T.role, c.name);
  const logGroupUrn = urnOf(T.logGroup, c.name);
  const fnUrn = urnOf(T.fn, c.name);
  const logGroupArn = arn("logs", `log-group:/aws/lambda/${c.name}`);
  return [
    role(c.name, { assumeRolePolicy: JSON.stringify(lambdaTrust), tags: { "encache:part": "ingest" } }),
    rolePolicy(
      c.name,
      {
        role: c.name,
        policy: {
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "ConsumeQueue",
              Effect: "Allow",
              Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"],
              Resource: queueArn(c.queueName),
            },
            { Sid: "WriteLogs", Effect: "Allow", Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: `${logGroupArn}:*` },
            ...c.statements,
          ],
        },
      },
      { deps: { role: [roleUrn], policy: [c.queueUrn, logGroupUrn] } },
    ),
    logGroup(c.name, { name: `/aws/lambda/${c.name}`, retentionInDays: 30 }, { state: { arn: logGroupArn } }),
    fn(
      c.name,
      {
        role: roleArn(c.name),
        runtime: "nodejs22.x",
        handler: "index.handler",
        architectures: ["arm64"],
        memorySize: 256,
        timeout: c.timeout,
        environment: { variables: { POWERTOOLS_SERVICE_NAME: c.name, ...c.environment } },
        loggingConfig: { logFormat: "JSON", logGroup: `/aws/lambda/${c.name}` },
      },
      { deps: { role: [roleUrn], loggingConfig: [logGroupUrn] }, dependsOn: [logGroupUrn] },
    ),
    mapping(
      c.name,
      {
        eventSourceArn: queueArn(c.queueName),
        functionName: arn("lambda", `function:${c.name}`),
        batchSize: c.batchSize,
        maximumBatchingWindowInSeconds: c.window,
        functionResponseTypes: ["ReportBatchItemFailures"],
        scalingConfig: { maximumConcurrency: 2 },
      },
      { deps: { eventSourceArn: [c.queueUrn], functionName: [fnUrn] } },
    ),
  ];
}

function build(): RecordedResource[] {
  return [
    component(INGEST),
    ingestQueue("ingest-dlq", { messageRetentionSeconds: 1209600, visibilityTimeoutSeconds: 400, tags: { "encache:queue-role": "dlq" } }),
    ingestQueue(
      "ingest",
      {
        visibilityTimeoutSeconds: 360,
        messageRetentionSeconds: 345600,
        redrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn("ingest-dlq"), maxReceiveCount: 3 }),
      },
      { redrivePolicy: [U.dlq] },
    ),
    ingestQueue("ingest-quarantine", { messageRetentionSeconds: 1209600, tags: { "encache:queue-role": "quarantine" } }),
    resource(
      T.redriveAllow,
      "ingest-dlq",
      {
        queueUrl: queueUrl("ingest-dlq"),
        redriveAllowPolicy: JSON.stringify({ redrivePermission: "byQueue", sourceQueueArns: [queueArn("ingest")] }),
      },
      { deps: { queueUrl: [U.dlq], redriveAllowPolicy: [U.ingest] } },
    ),
    depthAlarm("ingest-dlq-depth", "ingest-dlq", U.dlq),
    depthAlarm("ingest-quarantine-depth", "ingest-quarantine", U.quarantine),
    ...consumer({
      name: "ingest-window",
      queueUrn: U.ingest,
      queueName: "ingest",
      timeout: 30,
      batchSize: 10,
      window: 0,
      statements: [],
      environment: { GPU_SERVICE_URL: "http://gpu.internal:8080" },
    }),
    ...consumer({
      name: "ingest-dlq-consumer",
      queueUrn: U.dlq,
      queueName: "ingest-dlq",
      timeout: 60,
      batchSize: 1,
      window: 5,
      statements: [
        { Sid: "Quarantine", Effect: "Allow", Action: "sqs:SendMessage", Resource: queueArn("ingest-quarantine") },
        { Sid: "ReadInstanceId", Effect: "Allow", Action: ["ssm:GetParameter"], Resource: arn("ssm", "parameter/encache/dev/gpu/instance_id") },
      ],
      environment: { QUARANTINE_QUEUE_URL: queueUrl("ingest-quarantine"), GPU_INSTANCE_PARAMETER: "/encache/dev/gpu/instance_id" },
    }),
    managedPolicy(
      "gpu-ec2",
      {
        description: "Start and describe the GPU instance",
        policy: {
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "StartGpu",
              Effect: "Allow",
              Action: ["ec2:StartInstances"],
              Resource: arn("ec2", "instance/i-0123456789abcdef0"),
              Condition: { StringEquals: { "aws:ResourceTag/encache:role": "gpu" } },
            },
            { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" },
          ],
        },
      },
      { deps: { policy: [U.gpu] } },
    ),
    attachment(
      "ingest-dlq-consumer-gpu-ec2",
      { role: "ingest-dlq-consumer", policyArn: `arn:aws:iam::${ACCOUNT}:policy/gpu-ec2` },
      { deps: { role: [U.dlqRole], policyArn: [U.gpuPolicy] } },
    ),
    instance(
      "gpu",
      {
        ami: "ami-0abcdef1234567890",
        instanceType: "g5.xlarge",
        associatePublicIpAddress: false,
        metadataOptions: { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 },
        rootBlockDevice: { encrypted: true, volumeSize: 200, volumeType: "gp3" },
        ebsBlockDevices: [{ deviceName: "/dev/sdf", encrypted: true, volumeSize: 500, volumeType: "gp3" }],
        monitoring: true,
        tags: { Name: "encache-gpu", "encache:role": "gpu" },
      },
      { state: { arn: arn("ec2", "instance/i-0123456789abcdef0"), id: "i-0123456789abcdef0" } },
    ),
    resource(
      T.parameter,
      "gpu-instance-id",
      { name: "/encache/dev/gpu/instance_id", type: "String", value: "i-0123456789abcdef0" },
      { deps: { value: [U.gpu] } },
    ),
  ];
}

export function ingestRecording(): RecordedResource[] {
  return structuredClone(build());
}
