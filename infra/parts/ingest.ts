import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, metricsNamespace } from "../../policy/contract";
import { DLQ_ENV, IDLE_ENV, WINDOW_ENV } from "../../functions/ingest/env";
import { DLQ_INLINE_GRANTS, GPU_EC2_GRANTS, IDLE_GRANTS, WINDOW_GRANTS } from "../../functions/ingest/iam";
import { QueueSchedule } from "../components/queue-schedule";
import { GpuInstance } from "../components/gpu-instance";
import { DLQ_RETENTION_SECONDS, ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { TerminalQueue } from "../components/terminal-queue";
import { httpsEgress, type Statement } from "../iam/document";
import { declaredPolicy, MANAGED_POLICY_TYPE } from "../iam/declared";
import { arnOf, statementsFor } from "../iam/grants";
import { GPU_IDLE_QUEUE_VISIBILITY_SECONDS, type GpuConfig, IDLE_CONSUMER, type IngestConfig } from "./ingest.config";
import { consumerSizing } from "./consumer.config";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { firstSubnet, functionEnvironment, type PartArgs, partScope, type PartScope } from "./part-args";

/** Handler entry points, relative to the repository root. */
export const INGEST_ENTRIES = {
  window: "functions/ingest/window.ts",
  dlq: "functions/ingest/dlq.ts",
  idle: "functions/ingest/idle.ts",
} as const;

export interface IngestArgs extends PartArgs {
  /** `encache:ingest` and `encache:gpu`. */
  config: { ingest: IngestConfig; gpu: GpuConfig };
}

/** Where the ingest consumers' symbolic resources live. */
export interface IngestAccess {
  /** ARN of the SSM parameter that holds the GPU instance id. */
  parameterArn: pulumi.Input<string>;
  /** The queue this consumer moves malformed messages to. */
  quarantineQueueArn: pulumi.Input<string>;
  /** The ingest DLQ (the DLQ consumer parks its messages there). */
  dlqArn: pulumi.Input<string>;
  /** The ingest queue (the window consumer brings a window back soon while the GPU is down). */
  queueArn: pulumi.Input<string>;
}

/** The consumers' inline statements, derived from the grants beside their code. Pure. */
export function ingestStatements(a: IngestAccess): { window: Statement[]; dlq: Statement[] } {
  const bindings = {
    "gpu-instance-id-parameter": { resource: a.parameterArn },
    "*": { resource: "*" },
    "quarantine-queue": { resource: a.quarantineQueueArn },
    "ingest-dlq": { resource: a.dlqArn },
    "ingest-queue": { resource: a.queueArn },
  };
  return { window: statementsFor(WINDOW_GRANTS, bindings), dlq: statementsFor(DLQ_INLINE_GRANTS, bindings) };
}

/** The idle check's statements; its StopInstances is conditioned on this stack's GPU tags. Pure. */
export function idleStatements(a: {
  region: string;
  accountId: pulumi.Input<string>;
  nameTag: string;
  environment: string;
  parameterArn: pulumi.Input<string>;
  queueArns: pulumi.Input<string>[];
}): Statement[] {
  return statementsFor(IDLE_GRANTS, {
    "gpu-instance-id-parameter": { resource: a.parameterArn },
    "*": { resource: "*" },
    "ingest-queues": { resource: a.queueArns },
    "stack-gpu": {
      resource: arnOf("arn:aws:ec2:", a.region, ":", a.accountId, ":instance/*"),
      condition: { StringEquals: { "aws:ResourceTag/Name": a.nameTag, [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment } },
    },
  });
}

/**
 * The GPU EC2 policy's statements: StartInstances only on instances carrying the GPU's Name tag and
 * this stack's environment tag (as StopInstances), so a Name tag reused elsewhere in the account
 * starts nothing. The values are literals from config, so this document is fully known at preview
 * time. Pure.
 */
export function gpuEc2Statements(a: { region: string; accountId: pulumi.Input<string>; nameTag: string; environment: string }): Statement[] {
  return statementsFor(GPU_EC2_GRANTS, {
    "*": { resource: "*" },
    "gpu-instances": {
      resource: arnOf("arn:aws:ec2:", a.region, ":", a.accountId, ":instance/*"),
      condition: { StringEquals: { "aws:ResourceTag/Name": a.nameTag, [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment } },
    },
  });
}

/**
 * Part 1 (docs/parts/ingest.md): the ingest queue and its DLQ, the window consumer that POSTs each window
 * to the GPU service, and the DLQ consumer that starts the stopped GPU instance when work is
 * waiting for it.
 */
export class Ingest extends pulumi.ComponentResource implements PartFace<IngestOutputs> {
  readonly outputs: IngestOutputs;
  readonly inventory: PartInventory;
  readonly queue: ManagedQueue;
  readonly quarantine: TerminalQueue;
  readonly gpu: GpuInstance;
  readonly windowConsumer: QueueConsumer;
  readonly dlqConsumer: QueueConsumer;
  readonly gpuEc2Policy: aws.iam.Policy;
  /** Raised when EC2 has no capacity for the GPU's type on a start (the DLQ consumer counts it). */
  readonly capacityAlarm: aws.cloudwatch.MetricAlarm;
  /** The idle stop (absent when gpu.idleStopMinutes is 0): its queue, schedule and consumer. */
  readonly idleStop?: { queue: ManagedQueue; schedulesDlq: TerminalQueue; schedule: QueueSchedule; consumer: QueueConsumer };

  constructor(name: string, args: IngestArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Ingest", name, {}, opts);
    const part = partScope(this, name, args, "ingest");

    ({ queue: this.queue, quarantine: this.quarantine } = createQueues(part));
    const groups = createSecurityGroups(part);
    this.gpu = createGpu(part, groups.gpu);
    this.gpuEc2Policy = createGpuEc2Policy(part);
    ({ window: this.windowConsumer, dlq: this.dlqConsumer } = createConsumers(part, {
      queue: this.queue,
      quarantine: this.quarantine,
      gpu: this.gpu,
      gpuEc2Policy: this.gpuEc2Policy,
      consumersSg: groups.consumers,
    }));
    this.capacityAlarm = new aws.cloudwatch.MetricAlarm(
      `${name}-gpu-capacity`,
      {
        alarmDescription: `No EC2 capacity for the ${args.config.gpu.instanceType} GPU on a start: windows wait parked and the start is retried (docs/parts/ingest.md)`,
        namespace: metricsNamespace("Ingest"),
        metricName: "GpuStartInsufficientCapacity",
        dimensions: { service: `ingest-dlq-consumer-${args.platform.environment}` },
        statistic: "Sum",
        period: 300,
        evaluationPeriods: 1,
        threshold: 1,
        comparisonOperator: "GreaterThanOrEqualToThreshold",
        treatMissingData: "notBreaching",
        alarmActions: args.platform.alarmActions,
        okActions: args.platform.alarmActions,
        tags: part.tags,
      },
      { parent: this },
    );
    if (args.config.gpu.idleStopMinutes > 0) this.idleStop = createIdleStop(part, { queue: this.queue, gpu: this.gpu, consumersSg: groups.consumers });

    this.outputs = this.stackOutputs();
    this.inventory = this.describeInventory(name);
    this.registerOutputs({ ...this.outputs, inventory: inventoryRecord(this.inventory) });
  }

  /** The part's stack outputs, under their public names. */
  private stackOutputs(): IngestOutputs {
    return {
      ingestQueueUrl: this.queue.url,
      ingestDlqUrl: this.queue.dlqUrl,
      ingestQuarantineUrl: this.quarantine.url,
      gpuInstanceId: this.gpu.instance.id,
      gpuInstanceIdParameter: this.gpu.instanceIdParameter.name,
      ingestWindowFunction: this.windowConsumer.function.name,
      ingestDlqConsumerFunction: this.dlqConsumer.function.name,
    };
  }

  /** The ingest queue (its DLQ consumed too), the idle-check queue, the quarantine; the GPU's view of the dashboard. */
  private describeInventory(name: string): PartInventory {
    const idle = this.idleStop;
    return {
      part: name,
      queues: [
        { queue: this.queue, consumers: [functionConsumer(this.windowConsumer)], dlqConsumers: [functionConsumer(this.dlqConsumer)] },
        ...(idle ? [{ queue: idle.queue, consumers: [functionConsumer(idle.consumer)] }] : []),
      ],
      terminalQueues: [this.quarantine, ...(idle ? [idle.schedulesDlq] : [])],
      ecsServices: [],
      views: {
        ingest: {
          gpuInstanceId: this.gpu.instance.id,
          windowService: this.windowConsumer.powertoolsServiceName,
          dlqService: this.dlqConsumer.powertoolsServiceName,
          // Without the idle stop (gpu.idleStopMinutes 0) nothing reports the GPU's run state.
          ...(idle ? { gpuIdleService: idle.consumer.powertoolsServiceName } : {}),
        },
      },
    };
  }
}

/** Part 1's stack outputs. */
export interface IngestOutputs extends Record<string, pulumi.Input<unknown>> {
  ingestQueueUrl: pulumi.Output<string>;
  ingestDlqUrl: pulumi.Output<string>;
  ingestQuarantineUrl: pulumi.Output<string>;
  gpuInstanceId: pulumi.Output<string>;
  gpuInstanceIdParameter: pulumi.Output<string>;
  ingestWindowFunction: pulumi.Output<string>;
  ingestDlqConsumerFunction: pulumi.Output<string>;
}

type IngestPart = PartScope<IngestArgs>;

/** The ingest queue with its DLQ, and the terminal quarantine queue of the DLQ consumer. */
function createQueues({ name, args, tags, parent }: IngestPart): { queue: ManagedQueue; quarantine: TerminalQueue } {
  const { ingest } = args.config;
  const { platform } = args;
  const queue = new ManagedQueue(
    name,
    {
      visibilityTimeoutSeconds: ingest.queueVisibilityTimeoutSeconds,
      messageRetentionSeconds: ingest.messageRetentionSeconds,
      maxReceiveCount: platform.maxReceiveCount,
      dlqVisibilityTimeoutSeconds: ingest.dlqVisibilityTimeoutSeconds,
      alarmActions: platform.alarmActions,
      protectDlq: platform.deletionProtection,
      tags,
    },
    { parent },
  );
  const quarantine = new TerminalQueue(
    `${name}-quarantine`,
    { role: "quarantine", alarmActions: platform.alarmActions, protect: platform.deletionProtection, tags },
    { parent },
  );
  return { queue, quarantine };
}

/** The consumers' group, and the GPU's, which admits the service port from the consumers only. */
function createSecurityGroups({ name, args, tags, parent }: IngestPart): { consumers: aws.ec2.SecurityGroup; gpu: aws.ec2.SecurityGroup } {
  const { gpu } = args.config;
  const consumers = new aws.ec2.SecurityGroup(
    `${name}-consumers-sg`,
    {
      vpcId: args.network.vpcId,
      description: "Ingest consumers: egress to AWS APIs (via NAT) and to the GPU service",
      egress: [
        httpsEgress("AWS APIs (SQS, SSM, EC2, CloudWatch) through NAT"),
        // The GPU's address is its own, inside the VPC; the GPU group admits the port from this group only.
        { protocol: "tcp", fromPort: gpu.servicePort, toPort: gpu.servicePort, cidrBlocks: [args.network.cidrBlock], description: "the GPU ingest service" },
        ...args.network.extraEgress.ingestConsumers,
      ],
      tags,
    },
    { parent },
  );
  const gpuSg = new aws.ec2.SecurityGroup(
    `${name}-gpu-sg`,
    {
      vpcId: args.network.vpcId,
      description: "GPU worker: the ingest service port, from the ingest consumers only",
      ingress: [{ protocol: "tcp", fromPort: gpu.servicePort, toPort: gpu.servicePort, securityGroups: [consumers.id], description: "GPU ingest service" }],
      egress: [httpsEgress("the SSM agent (Session Manager)"), ...args.network.extraEgress.ingestGpu],
      tags,
    },
    { parent },
  );
  return { consumers, gpu: gpuSg };
}

/** The GPU instance, and the SSM parameter that publishes its id. */
function createGpu({ name, args, tags, parent }: IngestPart, securityGroup: aws.ec2.SecurityGroup): GpuInstance {
  const { gpu } = args.config;
  return new GpuInstance(
    `${name}-gpu`,
    {
      instanceType: gpu.instanceType,
      subnetId: firstSubnet(args.network.privateSubnetIds),
      securityGroupIds: [securityGroup.id],
      amiParameter: gpu.amiParameter,
      nameTag: gpu.nameTag,
      environment: args.platform.environment,
      instanceIdParameter: gpu.instanceIdParameter,
      rootVolumeGiB: gpu.rootVolumeGiB,
      deletionProtection: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
}

/** What "can start the GPU" means, as a managed policy the DLQ consumer's role attaches (the original system's template does the same). */
function createGpuEc2Policy({ name, args, tags, parent }: IngestPart): aws.iam.Policy {
  const { nameTag } = args.config.gpu;
  return new aws.iam.Policy(
    `${name}-gpu-ec2`,
    {
      description: `Start the ${nameTag} instance (by tag) and describe instances`,
      policy: declaredPolicy(
        gpuEc2Statements({
          region: args.region,
          accountId: aws.getCallerIdentityOutput({}, { parent }).accountId,
          nameTag,
          environment: args.platform.environment,
        }),
        { resource: `${name}-gpu-ec2`, resourceType: MANAGED_POLICY_TYPE, parent },
      ),
      tags,
    },
    { parent },
  );
}

/** The window consumer (sends each window to the GPU) and the DLQ consumer (starts the GPU). */
function createConsumers(
  { name, args, tags, parent }: IngestPart,
  deps: { queue: ManagedQueue; quarantine: TerminalQueue; gpu: GpuInstance; gpuEc2Policy: aws.iam.Policy; consumersSg: aws.ec2.SecurityGroup },
): { window: QueueConsumer; dlq: QueueConsumer } {
  const { ingest, gpu } = args.config;
  const { queue, quarantine } = deps;
  const gpuEnv = {
    instanceIdParam: gpu.instanceIdParameter,
    nameTag: gpu.nameTag,
    servicePort: gpu.servicePort,
    servicePath: gpu.servicePath,
    requestTimeoutMs: gpu.requestTimeoutMs,
  };
  const powertools = { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Ingest"), POWERTOOLS_LOG_LEVEL: "INFO" };
  const common = {
    logRetentionDays: args.platform.logRetentionDays,
    vpc: { subnetIds: args.network.privateSubnetIds, securityGroupIds: [deps.consumersSg.id] },
    tags,
  };
  const access = { parameterArn: deps.gpu.instanceIdParameter.arn, dlqArn: queue.dlq.arn, queueArn: queue.queue.arn };

  const window = new QueueConsumer(
    `${name}-window`,
    {
      entry: INGEST_ENTRIES.window,
      queueArn: queue.queue.arn,
      queueVisibilityTimeoutSeconds: queue.settings.visibilityTimeoutSeconds,
      statements: ingestStatements({ ...access, quarantineQueueArn: queue.dlq.arn }).window,
      environment: functionEnvironment(
        WINDOW_ENV,
        {
          ...gpuEnv,
          // Malformed windows go straight to the ingest DLQ with their reason (DESIGN: quarantine).
          quarantineQueueUrl: queue.dlq.url,
          ingestQueueUrl: queue.queue.url,
          retrySeconds: ingest.windowRetrySeconds,
          bootGraceSeconds: ingest.gpuBootGraceSeconds,
        },
        { ...powertools, POWERTOOLS_SERVICE_NAME: `ingest-window-${args.platform.environment}` },
      ),
      ...consumerSizing(ingest.window),
      ...common,
    },
    { parent },
  );

  const dlq = new QueueConsumer(
    `${name}-dlq-consumer`,
    {
      entry: INGEST_ENTRIES.dlq,
      queueArn: queue.dlq.arn,
      queueVisibilityTimeoutSeconds: queue.settings.dlqVisibilityTimeoutSeconds,
      statements: ingestStatements({ ...access, quarantineQueueArn: quarantine.queue.arn }).dlq,
      managedPolicyArns: [deps.gpuEc2Policy.arn],
      environment: functionEnvironment(
        DLQ_ENV,
        {
          ...gpuEnv,
          dlqUrl: queue.dlq.url,
          // This consumer's own queue is the DLQ, so malformed messages go to the terminal quarantine queue.
          quarantineQueueUrl: quarantine.queue.url,
          visibilityExtensionSeconds: ingest.dlqParkSeconds,
          bootParkSeconds: ingest.dlqBootParkSeconds,
          capacityRetrySeconds: ingest.dlqCapacityRetrySeconds,
          bootGraceSeconds: ingest.gpuBootGraceSeconds,
          // Quarantine a day before the DLQ's retention would delete a message nobody took.
          maxAgeSeconds: DLQ_RETENTION_SECONDS - 86_400,
        },
        { ...powertools, POWERTOOLS_SERVICE_NAME: `ingest-dlq-consumer-${args.platform.environment}` },
      ),
      ...consumerSizing(ingest.dlqConsumer),
      ...common,
    },
    { parent },
  );
  return { window, dlq };
}

/**
 * The GPU idle stop: a schedule ticks every gpu.idleCheckMinutes into a queue whose consumer stops
 * this stack's GPU after gpu.idleStopMinutes without work (functions/ingest/idle-handler.ts). A queue
 * between them, as for fleet housekeeping, so a failed check retries and ends in a DLQ, not nowhere.
 */
function createIdleStop(
  { name, args, tags, parent }: IngestPart,
  deps: { queue: ManagedQueue; gpu: GpuInstance; consumersSg: aws.ec2.SecurityGroup },
): NonNullable<Ingest["idleStop"]> {
  const { gpu } = args.config;
  const { platform } = args;
  const visibility = GPU_IDLE_QUEUE_VISIBILITY_SECONDS;
  const queue = new ManagedQueue(
    `${name}-gpu-idle`,
    {
      visibilityTimeoutSeconds: visibility,
      maxReceiveCount: platform.maxReceiveCount,
      dlqVisibilityTimeoutSeconds: visibility,
      alarmActions: platform.alarmActions,
      protectDlq: platform.deletionProtection,
      tags,
    },
    { parent },
  );
  const schedulesDlq = new TerminalQueue(
    `${name}-gpu-idle-schedule-dlq`,
    { role: "dlq", alarmActions: platform.alarmActions, protect: platform.deletionProtection, tags },
    { parent },
  );
  const schedule = new QueueSchedule(
    `${name}-gpu-idle-check`,
    {
      queueArn: queue.queue.arn,
      scheduleExpression: `rate(${gpu.idleCheckMinutes} minute${gpu.idleCheckMinutes === 1 ? "" : "s"})`,
      message: { check: "gpu-idle", scheduledAt: "<aws.scheduler.scheduled-time>" },
      deadLetterQueueArn: schedulesDlq.queue.arn,
      description: `Stop the GPU after ${gpu.idleStopMinutes} minutes without work`,
      tags,
    },
    { parent },
  );
  const consumer = new QueueConsumer(
    `${name}-gpu-idle`,
    {
      entry: INGEST_ENTRIES.idle,
      queueArn: queue.queue.arn,
      queueVisibilityTimeoutSeconds: visibility,
      statements: idleStatements({
        region: args.region,
        accountId: aws.getCallerIdentityOutput({}, { parent }).accountId,
        nameTag: gpu.nameTag,
        environment: platform.environment,
        parameterArn: deps.gpu.instanceIdParameter.arn,
        queueArns: [deps.queue.queue.arn, deps.queue.dlq.arn],
      }),
      environment: functionEnvironment(
        IDLE_ENV,
        {
          instanceIdParam: gpu.instanceIdParameter,
          servicePort: gpu.servicePort,
          statusPath: gpu.statusPath,
          requestTimeoutMs: gpu.requestTimeoutMs,
          idleStopMinutes: gpu.idleStopMinutes,
          holdTag: gpu.holdTag,
          ingestQueueUrl: deps.queue.queue.url,
          dlqUrl: deps.queue.dlq.url,
        },
        {
          POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Ingest"),
          POWERTOOLS_SERVICE_NAME: `ingest-gpu-idle-${platform.environment}`,
          POWERTOOLS_LOG_LEVEL: "INFO",
        },
      ),
      ...IDLE_CONSUMER,
      logRetentionDays: platform.logRetentionDays,
      // In the VPC: it asks the GPU service for its status on the service port.
      vpc: { subnetIds: args.network.privateSubnetIds, securityGroupIds: [deps.consumersSg.id] },
      tags,
    },
    { parent },
  );
  return { queue, schedulesDlq, schedule, consumer };
}
