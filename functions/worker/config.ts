import { z } from "zod";
import type { EnvName } from "../../policy/contract";
import { envInt, envUrl, parseEnv } from "../shared/env";

/** One allow-listed executable: the job type names it, the message never does. */
export const executableSchema = z.object({
  /** Absolute path inside the image; never a shell, never from the message. */
  command: z.string().regex(/^\/[A-Za-z0-9_.\-/]+$/, "must be an absolute path"),
  /** Fixed arguments; the job payload arrives on stdin, never on the command line. */
  args: z.array(z.string()).default([]),
});
export type Executable = z.output<typeof executableSchema>;

/** Job types are `[a-z0-9-]`, so a type can never smuggle a path or shell syntax. */
export const JOB_TYPE = /^[a-z][a-z0-9-]{0,63}$/;

export const executablesSchema = z.record(z.string().regex(JOB_TYPE, "job types are lowercase letters, digits and dashes"), executableSchema);

const executablesEnv = z.string().transform((raw, ctx) => {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    ctx.addIssue({ code: "custom", message: "must be a JSON object" });
    return z.NEVER;
  }
}).pipe(executablesSchema);

/**
 * Fargate kills the container 120 s after SIGTERM. After the grace period the worker still needs
 * the abort settle (5 s), the parallel give-backs and the release (2 s agent timeout): 15 s.
 * The stack config (`infra/parts/worker.config.ts`) enforces the same bound.
 */
export const MAX_SHUTDOWN_GRACE_SECONDS = 105;
/** After the grace period, aborted handlers get this long to stop before their messages are given back anyway. */
export const ABORT_SETTLE_MS = 5000;

const workerShape = {
  WORK_QUEUE_URL: envUrl(),
  /** The work queue's DLQ: malformed messages and unknown types are moved there with a reason. */
  QUARANTINE_QUEUE_URL: envUrl(),
  /** N: jobs run at once by this task. A receive asks for at most 10 (SQS's cap). */
  WORKER_CONCURRENCY: envInt(1, 10).default(1),
  WORKER_WAIT_TIME_SECONDS: envInt(0, 20).default(20),
  WORKER_IDLE_WINDOW_SECONDS: envInt(0, 3600).default(30),
  WORKER_MAX_PROTECTED_SECONDS: envInt(60, 172_800).default(14_400),
  WORKER_DEFAULT_VISIBILITY_SECONDS: envInt(1, 43_200).default(900),
  WORKER_MAX_VISIBILITY_SECONDS: envInt(1, 43_200).default(43_200),
  WORKER_HEARTBEAT_SECONDS: envInt(1, 14_400).default(60),
  WORKER_RETRY_DELAY_SECONDS: envInt(0, 43_200).default(60),
  WORKER_SHUTDOWN_GRACE_SECONDS: envInt(0, MAX_SHUTDOWN_GRACE_SECONDS).default(100),
  TASK_PROTECTION_EXPIRES_MINUTES: envInt(1, 2880).default(60),
  WORKER_EXECUTABLES: executablesEnv.default({}),
  /** The writable scratch volume (the root filesystem is read-only). */
  WORKER_SCRATCH_DIR: z.string().startsWith("/", "must be an absolute path").default("/scratch"),
  /** The job ledger's DynamoDB table (`worker-jobs`): leases and completions, keyed by job. */
  WORKER_JOBS_TABLE: z.string().min(3).max(255),
  /** Injected by ECS (agent v1.63+). Unset outside ECS: protection is then a no-op. */
  ECS_AGENT_URI: envUrl().optional(),
  /** Injected by ECS: its `/task` names the task ARN, the ledger's holder identity. Unset outside ECS: hostname:pid. */
  ECS_CONTAINER_METADATA_URI_V4: envUrl().optional(),
} satisfies Record<EnvName<"worker"> | "ECS_AGENT_URI" | "ECS_CONTAINER_METADATA_URI_V4", z.ZodType>;

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
  const e = parseEnv(workerShape, env);
  return {
    workQueueUrl: e.WORK_QUEUE_URL,
    quarantineQueueUrl: e.QUARANTINE_QUEUE_URL,
    concurrency: e.WORKER_CONCURRENCY,
    waitTimeSeconds: e.WORKER_WAIT_TIME_SECONDS,
    idleWindowMs: e.WORKER_IDLE_WINDOW_SECONDS * 1000,
    maxProtectedMs: e.WORKER_MAX_PROTECTED_SECONDS * 1000,
    defaultVisibilitySeconds: Math.min(e.WORKER_DEFAULT_VISIBILITY_SECONDS, e.WORKER_MAX_VISIBILITY_SECONDS),
    maxVisibilitySeconds: e.WORKER_MAX_VISIBILITY_SECONDS,
    heartbeatMs: e.WORKER_HEARTBEAT_SECONDS * 1000,
    retryDelaySeconds: e.WORKER_RETRY_DELAY_SECONDS,
    shutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_SECONDS * 1000,
    abortSettleMs: ABORT_SETTLE_MS,
    protectionExpiresMinutes: e.TASK_PROTECTION_EXPIRES_MINUTES,
    executables: e.WORKER_EXECUTABLES,
    scratchDir: e.WORKER_SCRATCH_DIR,
    agentUri: e.ECS_AGENT_URI,
    jobsTable: e.WORKER_JOBS_TABLE,
    metadataUri: e.ECS_CONTAINER_METADATA_URI_V4,
  };
}
