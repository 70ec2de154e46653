import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import type { FargateCluster } from "../components/fargate-cluster";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table, type TableArgs } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import { housekeepingStatements, terminationStatements } from "../iam/fleet";
import { JOBS_TABLE } from "../../functions/fleet/jobs";
import { HOUSEKEEPING_SCHEDULES } from "./fleet.config";

/** Handler entry points, relative to the repository root. */
export const FLEET_ENTRIES = {
  termination: "functions/fleet/termination.ts",
  housekeeping: "functions/fleet/housekeeping.ts",
} as const;

/** The tag that marks a table holding job records; the `job-table-ttl` policy requires TTL on it. */
export const TABLE_ROLE_TAG = "encache:table-role";

/** CloudWatch namespace of the seed's metrics. */
export const FLEET_METRICS_NAMESPACE = "RunsFleet";

export interface FleetArgs {
  config: StackConfig;
  /** AWS region the stack deploys to (scopes the ARNs in the roles). */
  region: string;
  /**
   * Accepted like every part's; unused: the fleet functions call only AWS APIs, so they run
   * outside the VPC (no ENIs, no NAT traffic).
   */
  vpcId: pulumi.Input<string>;
  /** Accepted like every part's; unused (see `vpcId`). */
  privateSubnetIds: pulumi.Input<string[]>;
  /**
   * Not used by this part (it runs no ECS tasks).
   * @default undefined
   */
  cluster?: FargateCluster;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * The jobs table's keys and indexes. The seed's `completed_at-index` has no usable partition
 * key; `status-completed_at-index` partitions by terminal status (a Query per status answers
 * "completed before the cutoff"), `instance_id-index` finds an instance's jobs. Pure.
 */
export function jobsTableSpec(): Pick<TableArgs, "hashKey" | "attributes" | "globalSecondaryIndexes" | "ttlAttribute"> {
  return {
    hashKey: JOBS_TABLE.hashKey,
    attributes: { job_id: "S", status: "S", completed_at: "S", instance_id: "S" },
    globalSecondaryIndexes: [
      // Old-job deletion only needs the key.
      { ...JOBS_TABLE.completedIndex, projectionType: "KEYS_ONLY" },
      // The orphan and idle checks only need the status.
      { ...JOBS_TABLE.instanceIndex, projectionType: "INCLUDE", nonKeyAttributes: ["status"] },
    ],
    ttlAttribute: JOBS_TABLE.ttlAttribute,
  };
}

/** The scheduled message of seed 002: `{task_type, timestamp, params}`; Scheduler fills in the time. */
export function housekeepingMessage(taskType: string): Record<string, unknown> {
  return { task_type: taskType, timestamp: "<aws.scheduler.scheduled-time>", params: {} };
}

/**
 * Part 3 (seed 002), fleet lifecycle: the termination queue and its consumer (job completion,
 * runner config cleanup, job metrics), the housekeeping queue and its consumer (orphaned
 * instances, stale SSM parameters, old job records, pool cost audit), one Scheduler schedule per
 * housekeeping task, and the jobs table.
 */
export class Fleet extends pulumi.ComponentResource {
  readonly terminationQueue: ManagedQueue;
  readonly housekeepingQueue: ManagedQueue;
  readonly schedulesDlq: TerminalQueue;
  readonly jobs: Table;
  readonly schedules: Record<(typeof HOUSEKEEPING_SCHEDULES)[number]["taskType"], QueueSchedule>;
  readonly terminationConsumer: QueueConsumer;
  readonly housekeepingConsumer: QueueConsumer;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Fleet", name, {}, opts);
    const { config: c, region } = args;
    const f = c.fleet;
    const tags = { ...(args.tags ?? {}), "encache:part": "fleet" };
    const child = { parent: this };
    const accountId = aws.getCallerIdentityOutput({}, child).accountId;

    this.jobs = new Table(
      `${name}-jobs`,
      {
        ...jobsTableSpec(),
        deletionProtection: c.deletionProtection,
        tags: { ...tags, [TABLE_ROLE_TAG]: "jobs" },
      },
      child,
    );

    const queue = (suffix: string, visibilityTimeoutSeconds: number) =>
      new ManagedQueue(
        `${name}-${suffix}`,
        { visibilityTimeoutSeconds, maxReceiveCount: c.queues.maxReceiveCount, alarmActions: c.alarmActions, tags },
        child,
      );
    this.terminationQueue = queue("termination", f.termination.queueVisibilityTimeoutSeconds);
    this.housekeepingQueue = queue("housekeeping", f.housekeeping.queueVisibilityTimeoutSeconds);

