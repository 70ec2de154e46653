import { z } from "zod";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { SQS_MAX_VISIBILITY_SECONDS } from "../../policy/contract";
import { scheduleExpressionProblem } from "../aws-rules";
import { consumerIssues, consumerSchema } from "./consumer.config";
import { managedQueueDefaults } from "../components/managed-queue";
import type { QueueBudget } from "./part-args";

/**
 * Stack config of the fleet lifecycle part (`encache:fleet`). Composed into `infra/config.ts`;
 * every error names its key path (`encache:fleet.housekeeping.queueVisibilityTimeoutSeconds`).
 */

/** An EC2 tag key: 1–128 letters, digits, spaces or `_.:/=+-@`, not in the reserved `aws:` prefix. */
const TAG_KEY = /^(?!aws:)[\w .:/=+@-]{1,128}$/;
/** A CloudWatch namespace (CloudWatch's characters, not starting with `:`, not the reserved `AWS/`). */
const METRIC_NAMESPACE = /^(?!:)(?!AWS\/)[A-Za-z0-9 _./#:-]{1,255}$/;

const schedule = z.string().superRefine((expression, ctx) => {
  const problem = scheduleExpressionProblem(expression, { allowAt: false });
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/**
 * Names that operators of the original runs-fleet system rely on, and their defaults: the program
 * sets them on the fleet functions (their environment) and on the fleet's IAM conditions. The
 * runner parameter path is not among them: it carries the stack's environment
 * (`/runs-fleet/<environment>/runners`), and the stack always sets it.
 */
export const FLEET_NAME_DEFAULTS = {
  /** The tag that makes an instance the fleet's: the orphan sweep and TerminateInstances key on it. */
  managedTagKey: "runs-fleet:managed",
  managedTagValue: "true",
  /** The tag naming an instance's pool (pool_audit). */
  poolTagKey: "runs-fleet:pool",
  /** CloudWatch namespace of the fleet's metrics. */
  metricsNamespace: "RunsFleet",
} as const;

/** A fleet consumer: its sizing, and the visibility timeout of the queue it consumes (≥ 6 × timeoutSeconds + batchingWindowSeconds). */
const consumer = (batchSize: z.ZodType<number, number | undefined>) =>
  consumerSchema({ memoryMb: 256, batchingWindowSeconds: 0, maxConcurrency: 2 }).extend({
    queueVisibilityTimeoutSeconds: z.number().int().min(1).max(SQS_MAX_VISIBILITY_SECONDS),
    batchSize,
  });

export const fleetConfigSchema = z
  .object({
    /** Days a completed job record is kept: the TTL written on completion and old_jobs' cutoff (original: 7). */
    jobRetentionDays: z.number().int().min(1).max(3650).default(7),
    /** Longest a job may run; orphaned_instances terminates idle managed instances older than this + 10 min. */
    maxRuntimeMinutes: z.number().int().min(1).max(10_080),
    /** stale_ssm spares parameters younger than this (their instance may not be visible yet). */
    ssmMinAgeMinutes: z.number().int().min(0).max(10_080).default(15),
    /** Messages per invocation; Powertools runs a batch in parallel, so this is the original system's worker count (5). */
    termination: consumer(z.number().int().min(1).max(10).default(5)),
    housekeeping: consumer(
      /** One task per invocation, so each task gets the whole time budget. */
      z.literal(1, { message: "must be 1: each housekeeping task gets a whole invocation's time budget" }).default(1),
    ).extend({
      /** Tasks stop starting new work when less than this remains of the invocation. */
      timeMarginSeconds: z.number().int().min(1).max(600).default(15),
    }),
    /** EventBridge Scheduler expressions, one schedule per housekeeping task type. */
    schedules: z.object({
      orphanedInstances: schedule,
      staleSsm: schedule,
      oldJobs: schedule,
      poolAudit: schedule,
      /** Retries of a failed send to the housekeeping queue. */
      maximumRetryAttempts: z.number().int().min(0).max(185).default(3),
      /** How long a failed send keeps being retried, seconds (60–86400). */
      maximumEventAgeSeconds: z.number().int().min(60).max(86_400).default(3600),
    }),
    /** Pools pool_audit reports on (instances tagged `runs-fleet:pool=<name>`). */
    pools: z.array(z.string().regex(/^[A-Za-z0-9_.:/=+@-]{1,128}$/, "must be a valid tag value")).default([]),
    /**
     * The names operators of the original runs-fleet system rely on: the tag that makes an instance
     * the fleet's (housekeeping's orphan sweep and TerminateInstances key on it), the tag naming an
     * instance's pool, the SSM path of the runners' config, and the metric namespace.
     */
    names: z.object({
      managedTagKey: z.string().regex(TAG_KEY, "must be an EC2 tag key (1-128 characters, not aws:)").default(FLEET_NAME_DEFAULTS.managedTagKey),
      managedTagValue: z.string().min(1).max(255).default(FLEET_NAME_DEFAULTS.managedTagValue),
      poolTagKey: z.string().regex(TAG_KEY, "must be an EC2 tag key (1-128 characters, not aws:)").default(FLEET_NAME_DEFAULTS.poolTagKey),
      /**
       * Where each runner's config lives; termination and stale_ssm delete under it, so it carries
       * the environment (infra/stack-scope.ts).
       * @default `/runs-fleet/<environment>/runners`
       */
      runnerParameterPath: z.string().regex(/^(\/[A-Za-z0-9_.-]+)+$/, "must be an absolute SSM path without a trailing slash, such as /runs-fleet/dev/runners"),
      metricsNamespace: z.string().regex(METRIC_NAMESPACE, "must be a CloudWatch namespace (not AWS/…)").default(FLEET_NAME_DEFAULTS.metricsNamespace),
    }),
    /** The price table pool_audit costs instances with: USD per instance-hour, by instance type. */
    instancePricesUsdPerHour: z
      .record(z.string().regex(INSTANCE_TYPE_PATTERN, "keys must be EC2 instance types such as c7g.xlarge"), z.number().min(0).max(1000))
      .default({}),
  })
  .superRefine((cfg, ctx) => {
    for (const issue of fleetCrossFieldIssues(cfg)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

export type FleetConfig = z.infer<typeof fleetConfigSchema>;

type ConsumerSizing = { queueVisibilityTimeoutSeconds: number; timeoutSeconds: number; batchingWindowSeconds: number; batchSize: number };

/** Checks across keys, pure so tests call it directly. Paths are relative to `encache:fleet`. */
export function fleetCrossFieldIssues(cfg: {
  termination: ConsumerSizing;
  housekeeping: ConsumerSizing & { timeMarginSeconds: number };
}): Array<{ path: string[]; message: string }> {
  const issues: Array<{ path: string[]; message: string }> = [];
  for (const key of ["termination", "housekeeping"] as const) {
    const c = cfg[key];
    for (const issue of consumerIssues(c, {
      key: [key],
      visibilityPath: [key, "queueVisibilityTimeoutSeconds"],
      visibilityTimeoutSeconds: c.queueVisibilityTimeoutSeconds,
      prefix: key,
    })) {
      issues.push({ path: issue.path.map(String), message: issue.message });
    }
  }
  if (cfg.housekeeping.timeMarginSeconds >= cfg.housekeeping.timeoutSeconds) {
    issues.push({
      path: ["housekeeping", "timeMarginSeconds"],
      message: `must be below housekeeping.timeoutSeconds (${cfg.housekeeping.timeoutSeconds}), or no task ever starts work`,
    });
  }
  return issues;
}

/** The four housekeeping task types with the config key of their schedule. */
export const HOUSEKEEPING_SCHEDULES = [
  { taskType: "orphaned_instances", key: "orphanedInstances" },
  { taskType: "stale_ssm", key: "staleSsm" },
  { taskType: "old_jobs", key: "oldJobs" },
  { taskType: "pool_audit", key: "poolAudit" },
] as const;

/** The termination and housekeeping queues (their retention is the ManagedQueue default), with the keys behind their numbers. Pure. */
export function fleetQueueBudgets(c: {
  termination: { queueVisibilityTimeoutSeconds: number };
  housekeeping: { queueVisibilityTimeoutSeconds: number };
}): QueueBudget[] {
  return (["termination", "housekeeping"] as const).map((key) => ({
    queue: `fleet-${key}`,
    retentionSeconds: managedQueueDefaults.messageRetentionSeconds,
    retentionFrom: "the ManagedQueue default",
    visibilitySeconds: c[key].queueVisibilityTimeoutSeconds,
    visibilityFrom: `fleet.${key}.queueVisibilityTimeoutSeconds`,
    path: ["fleet", key, "queueVisibilityTimeoutSeconds"],
  }));
}
