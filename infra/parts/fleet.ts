import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, JOBS_TABLE_ROLE, TABLE_ROLE_TAG } from "../../policy/contract";
import { JOBS_TABLE } from "../../functions/shared/tables";
import { HOUSEKEEPING_ENV, TERMINATION_ENV } from "../../functions/fleet/env";
import { HOUSEKEEPING_GRANTS, TERMINATION_GRANTS } from "../../functions/fleet/iam";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table, type TableArgs } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import type { Statement } from "../iam/document";
import { statementsFor } from "../iam/grants";
import { type FleetConfig, HOUSEKEEPING_SCHEDULES } from "./fleet.config";
import { consumerSizing } from "./consumer.config";
import { functionEnvironment, type PartArgs, partScope, type PartScope } from "./part-args";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";

/** Handler entry points, relative to the repository root. */
export const FLEET_ENTRIES = {
  termination: "functions/fleet/termination.ts",
  housekeeping: "functions/fleet/housekeeping.ts",
} as const;

/**
 * The fleet functions call only AWS APIs, so they run outside the VPC (no ENIs, no NAT traffic):
 * `network` and `cluster` are accepted like every part's and unused.
 */
export interface FleetArgs extends PartArgs {
  /** `encache:fleet`. */
  config: FleetConfig;
}

/**
 * The jobs table's keys and indexes. The original system's `completed_at-index` has no usable partition
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
      { ...JOBS_TABLE.activeIndex, projectionType: "KEYS_ONLY" },
    ],
    ttlAttribute: JOBS_TABLE.ttlAttribute,
  };
}

/** The scheduled message of docs/parts/fleet.md: `{task_type, timestamp, params}`; Scheduler fills in the time. */
export function housekeepingMessage(taskType: string): Record<string, unknown> {
  return { task_type: taskType, timestamp: "<aws.scheduler.scheduled-time>", params: {} };
}

/** Where the fleet grants' symbolic resources live. */
export interface FleetAccess {
  region: string;
  accountId: pulumi.Input<string>;
  tableArn: pulumi.Input<string>;
  terminationDlqArn: pulumi.Input<string>;
  housekeepingDlqArn: pulumi.Input<string>;
  names: FleetConfig["names"];
  /** The stack's environment: a fleet instance must carry `encache:environment=<it>` to be terminated. */
  environment: string;
}

