import { ECS_ENV, type Executable, WORKER_ENV } from "./env";

export { type Executable, executableSchema, executablesSchema, JOB_TYPE } from "./env";

/** After the grace period, aborted handlers get this long to stop before their messages are given back anyway. */
export const ABORT_SETTLE_MS = 5000;

/** Everything in milliseconds inside the worker, so tests can run the same code in ms. */
export interface WorkerConfig {
  workQueueUrl: string;
  quarantineQueueUrl: string;
  concurrency: number;
  waitTimeSeconds: number;
  idleWindowMs: number;
  maxProtectedMs: number;
  defaultVisibilitySeconds: number;
  maxVisibilitySeconds: number;
  heartbeatMs: number;
  retryDelaySeconds: number;
  shutdownGraceMs: number;
  /** After the grace period, how long aborted handlers get before their messages are given back anyway. */
  abortSettleMs: number;
  protectionExpiresMinutes: number;
  executables: Record<string, Executable>;
  scratchDir: string;
  agentUri: string | undefined;
  /** The job ledger's table name. */
  jobsTable: string;
  metadataUri: string | undefined;
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
