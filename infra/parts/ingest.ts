import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { metricsNamespace } from "../../policy/contract";
import { DLQ_ENV, WINDOW_ENV } from "../../functions/ingest/env";
import type { GpuFleet } from "../components/gpu-fleet";
import type { GpuInstance } from "../components/gpu-instance";
import { DLQ_RETENTION_SECONDS, ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { TerminalQueue } from "../components/terminal-queue";
import { runbookPointer } from "../lib/runbook";
import { httpsEgress } from "../iam/document";
import { createGpuHost, type GpuHost } from "./gpu-host";
import { createGpuTier, type GpuCheck, type GpuTier } from "./gpu";
import type { IngestArgs, IngestOutputs } from "./ingest.config";
import { consumerSizing } from "./consumer.config";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { functionEnvironment, partScope, type PartScope } from "./part-args";

// The GPU tier's builders and its pure statement helpers live in ./gpu; re-exported for their callers.
export {
  fleetCapacityStatements,
  fleetIngestStatements,
  type GpuCheck,
  gpuEc2Statements,
  gpuGroupName,
  type IngestAccess,
  idleStatements,
  ingestStatements,
  scalerStatements,
} from "./gpu";

import { INGEST_ENTRIES } from "./ingest.entries";

export type { IngestArgs, IngestOutputs };

export { INGEST_ENTRIES };

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
  /** The GPU tier of the stack's capacity mode (./gpu). */
  readonly gpuTier: GpuTier;
  readonly windowConsumer: QueueConsumer;
  readonly dlqConsumer: QueueConsumer;
  /** What "can start the GPU" means, attached to the DLQ consumer: start the instance, or raise the group's capacity. */
  readonly gpuStartPolicy: aws.iam.Policy;
  /** Raised when EC2 has no capacity for the GPU's type on a start (the DLQ consumer counts it). */
  readonly capacityAlarm: aws.cloudwatch.MetricAlarm;
  /**
   * Fleet mode: raised when the group has wanted more instances than it has in service for
   * FLEET_LAUNCH_ALARM_MINUTES straight (no quota, no Spot capacity, a template that cannot launch).
   */
  readonly launchAlarm?: aws.cloudwatch.MetricAlarm;
  /**
   * The scheduled GPU check: the idle stop of the single GPU (absent when gpu.idleStopMinutes is 0),
   * or the fleet's scaler (always, in fleet mode). Its queue, schedule and consumer.
   */
  readonly gpuCheck?: GpuCheck;

  constructor(name: string, args: IngestArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Ingest", name, {}, opts);
    const part = partScope(this, name, args, "ingest");

    ({ queue: this.queue, quarantine: this.quarantine } = createQueues(part));
    const consumersSg = createConsumersSecurityGroup(part);
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
    // The capacity mode is chosen here, once: everything below asks the tier.
    const tier = createGpuTier(part, { consumersSg, host: this.gpuHost });
    this.gpuTier = tier;
    if (tier.gpu) this.gpu = tier.gpu;
    if (tier.fleet) this.fleet = tier.fleet;
    this.gpuStartPolicy = tier.startPolicy;
    ({ window: this.windowConsumer, dlq: this.dlqConsumer } = createConsumers(part, {
      queue: this.queue,
      quarantine: this.quarantine,
      tier,
      consumersSg,
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
    if (tier.fleet) this.launchAlarm = fleetLaunchAlarm(name, tier.fleet, args, part.tags, this);
    this.gpuCheck = tier.createCheck(this.queue);

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
      ...this.gpuTier.outputs(),
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
          ...this.gpuTier.view(idle),
          windowService: this.windowConsumer.powertoolsServiceName,
          dlqService: this.dlqConsumer.powertoolsServiceName,
        },
      },
    };
  }
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

/**
 * `<name>-consumers-sg`: the window and DLQ consumers' group (the scheduled GPU check runs in it
 * too): egress to AWS through NAT and to the GPU service's port inside the VPC. The GPU tier's
 * groups admit it (./gpu).
 */
function createConsumersSecurityGroup({ name, args, tags, parent }: IngestPart): aws.ec2.SecurityGroup {
  const { gpu } = args.config;
  const port = { protocol: "tcp", fromPort: gpu.servicePort, toPort: gpu.servicePort };
  return new aws.ec2.SecurityGroup(
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
}

/** The window consumer (sends each window to the GPU) and the DLQ consumer (starts the GPU). */
function createConsumers(
  { name, args, tags, parent }: IngestPart,
  deps: { queue: ManagedQueue; quarantine: TerminalQueue; tier: GpuTier; consumersSg: aws.ec2.SecurityGroup },
): { window: QueueConsumer; dlq: QueueConsumer } {
  const { ingest, gpu } = args.config;
  const { queue, quarantine } = deps;
  const gpuEnv = {
    instanceIdParam: gpu.instanceIdParameter,
    nameTag: gpu.nameTag,
    servicePort: gpu.servicePort,
    servicePath: gpu.servicePath,
    requestTimeoutMs: gpu.requestTimeoutMs,
    ...deps.tier.consumerEnv,
  };
  const powertools = { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Ingest"), POWERTOOLS_LOG_LEVEL: "INFO" };
  const common = {
    logRetentionDays: args.platform.logRetentionDays,
    vpc: { subnetIds: args.network.privateSubnetIds, securityGroupIds: [deps.consumersSg.id] },
    tags,
  };
  const access = { dlqArn: queue.dlq.arn, queueArn: queue.queue.arn };
  const statementsOf = (quarantineQueueArn: pulumi.Input<string>) => deps.tier.consumerStatements({ ...access, quarantineQueueArn });

  const window = queue.consumer(
    `${name}-window`,
    {
      entry: INGEST_ENTRIES.window,
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

  const dlq = queue.dlqConsumer(
    `${name}-dlq-consumer`,
    {
      entry: INGEST_ENTRIES.dlq,
      statements: statementsOf(quarantine.queue.arn).dlq,
      managedPolicyArns: [deps.tier.startPolicy.arn],
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
 * Minutes the fleet may want more instances than it has in service before its launch alarm fires:
 * longer than a boot and the health check's 600 s grace, so a scale-out that boots never raises it.
 */
export const FLEET_LAUNCH_ALARM_MINUTES = 20;

/**
 * `<name>-gpu-fleet-launch`: the group's desired capacity above its in-service instances, minute
 * after minute, for FLEET_LAUNCH_ALARM_MINUTES. The capacity alarm counts only instance mode's
 * failed starts; in fleet mode Auto Scaling launches, and a launch it cannot make (no GPU quota, no
 * Spot capacity in any pool, a template it cannot launch) fails in its own activity history, retried
 * in silence. The group publishes both metrics every minute (GROUP_METRICS).
 */
function fleetLaunchAlarm(name: string, fleet: GpuFleet, args: IngestArgs, tags: Record<string, string>, parent: pulumi.Resource): aws.cloudwatch.MetricAlarm {
  const alarm = `${name}-gpu-fleet-launch`;
  const groupMetric = (id: string, metricName: string) => ({
    id,
    returnData: false,
    metric: { namespace: "AWS/AutoScaling", metricName, dimensions: { AutoScalingGroupName: fleet.group.name }, period: 60, stat: "Minimum" },
  });
  return new aws.cloudwatch.MetricAlarm(
    alarm,
    {
      alarmDescription: `The GPU fleet has wanted more instances than it has in service for ${FLEET_LAUNCH_ALARM_MINUTES} minutes: Auto Scaling cannot launch (GPU quota, Spot capacity, the template). Windows wait in the ingest queues. ${runbookPointer(alarm)}`,
      metricQueries: [
        groupMetric("desired", "GroupDesiredCapacity"),
        groupMetric("inservice", "GroupInServiceInstances"),
        { id: "shortfall", expression: "desired - inservice", label: "Instances wanted and not in service", returnData: true },
      ],
      evaluationPeriods: FLEET_LAUNCH_ALARM_MINUTES,
      datapointsToAlarm: FLEET_LAUNCH_ALARM_MINUTES,
      threshold: 1,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      treatMissingData: "notBreaching",
      alarmActions: args.platform.alarmActions,
      okActions: args.platform.alarmActions,
      tags,
    },
    { parent },
  );
}