/** The two consumers' statements, derived from the grants beside their code. Pure. */
export function fleetStatements(a: FleetAccess): { termination: Statement[]; housekeeping: Statement[] } {
  const ssm = (suffix: string) => pulumi.interpolate`arn:aws:ssm:${a.region}:${a.accountId}:parameter${a.names.runnerParameterPath}${suffix}`;
  const cursorKeys = `${JOBS_TABLE.sweepCursorKeyPrefix}*`;
  // dynamodb:LeadingKeys is the set of partition keys a request names (one for GetItem, PutItem and
  // UpdateItem, every item's for BatchWriteItem), so a ForAllValues test on it judges each key the
  // request touches. ForAllValues also holds over an empty set: Null requires the keys to be there.
  const keysPresent = { Null: { "dynamodb:LeadingKeys": "false" } };
  const bindings = {
    // The jobs, never a sweep's cursor: the termination consumer's UpdateItem and the old-jobs
    // sweep's BatchWriteItem are whole-table writes by key, and the cursors share the table. An
    // Allow cannot subtract a prefix from LeadingKeys, but StringNotLike under ForAllValues says
    // "no key the request names is a cursor's", which is that subtraction. Chosen over a cursor
    // table of its own (one more table, its grants and its local and moto twins, for a few items)
    // and over an explicit Deny (the grants are Allows, one per call, derived from the code's list).
    "job-items": { resource: a.tableArn, condition: { "ForAllValues:StringNotLike": { "dynamodb:LeadingKeys": cursorKeys }, ...keysPresent } },
    "jobs-table-indexes": { resource: pulumi.interpolate`${a.tableArn}/index/*` },
    // The sweeps' cursor items and nothing else of the table: every key the request names is a cursor's.
    "sweep-cursors": { resource: a.tableArn, condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": cursorKeys }, ...keysPresent } },
    // The runners' config parameters, nothing else in SSM.
    "runner-parameters": { resource: ssm("/*") },
    // GetParametersByPath is authorised on the path itself, and a recursive call on it lists every
    // level below (SSM's API reference, GetParametersByPath Recursive): the housekeeping code calls it
    // on the runner path only (functions/fleet/tasks/stale-ssm.ts), so `/*` would match nothing it calls.
    "runner-path": { resource: ssm("") },
    "managed-instances": {
      resource: pulumi.interpolate`arn:aws:ec2:${a.region}:${a.accountId}:instance/*`,
      // Both tags: managed makes an instance the fleet's, the environment makes it this stack's fleet.
      condition: {
        StringEquals: { [`aws:ResourceTag/${a.names.managedTagKey}`]: a.names.managedTagValue, [`aws:ResourceTag/${ENVIRONMENT_TAG}`]: a.environment },
      },
    },
    "*": { resource: "*" },
    "termination-dlq": { resource: a.terminationDlqArn },
    "housekeeping-dlq": { resource: a.housekeepingDlqArn },
  };
  return { termination: statementsFor(TERMINATION_GRANTS, bindings), housekeeping: statementsFor(HOUSEKEEPING_GRANTS, bindings) };
}

type Schedules = Record<(typeof HOUSEKEEPING_SCHEDULES)[number]["taskType"], QueueSchedule>;

/**
 * Part 3 (docs/parts/fleet.md), fleet lifecycle: the termination queue and its consumer (job completion,
 * runner config cleanup, job metrics), the housekeeping queue and its consumer (orphaned
 * instances, stale SSM parameters, old job records, pool cost audit), one Scheduler schedule per
 * housekeeping task, and the jobs table.
 */
export class Fleet extends pulumi.ComponentResource implements PartFace<FleetOutputs> {
  readonly outputs: FleetOutputs;
  readonly inventory: PartInventory;
  readonly terminationQueue: ManagedQueue;
  readonly housekeepingQueue: ManagedQueue;
  readonly schedulesDlq: TerminalQueue;
  readonly jobs: Table;
  readonly schedules: Schedules;
  readonly terminationConsumer: QueueConsumer;
  readonly housekeepingConsumer: QueueConsumer;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Fleet", name, {}, opts);
    const part = partScope(this, name, args, "fleet");

    this.jobs = createJobsTable(part);
    ({ termination: this.terminationQueue, housekeeping: this.housekeepingQueue } = createQueues(part));
    ({ dlq: this.schedulesDlq, schedules: this.schedules } = createSchedules(part, this.housekeepingQueue));
    ({ termination: this.terminationConsumer, housekeeping: this.housekeepingConsumer } = createConsumers(part, {
      jobs: this.jobs,
      terminationQueue: this.terminationQueue,
      housekeepingQueue: this.housekeepingQueue,
    }));

    this.outputs = this.stackOutputs();
    this.inventory = this.describeInventory(name);
    this.registerOutputs({ ...this.outputs, inventory: inventoryRecord(this.inventory) });
  }

  /** The part's stack outputs, under their public names. */
  private stackOutputs(): FleetOutputs {
    return {
      fleetTerminationQueueUrl: this.terminationQueue.url,
      fleetTerminationDlqUrl: this.terminationQueue.dlqUrl,
      fleetHousekeepingQueueUrl: this.housekeepingQueue.url,
      fleetHousekeepingDlqUrl: this.housekeepingQueue.dlqUrl,
      fleetSchedulesDlqUrl: this.schedulesDlq.url,
      fleetJobsTable: this.jobs.table.name,
      fleetTerminationFunction: this.terminationConsumer.function.name,
      fleetHousekeepingFunction: this.housekeepingConsumer.function.name,
    };
  }

  /** The termination and housekeeping queues with their consumers, the schedules' DLQ. */
  private describeInventory(name: string): PartInventory {
    return {
      part: name,
      queues: [
        { queue: this.terminationQueue, consumers: [functionConsumer(this.terminationConsumer)] },
        { queue: this.housekeepingQueue, consumers: [functionConsumer(this.housekeepingConsumer)] },
      ],
      terminalQueues: [this.schedulesDlq],
      ecsServices: [],
      views: {},
    };
  }
}

/** Part 3's stack outputs. */
export interface FleetOutputs extends Record<string, pulumi.Input<unknown>> {
  fleetTerminationQueueUrl: pulumi.Output<string>;
  fleetTerminationDlqUrl: pulumi.Output<string>;
  fleetHousekeepingQueueUrl: pulumi.Output<string>;
  fleetHousekeepingDlqUrl: pulumi.Output<string>;
  fleetSchedulesDlqUrl: pulumi.Output<string>;
  fleetJobsTable: pulumi.Output<string>;
  fleetTerminationFunction: pulumi.Output<string>;
  fleetHousekeepingFunction: pulumi.Output<string>;
}

type FleetPart = PartScope<FleetArgs>;

/** The jobs table, tagged as one so the pack requires its TTL. */
function createJobsTable({ name, args, tags, parent }: FleetPart): Table {
  return new Table(
    `${name}-jobs`,
    { ...jobsTableSpec(), deletionProtection: args.platform.deletionProtection, tags: { ...tags, [TABLE_ROLE_TAG]: JOBS_TABLE_ROLE } },
    { parent },
  );
}

