import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import { FargateTaskDefinition } from "../components/fargate-task-definition";
import type { FargateCluster } from "../components/fargate-cluster";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import { launcherStatements } from "../iam/retraining";
import { scheduleSlug } from "./retraining.config";

/** Handler entry point, relative to the repository root. */
export const RETRAINING_ENTRY = "functions/retraining/launcher.ts";

export interface RetrainingArgs {
  config: StackConfig;
  /** AWS region (the awslogs driver and the task ARN pattern of the tag-on-create grant). */
  region: string;
  vpcId: pulumi.Input<string>;
  /** Subnets the strategy tasks run in; they get no public IP. */
  privateSubnetIds: pulumi.Input<string[]>;
  /** The platform's ECS cluster (required: the launcher runs its tasks there). */
  cluster?: FargateCluster;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/** `<prefix>-<environment>`: one generic strategy task definition per environment (seed 001). Pure. */
export function strategyFamily(prefix: string, environment: string): string {
  return `${prefix}-${environment}`;
}

/**
 * Part 2 (seed 001): the retraining queue and its DLQ, per-model schedules that feed it, the
 * launcher Lambda that starts the generic strategy task on Fargate or Fargate Spot under a
 * concurrency cap, and the state table each launch is recorded in.
 */
export class Retraining extends pulumi.ComponentResource {
  readonly queue: ManagedQueue;
  readonly scheduleDlq: TerminalQueue;
  readonly schedules: QueueSchedule[];
  readonly stateTable: Table;
  readonly strategyTask: FargateTaskDefinition;
  readonly tasksSecurityGroup: aws.ec2.SecurityGroup;
  readonly launcher: QueueConsumer;

  constructor(name: string, args: RetrainingArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Retraining", name, {}, opts);
    const { config: c, region } = args;
    const r = c.retraining;
    if (!args.cluster) throw new Error("Retraining: cluster is required (pass the platform FargateCluster)");
    const cluster = args.cluster.cluster;
    const tags = { ...(args.tags ?? {}), "encache:part": "retraining" };
    const child = { parent: this };
    const accountId = aws.getCallerIdentityOutput({}, child).accountId;

    this.queue = new ManagedQueue(
      name,
      {
        visibilityTimeoutSeconds: r.queueVisibilityTimeoutSeconds,
        messageRetentionSeconds: r.messageRetentionSeconds,
        maxReceiveCount: c.queues.maxReceiveCount,
        alarmActions: c.alarmActions,
        tags,
      },
      child,
    );

    this.stateTable = new Table(
      `${name}-state`,
      { hashKey: "model_name", attributes: { model_name: "S" }, deletionProtection: c.deletionProtection, tags },
      child,
    );

    this.tasksSecurityGroup = new aws.ec2.SecurityGroup(
      `${name}-tasks-sg`,
      {
        vpcId: args.vpcId,
        description: "Retraining strategy tasks: no ingress; egress to AWS APIs, the registry and data sources via NAT",
        egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], description: "AWS APIs, image pulls, data" }],
        tags,
      },
      child,
    );

    this.strategyTask = new FargateTaskDefinition(
      `${name}-strategy`,
      {
        family: strategyFamily(r.taskDefinitionFamily, c.environment),
        containerName: r.containerName,
        image: r.strategy.image,
        region,
        cpu: r.strategy.cpu,
        memoryMb: r.strategy.memoryMb,
        cpuArchitecture: r.strategy.cpuArchitecture,
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.scheduleDlq = new TerminalQueue(`${name}-schedule-dlq`, { role: "dlq", alarmActions: c.alarmActions, tags }, child);
    this.schedules = r.schedules.map(
      (s) =>
        new QueueSchedule(
          `${name}-schedule-${scheduleSlug(s.modelName)}`,
          {
            queueArn: this.queue.queue.arn,
            scheduleExpression: s.scheduleExpression,
            timezone: s.timezone,
            message: { model_name: s.modelName, trigger: "scheduled" },
            deadLetterQueueArn: this.scheduleDlq.queue.arn,
            description: `Retrain ${s.modelName}`,
            tags,
          },
          child,
        ),
    );

    const td = this.strategyTask;
    this.launcher = new QueueConsumer(
      `${name}-launcher`,
      {
        entry: RETRAINING_ENTRY,
        queueArn: this.queue.queue.arn,
        queueVisibilityTimeoutSeconds: this.queue.settings.visibilityTimeoutSeconds,
        statements: launcherStatements({
          clusterArn: cluster.arn,
          clusterName: cluster.name,
          taskDefinitionFamilyArn: td.taskDefinition.arnWithoutRevision,
          taskRoleArn: td.taskRole.arn,
          executionRoleArn: td.executionRole.arn,
          region,
          accountId,
          stateTableArn: this.stateTable.table.arn,
          quarantineQueueArn: this.queue.dlq.arn,
          retrainingQueueArn: this.queue.queue.arn,
        }),
        environment: {
          ECS_CLUSTER: cluster.name,
          // The deployed revision, so a launch never picks up a revision Pulumi did not make.
          ECS_TASK_DEFINITION_ARN: td.taskDefinition.arn,
          ECS_TASK_DEFINITION_FAMILY: r.taskDefinitionFamily,
          ECS_SUBNETS: pulumi.output(args.privateSubnetIds).apply((ids) => ids.join(",")),
          ECS_SECURITY_GROUPS: this.tasksSecurityGroup.id,
          ECS_CONTAINER_NAME: r.containerName,
          USE_SPOT: String(r.useSpot),
          RETRAINING_STATE_TABLE: this.stateTable.table.name,
          MAX_CONCURRENT_TASKS: String(r.maxConcurrentTasks),
          ENVIRONMENT: c.environment,
          // Malformed messages go straight to the retraining DLQ with their reason (DESIGN: quarantine).
          QUARANTINE_QUEUE_URL: this.queue.dlq.url,
          // A message that must wait for capacity is re-sent here with this delay, not failed (it would spend maxReceiveCount).
          RETRAINING_QUEUE_URL: this.queue.queue.url,
          DEFER_DELAY_SECONDS: String(r.deferDelaySeconds),
          POWERTOOLS_SERVICE_NAME: "retraining-launcher",
          POWERTOOLS_METRICS_NAMESPACE: "Encache/RetrainingPipeline",
          POWERTOOLS_LOG_LEVEL: "INFO",
        },
        timeoutSeconds: r.launcher.timeoutSeconds,
        memoryMb: r.launcher.memoryMb,
        batchSize: r.launcher.batchSize,
        batchingWindowSeconds: r.launcher.batchingWindowSeconds,
        maxConcurrency: r.launcher.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.registerOutputs({
      queueUrl: this.queue.queue.url,
      dlqUrl: this.queue.dlq.url,
      stateTableName: this.stateTable.table.name,
      taskDefinitionArn: td.taskDefinition.arn,
      launcherFunctionName: this.launcher.function.name,
    });
  }
}
