import { z } from "zod";
import { envCodec, envInt, envJson, envText, envUrl } from "../shared/env";

/**
 * The fleet functions' environments: field, env var name and parser, once. The program builds
 * them (infra/parts/fleet.ts) and the functions parse them (config.ts) with these codecs; defaults
 * and bounds, and the runs-fleet names operators rely on, are the stack schema's
 * (infra/parts/fleet.config.ts, `encache:fleet.names`).
 */
const COMMON = {
  jobsTable: envText("RUNS_FLEET_JOBS_TABLE"),
  /** Days a completed job record is kept: the TTL written on completion and the old_jobs cutoff. */
  retentionDays: envInt("RUNS_FLEET_JOB_RETENTION_DAYS"),
  /** `<path>/{instance_id}/config`: each runner's config parameter. */
  runnerParameterPath: envText("RUNS_FLEET_RUNNER_PARAMETER_PATH"),
};

/** `fleet-termination`: completes a job when its instance terminates. */
export const TERMINATION_ENV = envCodec({
  ...COMMON,
  queueUrl: envUrl("RUNS_FLEET_TERMINATION_QUEUE_URL"),
  /** Malformed termination messages are moved here with their reason (the queue's own DLQ). */
  quarantineQueueUrl: envUrl("RUNS_FLEET_TERMINATION_DLQ_URL"),
});

/** `fleet-housekeeping`: the four sweeps. */
export const HOUSEKEEPING_ENV = envCodec({
  ...COMMON,
  queueUrl: envUrl("RUNS_FLEET_HOUSEKEEPING_QUEUE_URL"),
  quarantineQueueUrl: envUrl("RUNS_FLEET_HOUSEKEEPING_DLQ_URL"),
  /** A job may run this long; an instance older than this + 10 minutes with no active job is an orphan. */
  maxRuntimeMinutes: envInt("RUNS_FLEET_MAX_RUNTIME_MINUTES"),
  /** stale_ssm leaves younger parameters alone: their instance may not be visible to EC2 yet. */
  ssmMinAgeMinutes: envInt("RUNS_FLEET_SSM_MIN_AGE_MINUTES"),
  /** Pool names to audit (instances carry `<pool tag key>=<name>`). */
  pools: envJson("RUNS_FLEET_POOLS", z.array(z.string())),
  /** USD per instance-hour, by instance type. */
  instancePrices: envJson("RUNS_FLEET_INSTANCE_PRICES", z.record(z.string(), z.number())),
  /** Stop starting new work when less than this remains of the invocation. */
  timeMarginMs: envInt("RUNS_FLEET_TIME_MARGIN_MS"),
  /** The tag that makes an instance the fleet's; the orphan sweep only ever looks at tagged instances. */
  managedTagKey: envText("RUNS_FLEET_MANAGED_TAG_KEY"),
  managedTagValue: envText("RUNS_FLEET_MANAGED_TAG_VALUE"),
  /** The tag naming an instance's pool (pool_audit). */
  poolTagKey: envText("RUNS_FLEET_POOL_TAG_KEY"),
  /**
   * The stack's environment tag, key and value. The sweeps look only at instances carrying it as
   * well as the managed tag, and TerminateInstances is conditioned on it: dev's sweep never sees prod's.
   */
  environmentTagKey: envText("RUNS_FLEET_ENVIRONMENT_TAG_KEY"),
  environment: envText("RUNS_FLEET_ENVIRONMENT"),
});
