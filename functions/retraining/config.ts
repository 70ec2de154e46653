import { LAUNCHER_ENV, type SpotFallback } from "./env";

export interface LauncherConfig {
  cluster: string;
  /** What RunTask is given: the ARN if set, else `{family}-{environment}` (original: get_task_definition). */
  taskDefinition: string;
  containerName: string;
  subnets: string[];
  securityGroups: string[];
  useSpot: boolean;
  /** With useSpot: what a launch refused for Spot capacity does (SPOT_FALLBACK). */
  spotFallback: SpotFallback;
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
  const { taskDefinitionArn, taskDefinitionFamily, maxReceiveCount, ...e } = LAUNCHER_ENV.parse(env);
  return {
    ...e,
    taskDefinition: resolveTaskDefinition(taskDefinitionArn, taskDefinitionFamily, e.environment),
    ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
  };
}