    this.schedulesDlq = new TerminalQueue(`${name}-schedules-dlq`, { role: "dlq", alarmActions: c.alarmActions, tags }, child);
    const schedules: Partial<Fleet["schedules"]> = {};
    for (const { taskType, key } of HOUSEKEEPING_SCHEDULES) {
      schedules[taskType] = new QueueSchedule(
        `${name}-${taskType.replace(/_/g, "-")}`,
        {
          queueArn: this.housekeepingQueue.queue.arn,
          scheduleExpression: f.schedules[key],
          message: housekeepingMessage(taskType),
          deadLetterQueueArn: this.schedulesDlq.queue.arn,
          maximumRetryAttempts: f.schedules.maximumRetryAttempts,
          maximumEventAgeSeconds: f.schedules.maximumEventAgeSeconds,
          description: `Fleet housekeeping: ${taskType}`,
          tags,
        },
        child,
      );
    }
    this.schedules = schedules as Fleet["schedules"];

    const scope = { region, accountId, tableArn: this.jobs.table.arn };
    const common = {
      RUNS_FLEET_JOBS_TABLE: this.jobs.table.name,
      RUNS_FLEET_JOB_RETENTION_DAYS: String(f.jobRetentionDays),
      POWERTOOLS_METRICS_NAMESPACE: FLEET_METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: "INFO",
    };

    this.terminationConsumer = new QueueConsumer(
      `${name}-termination-consumer`,
      {
        entry: FLEET_ENTRIES.termination,
        queueArn: this.terminationQueue.queue.arn,
        queueVisibilityTimeoutSeconds: this.terminationQueue.settings.visibilityTimeoutSeconds,
        statements: terminationStatements({ ...scope, quarantineQueueArn: this.terminationQueue.dlq.arn }),
        environment: {
          ...common,
          RUNS_FLEET_TERMINATION_QUEUE_URL: this.terminationQueue.queue.url,
          RUNS_FLEET_TERMINATION_DLQ_URL: this.terminationQueue.dlq.url,
          POWERTOOLS_SERVICE_NAME: "fleet-termination",
        },
        timeoutSeconds: f.termination.timeoutSeconds,
        memoryMb: f.termination.memoryMb,
        batchSize: f.termination.batchSize,
        batchingWindowSeconds: f.termination.batchingWindowSeconds,
        maxConcurrency: f.termination.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.housekeepingConsumer = new QueueConsumer(
      `${name}-housekeeping-consumer`,
      {
        entry: FLEET_ENTRIES.housekeeping,
        queueArn: this.housekeepingQueue.queue.arn,
        queueVisibilityTimeoutSeconds: this.housekeepingQueue.settings.visibilityTimeoutSeconds,
        statements: housekeepingStatements({ ...scope, quarantineQueueArn: this.housekeepingQueue.dlq.arn }),
        environment: {
          ...common,
          RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: this.housekeepingQueue.queue.url,
          RUNS_FLEET_HOUSEKEEPING_DLQ_URL: this.housekeepingQueue.dlq.url,
          RUNS_FLEET_MAX_RUNTIME_MINUTES: String(f.maxRuntimeMinutes),
          RUNS_FLEET_SSM_MIN_AGE_MINUTES: String(f.ssmMinAgeMinutes),
          RUNS_FLEET_POOLS: JSON.stringify(f.pools),
          RUNS_FLEET_INSTANCE_PRICES: JSON.stringify(f.instancePricesUsdPerHour),
          RUNS_FLEET_TIME_MARGIN_MS: String(f.housekeeping.timeMarginSeconds * 1000),
          POWERTOOLS_SERVICE_NAME: "fleet-housekeeping",
        },
        timeoutSeconds: f.housekeeping.timeoutSeconds,
        memoryMb: f.housekeeping.memoryMb,
        batchSize: f.housekeeping.batchSize,
        batchingWindowSeconds: f.housekeeping.batchingWindowSeconds,
        maxConcurrency: f.housekeeping.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.registerOutputs({
      terminationQueueUrl: this.terminationQueue.queue.url,
      housekeepingQueueUrl: this.housekeepingQueue.queue.url,
      jobsTableName: this.jobs.table.name,
    });
  }
}
