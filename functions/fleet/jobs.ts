/** Statuses a job record can have (docs/parts/fleet.md). */
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

/** Each runner's config parameter: `<path>/{instance_id}/config`. */
export function runnerConfigParameter(path: string, instanceId: string): string {
  return `${path}/${instanceId}/config`;
}

/** The instance id in `<path>/{id}/…`, or null for anything else under the path. */
export function instanceIdOfParameter(path: string, name: string): string | null {
  if (!name.startsWith(`${path}/`)) return null;
  const m = /^(i-[0-9a-f]{8,17})\//.exec(name.slice(path.length + 1));
  return m ? m[1]! : null;
}
