import { envChoice, envCodec, envFlag, envInt, envList, envText, envUrl, optional } from "../shared/env";

/** What a Fargate Spot launch that finds no capacity does: retry at once on FARGATE, or fail (and be retried by SQS). */
export const SPOT_FALLBACKS = ["on-demand", "fail"] as const;
export type SpotFallback = (typeof SPOT_FALLBACKS)[number];

/**
 * The retraining launcher's environment: field, env var name and parser, once. The program builds
 * it (infra/parts/retraining.ts) and the launcher parses it (config.ts) with this codec; defaults
 * and bounds are the stack schema's (infra/parts/retraining.config.ts). Names follow
 * docs/parts/retraining.md's table; ENVIRONMENT, QUARANTINE_QUEUE_URL, RETRAINING_QUEUE_URL,
 * DEFER_DELAY_SECONDS, RETRAINING_INTENT_TABLE, RETRAINING_INTENT_RETENTION_SECONDS and
 * MAX_RECEIVE_COUNT are the platform's.
 */
export const LAUNCHER_ENV = envCodec({
  cluster: envText("ECS_CLUSTER"),
  /** The deployed revision; without it RunTask is given `{family}-{environment}` (the original system's lookup). */
  taskDefinitionArn: optional(envText("ECS_TASK_DEFINITION_ARN")),
  taskDefinitionFamily: envText("ECS_TASK_DEFINITION_FAMILY"),
  subnets: envList("ECS_SUBNETS"),
  securityGroups: envList("ECS_SECURITY_GROUPS"),
  containerName: envText("ECS_CONTAINER_NAME"),
  useSpot: envFlag("USE_SPOT"),
  /** With USE_SPOT: a RunTask that Fargate Spot refuses for capacity is retried at once on FARGATE (`on-demand`), or fails (`fail`). */
  spotFallback: envChoice("SPOT_FALLBACK", SPOT_FALLBACKS),
  /** The state records and the capacity lease that makes MAX_CONCURRENT_TASKS hold. */
  stateTable: envText("RETRAINING_STATE_TABLE"),
  maxConcurrentTasks: envInt("MAX_CONCURRENT_TASKS"),
  environment: envText("ENVIRONMENT"),
  quarantineQueueUrl: envUrl("QUARANTINE_QUEUE_URL"),
  /** The launcher's own queue: a message that must wait is re-sent there with a delay (defer.ts). */
  retrainingQueueUrl: envUrl("RETRAINING_QUEUE_URL"),
  /** DelaySeconds of a deferred copy: how long a message waits before asking for a slot again. */
  deferDelaySeconds: envInt("DEFER_DELAY_SECONDS"),
  /** The per-origin intent that makes RunTask happen once per message (intent.ts). */
  intentTable: envText("RETRAINING_INTENT_TABLE"),
  /** How long an intent is kept (its TTL), from its claim and again from its launch. */
  intentRetentionSeconds: envInt("RETRAINING_INTENT_RETENTION_SECONDS"),
  /** The queue's maxReceiveCount: on the last receive a failing message is dead-lettered by the launcher, stamped with its origin. */
  maxReceiveCount: optional(envInt("MAX_RECEIVE_COUNT")),
});

/** The relaunch consumer's environment (relaunch-handler.ts), built by infra/parts/retraining.ts with this codec. */
export const RELAUNCH_ENV = envCodec({
  /** The platform cluster's ARN: the only cluster whose tasks are relaunched. */
  clusterArn: envText("ECS_CLUSTER_ARN"),
  /** The launcher's queue, where a relaunch request goes. */
  retrainingQueueUrl: envUrl("RETRAINING_QUEUE_URL"),
  /** The interruptions queue's DLQ: events that can never be relaunched, with their reason. */
  quarantineQueueUrl: envUrl("QUARANTINE_QUEUE_URL"),
});
