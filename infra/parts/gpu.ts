import * as aws from "@pulumi/aws";
import { ruleMaySend } from "../lib/rule-queue-policy";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, metricsNamespace, PRODUCT } from "../../policy/contract";
import { IDLE_ENV, SCALER_ENV } from "../../functions/ingest/env";
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
import { spotSignalPattern } from "../../functions/gpu/spot-events";
import { DRAIN_HOOK, GpuFleet, groupArnPattern } from "../components/gpu-fleet";
import { GpuInstance } from "../components/gpu-instance";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { TerminalQueue } from "../components/terminal-queue";
import { httpsEgress, type Statement } from "../iam/document";
import { declaredPolicy, MANAGED_POLICY_TYPE } from "../iam/declared";
import { arnOf, statementsFor } from "../iam/grants";
import type { GpuHost } from "./gpu-host";
import { INGEST_ENTRIES } from "./ingest.entries";
import { GPU_IDLE_QUEUE_VISIBILITY_SECONDS, type GpuFleetConfig, IDLE_CONSUMER, type IngestArgs, type IngestOutputs } from "./ingest.config";
import { firstSubnet, functionEnvironment, type PartScope } from "./part-args";

/**
 * The GPU tier of part 1 (docs/parts/ingest.md): what the ingest consumers send windows to, in one
 * of two capacity modes chosen once (`gpu.capacity.mode`, createGpuTier): the single instance with
 * its idle stop, or the fleet behind its load balancer with its scaler. Each mode's builder declares
 * its security groups, its GPU, what "can start the GPU" means, the consumers' grants and environment
 * for it, and its scheduled check; the ingest part asks the tier, never the mode. Its resources are
 * children of the ingest part, under the names they always had.
 */

