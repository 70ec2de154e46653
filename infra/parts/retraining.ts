import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { metricsNamespace } from "../../policy/contract";
import { RETRAINING_INTENT_TABLE, RETRAINING_STATE_TABLE } from "../../functions/shared/tables";
import { LAUNCHER_ENV } from "../../functions/retraining/env";
import { LAUNCHER_GRANTS } from "../../functions/retraining/iam";
import { FargateTaskDefinition } from "../components/fargate-task-definition";
import { DLQ_RETENTION_SECONDS, ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import { httpsEgress, type Statement } from "../iam/document";
import { statementsFor } from "../iam/grants";
import { consumerSizing } from "./consumer.config";
import { functionEnvironment, partScope, type PartScope } from "./part-args";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { type RetrainingArgs, scheduleSlug } from "./retraining.config";

export type { RetrainingArgs };
import { createRelaunch, type Relaunch } from "./retraining.relaunch";

/** Handler entry point, relative to the repository root. */
export const RETRAINING_ENTRY = "functions/retraining/launcher.ts";

/** `<prefix>-<environment>`: one generic strategy task definition per environment (docs/parts/retraining.md). Pure. */
export function strategyFamily(prefix: string, environment: string): string {
  return `${prefix}-${environment}`;
}

/** Where the launcher's symbolic resources live. */
export interface LauncherAccess {
  /** ARN of the platform ECS cluster. */
  clusterArn: pulumi.Input<string>;
  /** Name of the cluster (task ARNs are `task/<cluster name>/<id>`). */
  clusterName: pulumi.Input<string>;
  /** Task definition ARN without revision, i.e. the family. */
  taskDefinitionFamilyArn: pulumi.Input<string>;
  taskRoleArn: pulumi.Input<string>;
  executionRoleArn: pulumi.Input<string>;
  /** The region of the cluster, for the task ARN pattern. */
  region: string;
  /** The account of the cluster, for the task ARN pattern (the caller's identity). */
  accountId: pulumi.Input<string>;
  stateTableArn: pulumi.Input<string>;
  intentTableArn: pulumi.Input<string>;
  quarantineQueueArn: pulumi.Input<string>;
  /** The queue the launcher consumes: a message that must wait is re-sent there with a delay. */
  retrainingQueueArn: pulumi.Input<string>;
}

/** The launcher's statements, derived from the grants beside its code. Pure. */
export function launcherStatements(a: LauncherAccess): Statement[] {
  const onCluster = { ArnEquals: { "ecs:cluster": a.clusterArn } };
  return statementsFor(LAUNCHER_GRANTS, {
    // ListTasks authorizes against container instances, not the cluster ARN, so a cluster ARN in
    // Resource would deny it; AWS's own example scopes it with the ecs:cluster condition instead.
    cluster: { resource: "*", condition: onCluster },
    // Every revision of the strategy family, and only on the platform cluster.
    "strategy-task-definition-family": { resource: pulumi.interpolate`${a.taskDefinitionFamilyArn}:*`, condition: onCluster },
    "cluster-tasks": { resource: pulumi.interpolate`arn:aws:ecs:${a.region}:${a.accountId}:task/${a.clusterName}/*` },
    "strategy-task-roles": { resource: [a.taskRoleArn, a.executionRoleArn] },
    "state-table": { resource: a.stateTableArn },
    "intent-table": { resource: a.intentTableArn },
    "quarantine-queue": { resource: a.quarantineQueueArn },
    "retraining-queue": { resource: a.retrainingQueueArn },
  });
}

/** A day: the margin a launch intent is kept beyond the longest way back of its message. */
export const INTENT_RETENTION_MARGIN_SECONDS = 86_400;

/**
 * How long a launch intent is kept (its TTL), so every copy of its message that can still arrive
 * finds it. The longest way back: a copy sent just before the launch (a deferral) lives out the
 * queue's retention, its last receive dead-letters it (the launcher's stamped copy starts the
 * DLQ's 14 days afresh), a redrive then resets the queue's retention once more. Plus a margin;
 * DynamoDB's TTL deletes late, never early. Pure.
 */
export function intentRetentionSeconds(queueRetentionSeconds: number, dlqRetentionSeconds: number = DLQ_RETENTION_SECONDS): number {
  return queueRetentionSeconds + dlqRetentionSeconds + queueRetentionSeconds + INTENT_RETENTION_MARGIN_SECONDS;
}

/**
 * Part 2 (docs/parts/retraining.md): the retraining queue and its DLQ, per-model schedules that feed it, the
 * launcher Lambda that starts the generic strategy task on Fargate or Fargate Spot under a
 * concurrency cap, and the state table each launch is recorded in.
 */
export class Retraining extends pulumi.ComponentResource implements PartFace<RetrainingOutputs> {
  readonly outputs: RetrainingOutputs;
  readonly inventory: PartInventory;
  readonly queue: ManagedQueue;
  readonly scheduleDlq: TerminalQueue;
  readonly schedules: QueueSchedule[];
  readonly stateTable: Table;
  readonly intentTable: Table;
  readonly strategyTask: FargateTaskDefinition;
  readonly tasksSecurityGroup: aws.ec2.SecurityGroup;
  readonly launcher: QueueConsumer;
  /** With useSpot: the rule, queue and consumer that relaunch tasks Spot interrupted. */
  readonly relaunch: Relaunch | undefined;

  constructor(name: string, args: RetrainingArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Retraining", name, {}, opts);
    const part = partScope(this, name, args, "retraining");

    this.queue = createQueue(part);
    this.stateTable = createStateTable(part);
    this.intentTable = createIntentTable(part);
    ({ task: this.strategyTask, securityGroup: this.tasksSecurityGroup } = createStrategyTask(part));
    ({ dlq: this.scheduleDlq, schedules: this.schedules } = createSchedules(part, this.queue));
    this.launcher = createLauncher(part, {
      queue: this.queue,
      stateTable: this.stateTable,
      intentTable: this.intentTable,
      task: this.strategyTask,
      tasksSecurityGroup: this.tasksSecurityGroup,
    });
    this.relaunch = args.config.useSpot ? createRelaunch(part, this.queue) : undefined;

    this.outputs = this.stackOutputs();
    this.inventory = this.describeInventory(name);
    this.registerOutputs({ ...this.outputs, inventory: inventoryRecord(this.inventory) });
  }

  /** The part's stack outputs, under their public names. */
  private stackOutputs(): RetrainingOutputs {
    return {
      retrainingQueueUrl: this.queue.url,
      retrainingDlqUrl: this.queue.dlqUrl,
      retrainingScheduleDlqUrl: this.scheduleDlq.url,
      retrainingStateTable: this.stateTable.table.name,
      retrainingTaskDefinitionArn: this.strategyTask.taskDefinition.arn,
      retrainingLauncherFunction: this.launcher.function.name,
    };
  }

  /** The retraining queue and its launcher, the schedules' DLQ. */
  private describeInventory(name: string): PartInventory {
    return {
      part: name,
      queues: [
        { queue: this.queue, consumers: [functionConsumer(this.launcher)] },
        ...(this.relaunch ? [{ queue: this.relaunch.queue, consumers: [functionConsumer(this.relaunch.consumer)] }] : []),
      ],
      terminalQueues: [this.scheduleDlq],
      ecsServices: [],
      views: {},
    };
  }
}

/** Part 2's stack outputs. */
export interface RetrainingOutputs extends Record<string, pulumi.Input<unknown>> {
  retrainingQueueUrl: pulumi.Output<string>;
  retrainingDlqUrl: pulumi.Output<string>;
  retrainingScheduleDlqUrl: pulumi.Output<string>;
  retrainingStateTable: pulumi.Output<string>;
  retrainingTaskDefinitionArn: pulumi.Output<string>;
  retrainingLauncherFunction: pulumi.Output<string>;
}

type RetrainingPart = PartScope<RetrainingArgs>;

/** The retraining queue and its DLQ. */
function createQueue({ name, args, tags, parent }: RetrainingPart): ManagedQueue {
  const r = args.config;
  return new ManagedQueue(
    name,
    {
      visibilityTimeoutSeconds: r.queueVisibilityTimeoutSeconds,
      messageRetentionSeconds: r.messageRetentionSeconds,
      maxReceiveCount: args.platform.maxReceiveCount,
      alarmActions: args.platform.alarmActions,
      protectDlq: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
}

/** Each model's last launch and the capacity lease. */
function createStateTable({ name, args, tags, parent }: RetrainingPart): Table {
  const { hashKey } = RETRAINING_STATE_TABLE;
  return new Table(`${name}-state`, { hashKey, attributes: { [hashKey]: "S" }, deletionProtection: args.platform.deletionProtection, tags }, { parent });
}

/** One launch intent per origin message (functions/retraining/intent.ts), deleted by TTL when no copy can come back. */
function createIntentTable({ name, args, tags, parent }: RetrainingPart): Table {
  const { hashKey, ttlAttribute } = RETRAINING_INTENT_TABLE;
  return new Table(
    `${name}-intent`,
    { hashKey, attributes: { [hashKey]: "S" }, ttlAttribute, deletionProtection: args.platform.deletionProtection, tags },
    { parent },
  );
}

/** The generic strategy task definition of this environment, and its tasks' security group. */
function createStrategyTask({ name, args, tags, parent }: RetrainingPart): { task: FargateTaskDefinition; securityGroup: aws.ec2.SecurityGroup } {
  const r = args.config;
  const securityGroup = new aws.ec2.SecurityGroup(
    `${name}-tasks-sg`,
    {
      vpcId: args.network.vpcId,
      description: "Retraining strategy tasks: no ingress; egress to AWS APIs, the registry and data sources via NAT",
      egress: [httpsEgress("AWS APIs and image pulls through NAT"), ...args.network.extraEgress.retrainingTasks],
      tags,
    },
    { parent },
  );
  const task = new FargateTaskDefinition(
    `${name}-strategy`,
    {
      family: strategyFamily(r.taskDefinitionFamily, args.platform.environment),
      containerName: r.containerName,
      image: r.strategy.image,
      region: args.region,
      cpu: r.strategy.cpu,
      memoryMb: r.strategy.memoryMb,
      cpuArchitecture: r.strategy.cpuArchitecture,
      hardening: r.strategy.hardening,
      logRetentionDays: args.platform.logRetentionDays,
      tags,
    },
    { parent },
  );
  return { task, securityGroup };
}

/** One Scheduler schedule per model, each sending `{model_name, trigger: "scheduled"}`. */
function createSchedules({ name, args, tags, parent }: RetrainingPart, queue: ManagedQueue): { dlq: TerminalQueue; schedules: QueueSchedule[] } {
  const dlq = new TerminalQueue(
    `${name}-schedule-dlq`,
    { role: "dlq", alarmActions: args.platform.alarmActions, protect: args.platform.deletionProtection, tags },
    { parent },
  );
  const schedules = args.config.schedules.map((s) =>
    queue.schedule(
      `${name}-schedule-${scheduleSlug(s.modelName)}`,
      {
        scheduleExpression: s.scheduleExpression,
        timezone: s.timezone,
        message: { model_name: s.modelName, trigger: "scheduled" },
        deadLetterQueueArn: dlq.queue.arn,
        description: `Retrain ${s.modelName}`,
        tags,
      },
      { parent },
    ),
  );
  return { dlq, schedules };
}

/** The launcher Lambda: RunTask under the concurrency cap. */
function createLauncher(
  { name, args, tags, parent }: RetrainingPart,
  deps: { queue: ManagedQueue; stateTable: Table; intentTable: Table; task: FargateTaskDefinition; tasksSecurityGroup: aws.ec2.SecurityGroup },
): QueueConsumer {
  const r = args.config;
  const cluster = args.cluster.cluster;
  const { queue, stateTable, intentTable, task: td } = deps;
  return queue.consumer(
    `${name}-launcher`,
    {
      entry: RETRAINING_ENTRY,
      statements: launcherStatements({
        clusterArn: cluster.arn,
        clusterName: cluster.name,
        taskDefinitionFamilyArn: td.taskDefinition.arnWithoutRevision,
        taskRoleArn: td.taskRole.arn,
        executionRoleArn: td.executionRole.arn,
        region: args.region,
        accountId: aws.getCallerIdentityOutput({}, { parent }).accountId,
        stateTableArn: stateTable.table.arn,
        intentTableArn: intentTable.table.arn,
        quarantineQueueArn: queue.dlq.arn,
        retrainingQueueArn: queue.queue.arn,
      }),
      environment: functionEnvironment(
        LAUNCHER_ENV,
        {
          cluster: cluster.name,
          // The deployed revision, so a launch never picks up a revision Pulumi did not make.
          taskDefinitionArn: td.taskDefinition.arn,
          taskDefinitionFamily: r.taskDefinitionFamily,
          subnets: args.network.privateSubnetIds,
          securityGroups: pulumi.output(deps.tasksSecurityGroup.id).apply((id) => [id]),
          containerName: r.containerName,
          useSpot: r.useSpot,
          spotFallback: r.spotFallback,
          stateTable: stateTable.table.name,
          maxConcurrentTasks: r.maxConcurrentTasks,
          environment: args.platform.environment,
          // Malformed messages go straight to the retraining DLQ with their reason (DESIGN: quarantine).
          quarantineQueueUrl: queue.dlq.url,
          // A message that must wait for capacity is re-sent here with this delay, not failed (it would spend maxReceiveCount).
          retrainingQueueUrl: queue.queue.url,
          deferDelaySeconds: r.deferDelaySeconds,
          intentTable: intentTable.table.name,
          intentRetentionSeconds: intentRetentionSeconds(queue.settings.messageRetentionSeconds),
          // On the last receive the launcher dead-letters a failing message itself, stamped with its origin id.
          maxReceiveCount: queue.settings.maxReceiveCount,
        },
        // POWERTOOLS_SERVICE_NAME is left to the QueueConsumer: `<its name>-<environment>`, per stack.
        { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("RetrainingPipeline"), POWERTOOLS_LOG_LEVEL: "INFO" },
      ),
      ...consumerSizing(r.launcher),
      logRetentionDays: args.platform.logRetentionDays,
      tags,
    },
    { parent },
  );
}
