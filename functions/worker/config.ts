import type { EnvValuesOf } from "../shared/env";
import { ECS_ENV, WORKER_ENV } from "./env";

export { type Executable, executableSchema, executablesSchema, JOB_TYPE } from "./env";

/** After the grace period, aborted handlers get this long to stop before their messages are given back anyway. */
export const ABORT_SETTLE_MS = 5000;

/**
 * The worker's settings: WORKER_ENV's fields and ECS's two (ECS_ENV), except that parse turns the
 * env's seconds into milliseconds where the worker counts in ms (so tests can run the same code in
 * ms), caps `defaultVisibilitySeconds` at `maxVisibilitySeconds`, and adds `abortSettleMs`, a constant.
 */
export interface WorkerConfig
  extends Omit<EnvValuesOf<typeof WORKER_ENV>, "idleWindowSeconds" | "maxProtectedSeconds" | "heartbeatSeconds" | "shutdownGraceSeconds">,
    EnvValuesOf<typeof ECS_ENV> {
  idleWindowMs: number;
  maxProtectedMs: number;
  heartbeatMs: number;
  shutdownGraceMs: number;
  /** After the grace period, how long aborted handlers get before their messages are given back anyway. */
  abortSettleMs: number;
}

export function parseWorkerConfig(env: NodeJS.ProcessEnv): WorkerConfig {
  const e = WORKER_ENV.parse(env);
  const ecs = ECS_ENV.parse(env);
  return {
    workQueueUrl: e.workQueueUrl,
    quarantineQueueUrl: e.quarantineQueueUrl,
    concurrency: e.concurrency,
    waitTimeSeconds: e.waitTimeSeconds,
    idleWindowMs: e.idleWindowSeconds * 1000,
    maxProtectedMs: e.maxProtectedSeconds * 1000,
    defaultVisibilitySeconds: Math.min(e.defaultVisibilitySeconds, e.maxVisibilitySeconds),
    maxVisibilitySeconds: e.maxVisibilitySeconds,
    heartbeatMs: e.heartbeatSeconds * 1000,
    retryDelaySeconds: e.retryDelaySeconds,
    shutdownGraceMs: e.shutdownGraceSeconds * 1000,
    abortSettleMs: ABORT_SETTLE_MS,
    protectionExpiresMinutes: e.protectionExpiresMinutes,
    executables: e.executables,
    scratchDir: e.scratchDir,
    agentUri: ecs.agentUri,
    jobsTable: e.jobsTable,
    metadataUri: ecs.metadataUri,
  };
}
