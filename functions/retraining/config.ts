import { z } from "zod";
import type { EnvName } from "../../policy/contract";
import { envInt, envUrl, parseEnv } from "../shared/env";

/** A comma-separated list of AWS ids; blanks are dropped, and at least one must remain. */
const idList = (what: string) =>
  z
    .string()
    .transform((s) => s.split(",").map((x) => x.trim()).filter((x) => x.length > 0))
    .pipe(z.array(z.string()).min(1, `must name at least one ${what}`));

const booleanFlag = z
  .string()
  .regex(/^(true|false|1|0|yes|no)$/i, "must be true or false")
  .transform((s) => /^(true|1|yes)$/i.test(s));

/**
 * A completed intent must outlive the longest way a message can come back (infra/parts/retraining.ts,
 * `intentRetentionSeconds`): 1 day on the queue, 14 in the DLQ, 1 more after a redrive, plus a day.
 */
export const DEFAULT_INTENT_RETENTION_SECONDS = 17 * 86_400;

/**
 * Variable names and defaults follow docs/parts/retraining.md's table; ENVIRONMENT, QUARANTINE_QUEUE_URL,
 * RETRAINING_QUEUE_URL, DEFER_DELAY_SECONDS, RETRAINING_INTENT_TABLE, RETRAINING_INTENT_RETENTION_SECONDS
 * and MAX_RECEIVE_COUNT are the platform's.
 */
const launcherShape = {
  ECS_CLUSTER: z.string().min(1),
  ECS_TASK_DEFINITION_ARN: z.string().min(1).optional(),
  ECS_TASK_DEFINITION_FAMILY: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, "must be a task definition family").default("tradai-strategy-generic"),
  ECS_SUBNETS: idList("subnet"),
  ECS_SECURITY_GROUPS: idList("security group"),
  ECS_CONTAINER_NAME: z.string().min(1).default("strategy"),
  USE_SPOT: booleanFlag.default(false),
  // Required, unlike the original system's table: the capacity lease that makes MAX_CONCURRENT_TASKS hold lives there.
  RETRAINING_STATE_TABLE: z.string().min(3),
  MAX_CONCURRENT_TASKS: envInt(1, 1000).default(5),
  ENVIRONMENT: z.string().regex(/^[a-z][a-z0-9-]{1,15}$/, "must be a short lowercase environment name"),
  QUARANTINE_QUEUE_URL: envUrl(),
  // The launcher's own queue: a message that must wait is re-sent there with a delay (defer.ts).
  RETRAINING_QUEUE_URL: envUrl(),
  // SQS's DelaySeconds range.
  DEFER_DELAY_SECONDS: envInt(0, 900).default(60),
  // Required: the per-origin intent that makes RunTask happen once per message (intent.ts).
  RETRAINING_INTENT_TABLE: z.string().min(3),
  // At least a day (the clientToken window); at most a year.
  RETRAINING_INTENT_RETENTION_SECONDS: envInt(86_400, 31_536_000).default(DEFAULT_INTENT_RETENTION_SECONDS),
  // The queue's maxReceiveCount: on the last receive a failing message is dead-lettered by the launcher, stamped with its origin.
  MAX_RECEIVE_COUNT: envInt(2, 1000).optional(),
} satisfies Record<EnvName<"retraining-launcher">, z.ZodType>;

export interface LauncherConfig {
  cluster: string;
  /** What RunTask is given: the ARN if set, else `{family}-{environment}` (original: get_task_definition). */
  taskDefinition: string;
  containerName: string;
  subnets: string[];
  securityGroups: string[];
  useSpot: boolean;
  /** The state records and the capacity lease. */
  stateTable: string;
  maxConcurrentTasks: number;
  environment: string;
  quarantineQueueUrl: string;
  /** Where deferred messages are re-sent: the queue the launcher consumes. */
  retrainingQueueUrl: string;
  /** DelaySeconds of a deferred copy: how long a message waits before asking for a slot again. */
  deferDelaySeconds: number;
  /** One intent per origin message: claimed before RunTask, completed with the task ARN. */
  intentTable: string;
  /** How long an intent is kept (its TTL), from its claim and again from its launch. */
  intentRetentionSeconds: number;
  /** The queue's maxReceiveCount, if known: see `MAX_RECEIVE_COUNT`. */
  maxReceiveCount?: number;
}

/** Seed 001's task-definition resolution: the explicit ARN wins, else the per-environment family. */
export function resolveTaskDefinition(arn: string | undefined, family: string, environment: string): string {
  return arn ?? `${family}-${environment}`;
}

export function parseLauncherConfig(env: NodeJS.ProcessEnv): LauncherConfig {
  const e = parseEnv(launcherShape, env);
  return {
    cluster: e.ECS_CLUSTER,
    taskDefinition: resolveTaskDefinition(e.ECS_TASK_DEFINITION_ARN, e.ECS_TASK_DEFINITION_FAMILY, e.ENVIRONMENT),
    containerName: e.ECS_CONTAINER_NAME,
    subnets: e.ECS_SUBNETS,
    securityGroups: e.ECS_SECURITY_GROUPS,
    useSpot: e.USE_SPOT,
    stateTable: e.RETRAINING_STATE_TABLE,
    maxConcurrentTasks: e.MAX_CONCURRENT_TASKS,
    environment: e.ENVIRONMENT,
    quarantineQueueUrl: e.QUARANTINE_QUEUE_URL,
    retrainingQueueUrl: e.RETRAINING_QUEUE_URL,
    deferDelaySeconds: e.DEFER_DELAY_SECONDS,
    intentTable: e.RETRAINING_INTENT_TABLE,
    intentRetentionSeconds: e.RETRAINING_INTENT_RETENTION_SECONDS,
    ...(e.MAX_RECEIVE_COUNT !== undefined ? { maxReceiveCount: e.MAX_RECEIVE_COUNT } : {}),
  };
}