/** The GPU group's name in fleet mode: one per stack, so its grants and the consumers find this stack's. Pure. */
export function gpuGroupName(environment: string): string {
  return `${PRODUCT}-gpu-fleet-${environment}`;
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
export function stackGroupBinding(a: { region: string; accountId: pulumi.Input<string>; groupName: string; environment: string }) {
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

/** The scheduled GPU check's resources (idle stop or scaler). */
export interface GpuCheck {
  queue: ManagedQueue;
  schedulesDlq: TerminalQueue;
  schedule: QueueSchedule;
  consumer: QueueConsumer;
  /** The scaler with Spot: EC2's interruption warnings and rebalance recommendations, into the same queue. */
  spotSignals?: { rule: aws.cloudwatch.EventRule; target: aws.cloudwatch.EventTarget };
}

type GpuPart = PartScope<IngestArgs>;

/** What the ingest part needs of the GPU tier, whichever the mode. */
export interface GpuTier {
  /** The single GPU (instance mode). */
  readonly gpu?: GpuInstance;
  /** The group behind its load balancer (fleet mode). */
  readonly fleet?: GpuFleet;
  /** The GPUs' security group. */
  readonly securityGroup: aws.ec2.SecurityGroup;
  /** What "can start the GPU" means, attached to the DLQ consumer: start the instance, or raise the group's capacity. */
  readonly startPolicy: aws.iam.Policy;
  /** The consumers' environment beyond the service's port, paths and timeout: the fleet's group and address. */
  readonly consumerEnv: { fleetGroupName?: pulumi.Output<string>; fleetServiceHost?: pulumi.Output<string> };
  /** The window and DLQ consumers' statements, for a consumer whose malformed messages go to `quarantineQueueArn`. */
  consumerStatements(a: Omit<IngestAccess, "parameterArn">): { window: Statement[]; dlq: Statement[] };
  /** The scheduled check (idle stop, absent when gpu.idleStopMinutes is 0; or the scaler), on the ingest queue. */
  createCheck(queue: ManagedQueue): GpuCheck | undefined;
  /** The tier's stack outputs. */
  outputs(): Partial<IngestOutputs>;
  /** The tier's part of the dashboard's ingest view. */
  view(check: GpuCheck | undefined): Record<string, unknown>;
}

/** The GPU tier of the stack's capacity mode, chosen here once. */
export function createGpuTier(part: GpuPart, deps: { consumersSg: aws.ec2.SecurityGroup; host: GpuHost }): GpuTier {
  const { capacity } = part.args.config.gpu;
  return capacity.mode === "fleet" && capacity.fleet ? fleetTier(part, deps, capacity.fleet) : instanceTier(part, deps);
}

/** The service port, as a security group rule states it. */
const servicePort = (part: GpuPart) => ({ protocol: "tcp", fromPort: part.args.config.gpu.servicePort, toPort: part.args.config.gpu.servicePort });

/**
 * `<name>-gpu-sg`: the GPUs' group, the service port from `ingress`, egress for the SSM agent and
 * the stack's extras. The description is ForceNew (a new group for instances still in the old one),
 * so each mode keeps the one it always had.
 */
function gpuSecurityGroup(
  { name, args, tags, parent }: GpuPart,
  description: string,
  ingress: aws.types.input.ec2.SecurityGroupIngress[],
): aws.ec2.SecurityGroup {
  return new aws.ec2.SecurityGroup(
    `${name}-gpu-sg`,
    {
      vpcId: args.network.vpcId,
      description,
      ingress,
      egress: [httpsEgress("the SSM agent (Session Manager)"), ...args.network.extraEgress.ingestGpu],
      tags,
    },
    { parent },
  );
}

/** Instance mode: one GPU the consumers POST to directly, started by the DLQ consumer and stopped when idle. */
function instanceTier(part: GpuPart, deps: { consumersSg: aws.ec2.SecurityGroup; host: GpuHost }): GpuTier {
  const { gpu: config } = part.args.config;
  const port = servicePort(part);
  // The consumers POST windows, and the idle check (in the same group) GETs the status.
  const securityGroup = gpuSecurityGroup(part, "GPU worker: the ingest service port, from the ingest consumers only", [
    { ...port, securityGroups: [deps.consumersSg.id], description: "GPU ingest service" },
  ]);
  const gpu = createGpu(part, securityGroup, deps.host);
  const startPolicy = createGpuStartPolicy(part);
  return {
    gpu,
    securityGroup,
    startPolicy,
    consumerEnv: {},
    // The single GPU's consumers read and write its id parameter.
    consumerStatements: (a) => ingestStatements({ ...a, parameterArn: gpu.instanceIdParameter.arn }),
    createCheck: (queue) => (config.idleStopMinutes > 0 ? createIdleStop(part, { queue, gpu, consumersSg: deps.consumersSg }) : undefined),
    outputs: () => ({ gpuInstanceId: gpu.instance.id, gpuInstanceIdParameter: gpu.instanceIdParameter.name }),
    // Without the idle stop (gpu.idleStopMinutes 0) nothing reports the GPU's run state.
    view: (check) => ({ gpuInstanceId: gpu.instance.id, ...(check ? { gpuIdleService: check.consumer.powertoolsServiceName } : {}) }),
  };
}

/**
 * Fleet mode: the group behind its internal load balancer, whose group sits between the consumers
 * and the GPUs: it admits the consumers, and the GPUs admit it (its health checks come from it too)
 * and the consumers' group, in which the scaler GETs each instance's status directly.
 */
function fleetTier(part: GpuPart, deps: { consumersSg: aws.ec2.SecurityGroup; host: GpuHost }, config: GpuFleetConfig): GpuTier {
  const { name, args, tags, parent } = part;
  const port = servicePort(part);
  const loadBalancerSg = new aws.ec2.SecurityGroup(
    `${name}-gpu-lb-sg`,
    {
      vpcId: args.network.vpcId,
      description: "GPU fleet load balancer: the service port, from the ingest consumers only",
      ingress: [{ ...port, securityGroups: [deps.consumersSg.id], description: "ingest consumers" }],
      // The targets' addresses are theirs, inside the VPC; the GPU group admits the port from this group only.
      egress: [{ ...port, cidrBlocks: [args.network.cidrBlock], description: "the GPU instances (traffic and health checks)" }],
      tags,
    },
    { parent },
  );
  const securityGroup = gpuSecurityGroup(part, "GPU workers: the ingest service port, from the fleet's load balancer only", [
    { ...port, securityGroups: [loadBalancerSg.id], description: "GPU ingest service" },
    // The scaler runs in the consumers' group and GETs each instance's status on its private IP
    // (functions/gpu/work-signals.ts): without this, every GET times out, no busy instance is
    // protected from scale-in, and idleness is judged by uptime.
    { ...port, securityGroups: [deps.consumersSg.id], description: "the scaler's status checks, from the ingest consumers' group" },
  ]);
  const fleet = createFleet(part, config, securityGroup, loadBalancerSg, deps.host);
  const startPolicy = createGpuStartPolicy(part);
  return {
    fleet,
    securityGroup,
    startPolicy,
    consumerEnv: { fleetGroupName: fleet.group.name, fleetServiceHost: fleet.serviceHost },
    // The fleet's consumers find the group instead of an id parameter.
    consumerStatements: (a) => fleetIngestStatements(a),
    createCheck: (queue) => createScaler(part, { queue, fleet, config, consumersSg: deps.consumersSg }),
    outputs: () => ({ gpuFleetGroupName: fleet.group.name, gpuServiceHost: fleet.serviceHost, gpuDrainHookName: fleet.drainHook.name }),
    view: (check) => (check ? { gpuFleet: { groupName: fleet.group.name, scalerService: check.consumer.powertoolsServiceName } } : {}),
  };
}

/** The GPU group, its hardened template and its internal load balancer. */
function createFleet(
  { name, args, tags, parent }: GpuPart,
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
function createGpu({ name, args, tags, parent }: GpuPart, securityGroup: aws.ec2.SecurityGroup, host: GpuHost): GpuInstance {
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
function createGpuStartPolicy({ name, args, tags, parent }: GpuPart): aws.iam.Policy {
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

/**
 * A scheduled GPU check: a schedule ticks every `minutes` into a queue whose consumer runs the check
 * (a queue between them, as for fleet housekeeping, so a failed check retries and ends in a DLQ,
 * not nowhere). The consumer runs in the VPC: it asks the GPU service for its status on the service port.
 */
function createScheduledCheck(
  { name, args, tags, parent }: GpuPart,
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
  const schedule = queue.schedule(
    `${name}-${check.kind}-check`,
    {
      scheduleExpression: `rate(${check.minutes} minute${check.minutes === 1 ? "" : "s"})`,
      message: { check: check.kind, scheduledAt: "<aws.scheduler.scheduled-time>" },
      deadLetterQueueArn: schedulesDlq.queue.arn,
      description: check.description,
      tags,
    },
    { parent },
  );
  const consumer = queue.consumer(
    `${name}-${check.kind}`,
    {
      entry: check.entry,
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
function createIdleStop(part: GpuPart, deps: { queue: ManagedQueue; gpu: GpuInstance; consumersSg: aws.ec2.SecurityGroup }): GpuCheck {
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
 * the group to zero (functions/gpu/scaler-handler.ts). A scheduled Lambda rather than target
 * tracking: a backlog-per-instance metric has no value at zero instances, so target tracking
 * cannot scale out from zero, and the scale-to-zero and protection rules need the services' status.
 */
function createScaler(part: GpuPart, deps: { queue: ManagedQueue; fleet: GpuFleet; config: GpuFleetConfig; consumersSg: aws.ec2.SecurityGroup }): GpuCheck {
  const { gpu } = part.args.config;
  const { platform } = part.args;
  const groupName = gpuGroupName(platform.environment);
  const check = createScheduledCheck(part, {
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
        spotPercent: deps.config.spotPercent,
        spotBreakerInterruptions: deps.config.spotBreaker.interruptions,
        spotBreakerWindowMinutes: deps.config.spotBreaker.windowMinutes,
        spotBreakerCooldownMinutes: deps.config.spotBreaker.cooldownMinutes,
        ingestQueueUrl: deps.queue.queue.url,
        dlqUrl: deps.queue.dlq.url,
      },
      checkPowertools(`ingest-gpu-scaler-${platform.environment}`),
    ),
    consumersSg: deps.consumersSg,
  });
  return deps.config.spotPercent > 0 ? { ...check, spotSignals: createSpotSignals(part, check, deps.config) } : check;
}

/**
 * How long EventBridge keeps retrying a delivery to the scaler's queue that fails: at most the
 * breaker's window plus cool-down (an interruption older than that can open nothing), at least
 * EventBridge's minimum of a minute. Pure.
 */
export function spotSignalRetry(breaker: GpuFleetConfig["spotBreaker"]): { maximumRetryAttempts: number; maximumEventAgeInSeconds: number } {
  return { maximumRetryAttempts: 185, maximumEventAgeInSeconds: Math.min(86_400, Math.max(60, (breaker.windowMinutes + breaker.cooldownMinutes) * 60)) };
}

/**
 * The Spot breaker's signal (docs/parts/ingest.md, "The Spot breaker"): a rule on EC2's Spot
 * interruption warnings and rebalance recommendations, delivering them to the scaler's own queue,
 * beside the schedule's ticks (functions/gpu/spot-events.ts); failed deliveries go to the schedule's
 * DLQ, whose alarm already pages. The events name only an instance, for every Spot instance of the
 * account in the region: the scaler keeps its group's. Declared only with Spot.
 */
function createSpotSignals(
  { name, tags, parent }: GpuPart,
  check: GpuCheck,
  config: GpuFleetConfig,
): { rule: aws.cloudwatch.EventRule; target: aws.cloudwatch.EventTarget } {
  const rule = new aws.cloudwatch.EventRule(
    `${name}-gpu-spot-signals`,
    {
      description: "EC2 Spot interruption warnings and rebalance recommendations: the GPU fleet's scaler counts its group's for the Spot breaker.",
      eventPattern: JSON.stringify(spotSignalPattern()),
      tags,
    },
    { parent },
  );
  ruleMaySend(`${name}-gpu-scaler-queue-policy`, { queue: check.queue.queue, rule, sid: "SpotSignalsRule" }, parent);
  ruleMaySend(`${name}-gpu-scaler-schedule-dlq-queue-policy`, { queue: check.schedulesDlq.queue, rule, sid: "SpotSignalsRule" }, parent);
  const target = new aws.cloudwatch.EventTarget(
    `${name}-gpu-spot-signals-target`,
    {
      rule: rule.name,
      arn: check.queue.queue.arn,
      retryPolicy: spotSignalRetry(config.spotBreaker),
      deadLetterConfig: { arn: check.schedulesDlq.queue.arn },
    },
    { parent },
  );
  return { rule, target };
}
