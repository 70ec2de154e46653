import type { EnvValuesOf } from "../shared/env";
import { LAUNCHER_ENV } from "./env";

/**
 * The launcher's settings: LAUNCHER_ENV's fields, except that parse resolves the task definition's
 * ARN, family and the environment into the one `taskDefinition` RunTask is given.
 */
export interface LauncherConfig extends Omit<EnvValuesOf<typeof LAUNCHER_ENV>, "taskDefinitionArn" | "taskDefinitionFamily"> {
  /** What RunTask is given: the ARN if set, else `{family}-{environment}` (original: get_task_definition). */
  taskDefinition: string;
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
