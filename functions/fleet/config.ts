import { z } from "zod";
import { ENVIRONMENT_TAG, type EnvName, FLEET_NAME_DEFAULTS } from "../../policy/contract";
import { envInt, envUrl, parseEnv } from "../shared/env";

/** A JSON-encoded env var, validated by `schema` once parsed. */
function envJson<S extends z.ZodType>(schema: S) {
  return z
    .string()
    .transform((raw, ctx) => {
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

const common = {
  RUNS_FLEET_JOBS_TABLE: z.string().min(3).max(255),
  /** Days a completed job record is kept: the TTL written on completion and the old_jobs cutoff. */
  RUNS_FLEET_JOB_RETENTION_DAYS: envInt(1, 3650).default(7),
};

/** `<path>/{instance_id}/config`: each runner's config parameter. Per stack, so never defaulted. */
const runnerPath = {
  RUNS_FLEET_RUNNER_PARAMETER_PATH: z.string().regex(/^(\/[A-Za-z0-9_.-]+)+$/, "must be an absolute SSM path without a trailing slash"),
};

const terminationShape = {
  ...common,
  ...runnerPath,
  RUNS_FLEET_TERMINATION_QUEUE_URL: envUrl(),
  /** Malformed termination messages are moved here with their reason (the queue's own DLQ). */
  RUNS_FLEET_TERMINATION_DLQ_URL: envUrl(),
} satisfies Record<EnvName<"fleet-termination">, z.ZodType>;

const housekeepingShape = {
  ...common,
  ...runnerPath,
  /** The tag that makes an instance the fleet's; the orphan sweep only ever looks at tagged instances. */
  RUNS_FLEET_MANAGED_TAG_KEY: z.string().min(1).max(127).default(FLEET_NAME_DEFAULTS.managedTagKey),
  RUNS_FLEET_MANAGED_TAG_VALUE: z.string().min(1).max(255).default(FLEET_NAME_DEFAULTS.managedTagValue),
  /** The tag naming an instance's pool (pool_audit). */
  RUNS_FLEET_POOL_TAG_KEY: z.string().min(1).max(127).default(FLEET_NAME_DEFAULTS.poolTagKey),
  /**
   * The stack's environment. The sweeps look only at instances tagged `encache:environment=<this>`
   * as well as managed, and TerminateInstances is conditioned on it: dev's sweep never sees prod's.
   */
  RUNS_FLEET_ENVIRONMENT: z.string().regex(/^[a-z][a-z0-9-]{1,15}$/, "must be the stack's environment name"),
  RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: envUrl(),
  RUNS_FLEET_HOUSEKEEPING_DLQ_URL: envUrl(),
  /** A job may run this long; an instance older than this + 10 minutes with no active job is an orphan. */
  RUNS_FLEET_MAX_RUNTIME_MINUTES: envInt(1, 10_080).default(360),
  /** stale_ssm leaves younger parameters alone: their instance may not be visible to EC2 yet. */
  RUNS_FLEET_SSM_MIN_AGE_MINUTES: envInt(0, 10_080).default(15),
  /** Pool names to audit (instances carry `<pool tag key>=<name>`). */
  RUNS_FLEET_POOLS: envJson(z.array(z.string().min(1).max(128))).default([]),
  /** USD per instance-hour, by instance type. */
  RUNS_FLEET_INSTANCE_PRICES: envJson(z.record(z.string(), z.number().min(0))).default({}),
  /** Stop starting new work when less than this remains of the invocation. */
  RUNS_FLEET_TIME_MARGIN_MS: envInt(0, 600_000).default(10_000),
} satisfies Record<EnvName<"fleet-housekeeping">, z.ZodType>;

export interface TerminationConfig {
  jobsTable: string;
  retentionDays: number;
  queueUrl: string;
  quarantineQueueUrl: string;
  runnerParameterPath: string;
}

export interface HousekeepingConfig {
  jobsTable: string;
  retentionDays: number;
  queueUrl: string;
  quarantineQueueUrl: string;
  maxRuntimeMinutes: number;
  ssmMinAgeMinutes: number;
  pools: string[];
  instancePrices: Record<string, number>;
  timeMarginMs: number;
  runnerParameterPath: string;
  managedTag: { key: string; value: string };
  /** `encache:environment=<the stack's>`: the second tag every swept instance must carry. */
  environmentTag: { key: string; value: string };
  poolTagKey: string;
}

export function parseTerminationConfig(env: NodeJS.ProcessEnv): TerminationConfig {
  const e = parseEnv(terminationShape, env);
  return {
    jobsTable: e.RUNS_FLEET_JOBS_TABLE,
    retentionDays: e.RUNS_FLEET_JOB_RETENTION_DAYS,
    queueUrl: e.RUNS_FLEET_TERMINATION_QUEUE_URL,
    quarantineQueueUrl: e.RUNS_FLEET_TERMINATION_DLQ_URL,
    runnerParameterPath: e.RUNS_FLEET_RUNNER_PARAMETER_PATH,
  };
}

export function parseHousekeepingConfig(env: NodeJS.ProcessEnv): HousekeepingConfig {
  const e = parseEnv(housekeepingShape, env);
  return {
    jobsTable: e.RUNS_FLEET_JOBS_TABLE,
    retentionDays: e.RUNS_FLEET_JOB_RETENTION_DAYS,
    queueUrl: e.RUNS_FLEET_HOUSEKEEPING_QUEUE_URL,
    quarantineQueueUrl: e.RUNS_FLEET_HOUSEKEEPING_DLQ_URL,
    maxRuntimeMinutes: e.RUNS_FLEET_MAX_RUNTIME_MINUTES,
    ssmMinAgeMinutes: e.RUNS_FLEET_SSM_MIN_AGE_MINUTES,
    pools: e.RUNS_FLEET_POOLS,
    instancePrices: e.RUNS_FLEET_INSTANCE_PRICES,
    timeMarginMs: e.RUNS_FLEET_TIME_MARGIN_MS,
    runnerParameterPath: e.RUNS_FLEET_RUNNER_PARAMETER_PATH,
    managedTag: { key: e.RUNS_FLEET_MANAGED_TAG_KEY, value: e.RUNS_FLEET_MANAGED_TAG_VALUE },
    environmentTag: { key: ENVIRONMENT_TAG, value: e.RUNS_FLEET_ENVIRONMENT },
    poolTagKey: e.RUNS_FLEET_POOL_TAG_KEY,
  };
}