/** The termination and housekeeping queues, each with its DLQ. */
function createQueues({ name, args, tags, parent }: FleetPart): { termination: ManagedQueue; housekeeping: ManagedQueue } {
  const { maxReceiveCount, alarmActions, deletionProtection: protectDlq } = args.platform;
  const queue = (suffix: string, visibilityTimeoutSeconds: number) =>
    new ManagedQueue(`${name}-${suffix}`, { visibilityTimeoutSeconds, maxReceiveCount, alarmActions, protectDlq, tags }, { parent });
  return {
    termination: queue("termination", args.config.termination.queueVisibilityTimeoutSeconds),
    housekeeping: queue("housekeeping", args.config.housekeeping.queueVisibilityTimeoutSeconds),
  };
}

/** One Scheduler schedule per housekeeping task type, into the housekeeping queue. */
function createSchedules({ name, args, tags, parent }: FleetPart, housekeepingQueue: ManagedQueue): { dlq: TerminalQueue; schedules: Schedules } {
  const { schedules: s } = args.config;
  const dlq = new TerminalQueue(
    `${name}-schedules-dlq`,
    { role: "dlq", alarmActions: args.platform.alarmActions, protect: args.platform.deletionProtection, tags },
    { parent },
  );
  const schedules: Partial<Schedules> = {};
  for (const { taskType, key } of HOUSEKEEPING_SCHEDULES) {
    schedules[taskType] = housekeepingQueue.schedule(
      `${name}-${taskType.replace(/_/g, "-")}`,
      {
        scheduleExpression: s[key],
        message: housekeepingMessage(taskType),
        deadLetterQueueArn: dlq.queue.arn,
        maximumRetryAttempts: s.maximumRetryAttempts,
        maximumEventAgeSeconds: s.maximumEventAgeSeconds,
        description: `Fleet housekeeping: ${taskType}`,
        tags,
      },
      { parent },
    );
  }
  return { dlq, schedules: schedules as Schedules };
}

/** The termination consumer and the housekeeping consumer. */
function createConsumers(
  { name, args, tags, parent }: FleetPart,
  deps: { jobs: Table; terminationQueue: ManagedQueue; housekeepingQueue: ManagedQueue },
): { termination: QueueConsumer; housekeeping: QueueConsumer } {
  const f = args.config;
  const { terminationQueue, housekeepingQueue } = deps;
  const statements = fleetStatements({
    region: args.region,
    accountId: aws.getCallerIdentityOutput({}, { parent }).accountId,
    tableArn: deps.jobs.table.arn,
    terminationDlqArn: terminationQueue.dlq.arn,
    housekeepingDlqArn: housekeepingQueue.dlq.arn,
    names: f.names,
    environment: args.platform.environment,
  });
  const common = {
    jobsTable: deps.jobs.table.name,
    retentionDays: f.jobRetentionDays,
    runnerParameterPath: f.names.runnerParameterPath,
  };
  // POWERTOOLS_SERVICE_NAME is left to the QueueConsumer: `<its name>-<environment>`, per stack.
  const powertools = { POWERTOOLS_METRICS_NAMESPACE: f.names.metricsNamespace, POWERTOOLS_LOG_LEVEL: "INFO" };
  const sizing = { logRetentionDays: args.platform.logRetentionDays, tags };

  const termination = terminationQueue.consumer(
    `${name}-termination-consumer`,
    {
      entry: FLEET_ENTRIES.termination,
      statements: statements.termination,
      environment: functionEnvironment(
        TERMINATION_ENV,
        { ...common, queueUrl: terminationQueue.queue.url, quarantineQueueUrl: terminationQueue.dlq.url },
        powertools,
      ),
      ...consumerSizing(f.termination),
      ...sizing,
    },
    { parent },
  );

  const housekeeping = housekeepingQueue.consumer(
    `${name}-housekeeping-consumer`,
    {
      entry: FLEET_ENTRIES.housekeeping,
      statements: statements.housekeeping,
      environment: functionEnvironment(
        HOUSEKEEPING_ENV,
        {
          ...common,
          queueUrl: housekeepingQueue.queue.url,
          quarantineQueueUrl: housekeepingQueue.dlq.url,
          maxRuntimeMinutes: f.maxRuntimeMinutes,
          ssmMinAgeMinutes: f.ssmMinAgeMinutes,
          pools: f.pools,
          instancePrices: f.instancePricesUsdPerHour,
          timeMarginMs: f.housekeeping.timeMarginSeconds * 1000,
          managedTagKey: f.names.managedTagKey,
          managedTagValue: f.names.managedTagValue,
          poolTagKey: f.names.poolTagKey,
          environmentTagKey: ENVIRONMENT_TAG,
          environment: args.platform.environment,
        },
        powertools,
      ),
      ...consumerSizing(f.housekeeping),
      ...sizing,
    },
    { parent },
  );
  return { termination, housekeeping };
}
