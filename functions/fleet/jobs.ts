/**
 * The jobs table's shape, shared by the consumers and the infra (which must declare the same
 * key attributes and index names). Side-effect free: the infra imports it.
 */
export const JOBS_TABLE = {
  hashKey: "job_id",
  /** Epoch seconds; DynamoDB's TTL deletes the item after it. */
  ttlAttribute: "expires_at",
  /**
   * "Completed before a cutoff" as a Query. Partition: the terminal status (4 values), sort:
   * completed_at (RFC 3339, UTC, lexically ordered). Sparse: running/queued jobs carry no
   * completed_at, so they are not in the index at all.
   */
  completedIndex: { name: "status-completed_at-index", hashKey: "status", rangeKey: "completed_at" },
  /** "Which jobs ran on this instance" (the orphan and idle checks); projects the status. */
  instanceIndex: { name: "instance_id-index", hashKey: "instance_id" },
} as const;

/** Statuses a job record can have (seed 002). */
export type JobStatus = "queued" | "running" | "completed" | "failed" | "timeout" | "interrupted";

/** A job in one of these is still using its instance. */
export const ACTIVE_JOB_STATUSES: readonly JobStatus[] = ["queued", "running"];

/** Terminal statuses: every partition of the completed index. */
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ["completed", "failed", "timeout", "interrupted"];

/** The agent reports `success|failure|timeout|interrupted`; the table speaks `completed|failed|…`. */
export const JOB_STATUS_FOR: Record<"success" | "failure" | "timeout" | "interrupted", JobStatus> = {
  success: "completed",
  failure: "failed",
  timeout: "timeout",
  interrupted: "interrupted",
};

/** Where each runner's config lives: `/runs-fleet/runners/{instance_id}/config`. */
export const RUNNER_PARAMETER_PATH = "/runs-fleet/runners";

export function runnerConfigParameter(instanceId: string): string {
  return `${RUNNER_PARAMETER_PATH}/${instanceId}/config`;
}

/** The instance id in `/runs-fleet/runners/{id}/…`, or null for anything else under the path. */
export function instanceIdOfParameter(name: string): string | null {
  const m = /^\/runs-fleet\/runners\/(i-[0-9a-f]{8,17})\//.exec(name);
  return m ? m[1]! : null;
}

/** The tag every fleet instance carries; TerminateInstances is granted only on it. */
export const MANAGED_TAG = { key: "runs-fleet:managed", value: "true" } as const;
/** The tag naming an instance's pool (pool_audit). */
export const POOL_TAG = "runs-fleet:pool";
