import { z } from "zod";
import { envCodec, envInt, envJson, envText, envUrl, optional } from "../shared/env";

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

/**
 * The worker container's environment: field, env var name and parser, once. The program builds it
 * (infra/parts/worker.ts) and the worker parses it (config.ts) with this codec; defaults and bounds
 * are the stack schema's (infra/parts/worker.config.ts), which also validates the executables with
 * the schema above.
 */
export const WORKER_ENV = envCodec({
  workQueueUrl: envUrl("WORK_QUEUE_URL"),
  /** The work queue's DLQ: malformed messages and unknown types are moved there with a reason. */
  quarantineQueueUrl: envUrl("QUARANTINE_QUEUE_URL"),
  /** N: jobs run at once by this task. */
  concurrency: envInt("WORKER_CONCURRENCY"),
  waitTimeSeconds: envInt("WORKER_WAIT_TIME_SECONDS"),
  idleWindowSeconds: envInt("WORKER_IDLE_WINDOW_SECONDS"),
  maxProtectedSeconds: envInt("WORKER_MAX_PROTECTED_SECONDS"),
  defaultVisibilitySeconds: envInt("WORKER_DEFAULT_VISIBILITY_SECONDS"),
  maxVisibilitySeconds: envInt("WORKER_MAX_VISIBILITY_SECONDS"),
  heartbeatSeconds: envInt("WORKER_HEARTBEAT_SECONDS"),
  retryDelaySeconds: envInt("WORKER_RETRY_DELAY_SECONDS"),
  shutdownGraceSeconds: envInt("WORKER_SHUTDOWN_GRACE_SECONDS"),
  protectionExpiresMinutes: envInt("TASK_PROTECTION_EXPIRES_MINUTES"),
  executables: envJson("WORKER_EXECUTABLES", executablesSchema),
  /** The writable scratch volume (the root filesystem is read-only). */
  scratchDir: envText("WORKER_SCRATCH_DIR"),
  /** The job ledger's DynamoDB table (`worker-jobs`): leases and completions, keyed by job. */
  jobsTable: envText("WORKER_JOBS_TABLE"),
});

/** What ECS injects into every container: the program sets neither, and outside ECS both are unset. */
export const ECS_ENV = envCodec({
  /** Injected by ECS (agent v1.63+). Unset outside ECS: protection is then a no-op. */
  agentUri: optional(envUrl("ECS_AGENT_URI")),
  /** Injected by ECS: its `/task` names the task ARN, the ledger's holder identity. Unset outside ECS: hostname:pid. */
  metadataUri: optional(envUrl("ECS_CONTAINER_METADATA_URI_V4")),
});
