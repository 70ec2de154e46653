import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, metricsNamespace, PRODUCT } from "../../policy/contract";
import { DLQ_ENV, IDLE_ENV, SCALER_ENV, WINDOW_ENV } from "../../functions/ingest/env";
import {
  DLQ_INLINE_GRANTS,
  FLEET_CAPACITY_GRANTS,
  FLEET_DLQ_INLINE_GRANTS,
  FLEET_WINDOW_GRANTS,
  GPU_EC2_GRANTS,
  IDLE_GRANTS,
  SCALER_GRANTS,
  WINDOW_GRANTS,
} from "../../functions/ingest/iam";
import { DRAIN_HOOK, GpuFleet, groupArnPattern } from "../components/gpu-fleet";
import { createGpuHost, type GpuHost } from "./gpu-host";
import { QueueSchedule } from "../components/queue-schedule";
import { GpuInstance } from "../components/gpu-instance";
import { DLQ_RETENTION_SECONDS, ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { TerminalQueue } from "../components/terminal-queue";
import { runbookPointer } from "../lib/runbook";
import { httpsEgress, type Statement } from "../iam/document";
import { declaredPolicy, MANAGED_POLICY_TYPE } from "../iam/declared";
import { arnOf, statementsFor } from "../iam/grants";
import { GPU_IDLE_QUEUE_VISIBILITY_SECONDS, type GpuConfig, type GpuFleetConfig, IDLE_CONSUMER, type IngestConfig } from "./ingest.config";
import { consumerSizing } from "./consumer.config";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { firstSubnet, functionEnvironment, type PartArgs, partScope, type PartScope } from "./part-args";

/** Handler entry points, relative to the repository root. */
export const INGEST_ENTRIES = {
  window: "functions/ingest/window.ts",
  dlq: "functions/ingest/dlq.ts",
  idle: "functions/gpu/idle.ts",
  scaler: "functions/gpu/scaler.ts",
} as const;

/** The GPU group's name in fleet mode: one per stack, so its grants and the consumers find this stack's. Pure. */
export function gpuGroupName(environment: string): string {
  return `${PRODUCT}-gpu-fleet-${environment}`;
}

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

/** This stack's GPU group, as a grant binds it: its ARN and the stack's environment tag. Pure. */
function stackGroupBinding(a: { region: string; accountId: pulumi.Input<string>; groupName: string; environment: string }) {
  return {
    resource: groupArnPattern(a.region, a.accountId, a.groupName),
    condition: { StringEquals: { [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment } },
  };
}

/** Fleet mode's "can start the GPU": raise this stack's group's desired capacity (a managed policy, as the EC2 one). Pure. */
export function fleetCapacityStatements(a: { region: string; accountId: pulumi.Input<string>; groupName: string; environment: string }): Statement[] {
  return statementsFor(FLEET_CAPACITY_GRANTS, { "*": { resource: "*" }, "stack-gpu-group": stackGroupBinding(a) });
}

/** Fleet mode's consumers' inline statements. Pure. */
export function fleetIngestStatements(a: Omit<IngestAccess, "parameterArn">): { window: Statement[]; dlq: Statement[] } {
  const bindings = {
    "*": { resource: "*" },
    "quarantine-queue": { resource: a.quarantineQueueArn },
    "ingest-dlq": { resource: a.dlqArn },
    "ingest-queue": { resource: a.queueArn },
  };
  return { window: statementsFor(FLEET_WINDOW_GRANTS, bindings), dlq: statementsFor(FLEET_DLQ_INLINE_GRANTS, bindings) };
}

/** The fleet scaler's statements: changes on this stack's group only. Pure. */
export function scalerStatements(a: {
  region: string;
  accountId: pulumi.Input<string>;
  groupName: string;
  environment: string;
  queueArns: pulumi.Input<string>[];
}): Statement[] {
  return statementsFor(SCALER_GRANTS, {
    "*": { resource: "*" },
    "ingest-queues": { resource: a.queueArns },
    "stack-gpu-group": stackGroupBinding(a),
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
  /** The single GPU (`gpu.capacity.mode: instance`). */
  readonly gpu?: GpuInstance;
  /** The GPU Auto Scaling group behind its load balancer (`gpu.capacity.mode: fleet`). */
  readonly fleet?: GpuFleet;
  /** What every GPU instance boots with: the key table, the gateway's image, the log groups, the user data. */
  readonly gpuHost: GpuHost;
  readonly windowConsumer: QueueConsumer;
  readonly dlqConsumer: QueueConsumer;
  /** What "can start the GPU" means, attached to the DLQ consumer: start the instance, or raise the group's capacity. */
  readonly gpuStartPolicy: aws.iam.Policy;
  /** Raised when EC2 has no capacity for the GPU's type on a start (the DLQ consumer counts it). */
  readonly capacityAlarm: aws.cloudwatch.MetricAlarm;
  /**
   * The scheduled GPU check: the idle stop of the single GPU (absent when gpu.idleStopMinutes is 0),
   * or the fleet's scaler (always, in fleet mode). Its queue, schedule and consumer.
   */
  readonly gpuCheck?: GpuCheck;

  constructor(name: string, args: IngestArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Ingest", name, {}, opts);
    const part = partScope(this, name, args, "ingest");

    ({ queue: this.queue, quarantine: this.quarantine } = createQueues(part));
    const groups = createSecurityGroups(part);
    this.gpuHost = createGpuHost({
      name,
      gpu: args.config.gpu,
      region: args.region,
      environment: args.platform.environment,
      logRetentionDays: args.platform.logRetentionDays,
      deletionProtection: args.platform.deletionProtection,
      tags: part.tags,
      parent: this,
    });
    const target = createGpuTarget(part, groups, this.gpuHost);
    if (target.kind === "instance") this.gpu = target.gpu;
    else this.fleet = target.fleet;
    this.gpuStartPolicy = createGpuStartPolicy(part);
    ({ window: this.windowConsumer, dlq: this.dlqConsumer } = createConsumers(part, {
      queue: this.queue,
      quarantine: this.quarantine,
      target,
      gpuStartPolicy: this.gpuStartPolicy,
      consumersSg: groups.consumers,
    }));
    this.capacityAlarm = new aws.cloudwatch.MetricAlarm(
      `${name}-gpu-capacity`,
      {
        alarmDescription: `No EC2 capacity for the ${args.config.gpu.instanceType} GPU on a start: windows wait parked and the start is retried. ${runbookPointer(`${name}-gpu-capacity`)}`,
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
    if (target.kind === "fleet")
      this.gpuCheck = createScaler(part, { queue: this.queue, fleet: target.fleet, config: target.config, consumersSg: groups.consumers });
    else if (args.config.gpu.idleStopMinutes > 0) this.gpuCheck = createIdleStop(part, { queue: this.queue, gpu: target.gpu, consumersSg: groups.consumers });

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
      ...(this.gpu ? { gpuInstanceId: this.gpu.instance.id, gpuInstanceIdParameter: this.gpu.instanceIdParameter.name } : {}),
      ...(this.fleet ? { gpuFleetGroupName: this.fleet.group.name, gpuServiceHost: this.fleet.serviceHost, gpuDrainHookName: this.fleet.drainHook.name } : {}),
      gpuKeysTable: this.gpuHost.keysTable.table.name,
      gpuGatewayImageUri: this.gpuHost.image.imageUri,
      ingestWindowFunction: this.windowConsumer.function.name,
      ingestDlqConsumerFunction: this.dlqConsumer.function.name,
    };
  }

  /** The ingest queue (its DLQ consumed too), the idle-check queue, the quarantine; the GPU's view of the dashboard. */
  private describeInventory(name: string): PartInventory {
    const idle = this.gpuCheck;
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
          ...(this.gpu ? { gpuInstanceId: this.gpu.instance.id } : {}),
          ...(this.fleet && idle ? { gpuFleet: { groupName: this.fleet.group.name, scalerService: idle.consumer.powertoolsServiceName } } : {}),
          windowService: this.windowConsumer.powertoolsServiceName,
          dlqService: this.dlqConsumer.powertoolsServiceName,
          // Without the idle stop (gpu.idleStopMinutes 0) nothing reports the GPU's run state.
          ...(this.gpu && idle ? { gpuIdleService: idle.consumer.powertoolsServiceName } : {}),
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
  /** Instance mode. */
  gpuInstanceId?: pulumi.Output<string>;
  gpuInstanceIdParameter?: pulumi.Output<string>;
  /** Fleet mode: the group, and the load balancer's DNS name the consumers POST to. */
  gpuFleetGroupName?: pulumi.Output<string>;
  gpuServiceHost?: pulumi.Output<string>;
  /** Fleet mode: the terminate hook the gateway completes once drained (its GPU_DRAIN_HOOK_NAME). */
  gpuDrainHookName?: pulumi.Output<string>;
  /** The key table every GPU's gateway claims window keys in. */
  gpuKeysTable: pulumi.Output<string>;
  /** The gateway image every GPU runs, pinned by digest. */
  gpuGatewayImageUri: pulumi.Output<string>;
  ingestWindowFunction: pulumi.Output<string>;
  ingestDlqConsumerFunction: pulumi.Output<string>;
}

type IngestPart = PartScope<IngestArgs>;

/** The scheduled GPU check's resources (idle stop or scaler). */
export interface GpuCheck {
  queue: ManagedQueue;
  schedulesDlq: TerminalQueue;
  schedule: QueueSchedule;
  consumer: QueueConsumer;
}

/** What the consumers send windows to: the single instance, or the fleet with its config. */
type GpuTarget = { kind: "instance"; gpu: GpuInstance } | { kind: "fleet"; fleet: GpuFleet; config: GpuFleetConfig };

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

/**
 * The consumers' group, and the GPU's, which admits the service port from the consumers only; in
 * fleet mode, the load balancer's group sits between them: it admits the consumers, and the GPUs
 * admit it (its health checks come from it too) and the consumers' group, in which the scaler
 * GETs each instance's status directly.
 */
function createSecurityGroups({ name, args, tags, parent }: IngestPart): {
  consumers: aws.ec2.SecurityGroup;
  gpu: aws.ec2.SecurityGroup;
  loadBalancer?: aws.ec2.SecurityGroup;
} {
  const { gpu } = args.config;
  const port = { protocol: "tcp", fromPort: gpu.servicePort, toPort: gpu.servicePort };
  const consumers = new aws.ec2.SecurityGroup(
    `${name}-consumers-sg`,
    {
      vpcId: args.network.vpcId,
      description: "Ingest consumers: egress to AWS APIs (via NAT) and to the GPU service",
      egress: [
        httpsEgress("AWS APIs (SQS, SSM, EC2, CloudWatch) through NAT"),
        // The GPU's address is its own, inside the VPC; the GPU group admits the port from this group only.
        { ...port, cidrBlocks: [args.network.cidrBlock], description: "the GPU ingest service" },
        ...args.network.extraEgress.ingestConsumers,
      ],
      tags,
    },
    { parent },
  );
  const loadBalancer =
    gpu.capacity.mode === "fleet"
      ? new aws.ec2.SecurityGroup(
          `${name}-gpu-lb-sg`,
          {
            vpcId: args.network.vpcId,
            description: "GPU fleet load balancer: the service port, from the ingest consumers only",
            ingress: [{ ...port, securityGroups: [consumers.id], description: "ingest consumers" }],
            // The targets' addresses are theirs, inside the VPC; the GPU group admits the port from this group only.
            egress: [{ ...port, cidrBlocks: [args.network.cidrBlock], description: "the GPU instances (traffic and health checks)" }],
            tags,
          },
          { parent },
        )
      : undefined;
  const gpuSg = new aws.ec2.SecurityGroup(
    `${name}-gpu-sg`,
    {
      vpcId: args.network.vpcId,
      // The description is ForceNew (a new group for instances still in the old one): kept as it
      // was, though the fleet's group now admits the scaler too.
      description: loadBalancer
        ? "GPU workers: the ingest service port, from the fleet's load balancer only"
        : "GPU worker: the ingest service port, from the ingest consumers only",
      ingress: loadBalancer
        ? [
            { ...port, securityGroups: [loadBalancer.id], description: "GPU ingest service, through the load balancer (and its health checks)" },
            // The scaler runs in the consumers' group and GETs each instance's status on its private IP
            // (functions/ingest/work-signals.ts): without this, every GET times out, no busy instance is
            // protected from scale-in, and idleness is judged by uptime.
            { ...port, securityGroups: [consumers.id], description: "the scaler's status checks, from the ingest consumers' group" },
          ]
        : [{ ...port, securityGroups: [consumers.id], description: "GPU ingest service (and the idle check's status)" }],
      egress: [httpsEgress("the SSM agent (Session Manager)"), ...args.network.extraEgress.ingestGpu],
      tags,
    },
    { parent },
  );
  return { consumers, gpu: gpuSg, ...(loadBalancer ? { loadBalancer } : {}) };
}

/** The consumers' target: the single GPU, or the fleet (config `gpu.capacity.mode`). */
function createGpuTarget(part: IngestPart, groups: ReturnType<typeof createSecurityGroups>, host: GpuHost): GpuTarget {
  const { capacity } = part.args.config.gpu;
  if (capacity.mode === "fleet" && capacity.fleet && groups.loadBalancer) {
    return { kind: "fleet", fleet: createFleet(part, capacity.fleet, groups.gpu, groups.loadBalancer, host), config: capacity.fleet };
  }
  return { kind: "instance", gpu: createGpu(part, groups.gpu, host) };
}

/** The GPU group, its hardened template and its internal load balancer. */
function createFleet(
  { name, args, tags, parent }: IngestPart,
  fleet: GpuFleetConfig,
  instances: aws.ec2.SecurityGroup,
  loadBalancer: aws.ec2.SecurityGroup,
  host: GpuHost,
): GpuFleet {
  const { gpu } = args.config;
  const environment = args.platform.environment;
  const groupName = gpuGroupName(environment);
  const accountId = aws.getCallerIdentityOutput({}, { parent }).accountId;
  return new GpuFleet(
    `${name}-gpu-fleet`,
    {
      groupName: gpuGroupName(args.platform.environment),
      instanceTypes: fleet.instanceTypes ?? [gpu.instanceType],
      maxSize: fleet.maxSize,
      onDemandBaseCapacity: fleet.onDemandBaseCapacity,
      spotPercent: fleet.spotPercent,
      spotAllocationStrategy: fleet.spotAllocationStrategy,
      ...(fleet.warmPool ? { warmPool: fleet.warmPool } : {}),
      vpcId: args.network.vpcId,
      subnetIds: args.network.privateSubnetIds,
      instanceSecurityGroupId: instances.id,
      loadBalancerSecurityGroupId: loadBalancer.id,
      servicePort: gpu.servicePort,
      statusPath: gpu.statusPath,
      drainSeconds: fleet.drainSeconds,
      ami: gpu.ami,
      userData: host.userData({ groupName, drainHookName: DRAIN_HOOK, drainSeconds: fleet.drainSeconds }),
      // The gateway completes its own drain on this stack's group only, bound as the scaler's grants are.
      statements: host.statements(stackGroupBinding({ region: args.region, accountId, groupName, environment })),
      rootVolumeGiB: gpu.rootVolumeGiB,
      environment: args.platform.environment,
      deletionProtection: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
}

/** The GPU instance, and the SSM parameter that publishes its id. */
function createGpu({ name, args, tags, parent }: IngestPart, securityGroup: aws.ec2.SecurityGroup, host: GpuHost): GpuInstance {
  const { gpu } = args.config;
  return new GpuInstance(
    `${name}-gpu`,
    {
      instanceType: gpu.instanceType,
      subnetId: firstSubnet(args.network.privateSubnetIds),
      securityGroupIds: [securityGroup.id],
      ami: gpu.ami,
      userData: host.userData(),
      statements: host.statements(),
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

/**
 * What "can start the GPU" means, as a managed policy the DLQ consumer's role attaches (the original
 * system's template does the same): start the tagged instance, or, in fleet mode, raise this
 * stack's group's desired capacity.
 */
function createGpuStartPolicy({ name, args, tags, parent }: IngestPart): aws.iam.Policy {
  const { nameTag, capacity } = args.config.gpu;
  const accountId = aws.getCallerIdentityOutput({}, { parent }).accountId;
  const environment = args.platform.environment;
  const fleet = capacity.mode === "fleet";
  const resource = fleet ? `${name}-gpu-fleet-capacity` : `${name}-gpu-ec2`;
  const statements = fleet
    ? fleetCapacityStatements({ region: args.region, accountId, groupName: gpuGroupName(environment), environment })
    : gpuEc2Statements({ region: args.region, accountId, nameTag, environment });
  return new aws.iam.Policy(
    resource,
    {
      description: fleet
        ? `Raise the ${gpuGroupName(environment)} group's desired capacity and describe it`
        : `Start the ${nameTag} instance (by tag) and describe instances`,
      policy: declaredPolicy(statements, { resource, resourceType: MANAGED_POLICY_TYPE, parent }),
      tags,
    },
    { parent },
  );
}

/** The window consumer (sends each window to the GPU) and the DLQ consumer (starts the GPU). */
function createConsumers(
  { name, args, tags, parent }: IngestPart,
  deps: { queue: ManagedQueue; quarantine: TerminalQueue; target: GpuTarget; gpuStartPolicy: aws.iam.Policy; consumersSg: aws.ec2.SecurityGroup },
): { window: QueueConsumer; dlq: QueueConsumer } {
  const { ingest, gpu } = args.config;
  const { queue, quarantine } = deps;
  const gpuEnv = {
    instanceIdParam: gpu.instanceIdParameter,
    nameTag: gpu.nameTag,
    servicePort: gpu.servicePort,
    servicePath: gpu.servicePath,
    requestTimeoutMs: gpu.requestTimeoutMs,
    ...(deps.target.kind === "fleet" ? { fleetGroupName: deps.target.fleet.group.name, fleetServiceHost: deps.target.fleet.serviceHost } : {}),
  };
  const powertools = { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Ingest"), POWERTOOLS_LOG_LEVEL: "INFO" };
  const common = {
    logRetentionDays: args.platform.logRetentionDays,
    vpc: { subnetIds: args.network.privateSubnetIds, securityGroupIds: [deps.consumersSg.id] },
    tags,
  };
  const target = deps.target;
  const access = { dlqArn: queue.dlq.arn, queueArn: queue.queue.arn };
  // The single GPU's consumers read and write its id parameter; the fleet's find the group instead.
  const statementsOf = (quarantineQueueArn: pulumi.Input<string>) =>
    target.kind === "instance"
      ? ingestStatements({ ...access, parameterArn: target.gpu.instanceIdParameter.arn, quarantineQueueArn })
      : fleetIngestStatements({ ...access, quarantineQueueArn });

  const window = new QueueConsumer(
    `${name}-window`,
    {
      entry: INGEST_ENTRIES.window,
      queueArn: queue.queue.arn,
      queueVisibilityTimeoutSeconds: queue.settings.visibilityTimeoutSeconds,
      statements: statementsOf(queue.dlq.arn).window,
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
      statements: statementsOf(quarantine.queue.arn).dlq,
      managedPolicyArns: [deps.gpuStartPolicy.arn],
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
 * A scheduled GPU check: a schedule ticks every `minutes` into a queue whose consumer runs the check
 * (a queue between them, as for fleet housekeeping, so a failed check retries and ends in a DLQ,
 * not nowhere). The consumer runs in the VPC: it asks the GPU service for its status on the service port.
 */
function createScheduledCheck(
  { name, args, tags, parent }: IngestPart,
  check: {
    /** `gpu-idle` or `gpu-scaler`: the child names' suffix and the tick's `check` field. */
    kind: string;
    minutes: number;
    description: string;
    entry: string;
    statements: Statement[];
    environment: Record<string, pulumi.Input<string>>;
    consumersSg: aws.ec2.SecurityGroup;
  },
): GpuCheck {
  const { platform } = args;
  const visibility = GPU_IDLE_QUEUE_VISIBILITY_SECONDS;
  const queue = new ManagedQueue(
    `${name}-${check.kind}`,
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
    `${name}-${check.kind}-schedule-dlq`,
    { role: "dlq", alarmActions: platform.alarmActions, protect: platform.deletionProtection, tags },
    { parent },
  );
  const schedule = new QueueSchedule(
    `${name}-${check.kind}-check`,
    {
      queueArn: queue.queue.arn,
      scheduleExpression: `rate(${check.minutes} minute${check.minutes === 1 ? "" : "s"})`,
      message: { check: check.kind, scheduledAt: "<aws.scheduler.scheduled-time>" },
      deadLetterQueueArn: schedulesDlq.queue.arn,
      description: check.description,
      tags,
    },
    { parent },
  );
  const consumer = new QueueConsumer(
    `${name}-${check.kind}`,
    {
      entry: check.entry,
      queueArn: queue.queue.arn,
      queueVisibilityTimeoutSeconds: visibility,
      statements: check.statements,
      environment: check.environment,
      ...IDLE_CONSUMER,
      logRetentionDays: platform.logRetentionDays,
      vpc: { subnetIds: args.network.privateSubnetIds, securityGroupIds: [check.consumersSg.id] },
      tags,
    },
    { parent },
  );
  return { queue, schedulesDlq, schedule, consumer };
}

const checkPowertools = (service: string) => ({
  POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Ingest"),
  POWERTOOLS_SERVICE_NAME: service,
  POWERTOOLS_LOG_LEVEL: "INFO",
});

/** The single GPU's idle stop: stops this stack's GPU after gpu.idleStopMinutes without work (functions/ingest/idle-handler.ts). */
function createIdleStop(part: IngestPart, deps: { queue: ManagedQueue; gpu: GpuInstance; consumersSg: aws.ec2.SecurityGroup }): GpuCheck {
  const { gpu } = part.args.config;
  const { platform } = part.args;
  return createScheduledCheck(part, {
    kind: "gpu-idle",
    minutes: gpu.idleCheckMinutes,
    description: `Stop the GPU after ${gpu.idleStopMinutes} minutes without work`,
    entry: INGEST_ENTRIES.idle,
    statements: idleStatements({
      region: part.args.region,
      accountId: aws.getCallerIdentityOutput({}, { parent: part.parent }).accountId,
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
      checkPowertools(`ingest-gpu-idle-${platform.environment}`),
    ),
    consumersSg: deps.consumersSg,
  });
}

/**
 * The fleet's scaler: every gpu.capacity.fleet.scaleCheckMinutes it sizes the group to the backlog,
 * keeps busy instances protected from scale-in and, after gpu.idleStopMinutes without work, takes
 * the group to zero (functions/ingest/scaler-handler.ts). A scheduled Lambda rather than target
 * tracking: a backlog-per-instance metric has no value at zero instances, so target tracking
 * cannot scale out from zero, and the scale-to-zero and protection rules need the services' status.
 */
function createScaler(part: IngestPart, deps: { queue: ManagedQueue; fleet: GpuFleet; config: GpuFleetConfig; consumersSg: aws.ec2.SecurityGroup }): GpuCheck {
  const { gpu } = part.args.config;
  const { platform } = part.args;
  const groupName = gpuGroupName(platform.environment);
  return createScheduledCheck(part, {
    kind: "gpu-scaler",
    minutes: deps.config.scaleCheckMinutes,
    description: `Size the GPU group to the ingest backlog (${deps.config.windowsPerInstance} windows per instance, at most ${deps.config.maxSize})`,
    entry: INGEST_ENTRIES.scaler,
    statements: scalerStatements({
      region: part.args.region,
      accountId: aws.getCallerIdentityOutput({}, { parent: part.parent }).accountId,
      groupName,
      environment: platform.environment,
      queueArns: [deps.queue.queue.arn, deps.queue.dlq.arn],
    }),
    environment: functionEnvironment(
      SCALER_ENV,
      {
        fleetGroupName: deps.fleet.group.name,
        servicePort: gpu.servicePort,
        statusPath: gpu.statusPath,
        requestTimeoutMs: gpu.requestTimeoutMs,
        idleStopMinutes: gpu.idleStopMinutes,
        holdTag: gpu.holdTag,
        windowsPerInstance: deps.config.windowsPerInstance,
        scaleInCooldownSeconds: deps.config.scaleInCooldownSeconds,
        ingestQueueUrl: deps.queue.queue.url,
        dlqUrl: deps.queue.dlq.url,
      },
      checkPowertools(`ingest-gpu-scaler-${platform.environment}`),
    ),
    consumersSg: deps.consumersSg,
  });
}
