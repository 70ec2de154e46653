import { z } from "zod";
import { JOBS_TABLE } from "../shared/tables";

/**
 * The message formats of docs/parts/fleet.md, validated at the edge. A body that fails these schemas can
 * never succeed on a retry, so the consumers quarantine it instead of failing the record.
 */

/** RFC 3339 / ISO 8601 with a zone, as the agent and EventBridge Scheduler write it. */
const isoTimestamp = z.iso.datetime({ offset: true, message: "must be an ISO 8601 timestamp with a zone" });

/**
 * DynamoDB stores numbers of magnitude 1E-130 up to (not including) 1E+126, or zero. A value the
 * schema let through outside that range (5e-324, 1e200) failed UpdateItem on every retry and went
 * to the DLQ instead of quarantine, so the schema refuses it at the edge.
 */
export function storableInDynamoDb(n: number): boolean {
  const abs = Math.abs(n);
  return abs === 0 || (abs >= 1e-130 && abs < 1e126);
}

export const TERMINATION_STATUSES = ["success", "failure", "timeout", "interrupted"] as const;
export type TerminationStatus = (typeof TERMINATION_STATUSES)[number];

/** The agent's job-completion message (`pkg/agent/telemetry.go`). */
export const TerminationMessageSchema = z.object({
  instance_id: z.string().regex(/^i-[0-9a-f]{8,17}$/, "must be an EC2 instance id (i-…)"),
  // The jobs table also holds the housekeeping sweeps' cursors under this prefix: a "completion" of
  // one would mark it completed, index it and let old_jobs delete it.
  job_id: z
    .string()
    .min(1)
    .max(256)
    .refine((id) => !id.startsWith(JOBS_TABLE.sweepCursorKeyPrefix), `must not start with ${JOBS_TABLE.sweepCursorKeyPrefix} (the sweeps' cursor items)`),
  status: z.enum(TERMINATION_STATUSES),
  exit_code: z.number().int(),
  duration_seconds: z.number().min(0).refine(storableInDynamoDb, "must be 0, or between 1e-130 and 1e126 (DynamoDB's number range)"),
  started_at: isoTimestamp,
  completed_at: isoTimestamp,
  error: z.string().max(4096).optional(),
});
export type TerminationMessage = z.output<typeof TerminationMessageSchema>;

export const TASK_TYPES = ["orphaned_instances", "stale_ssm", "old_jobs", "pool_audit"] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/**
 * `params` may override a task's configured default for a one-off run (an operator sending a
 * message by hand); the schedules send `{}`. Unknown keys are refused, so a typo is quarantined
 * rather than silently ignored.
 */
export const TaskParamsSchemas = {
  orphaned_instances: z.strictObject({ max_runtime_minutes: z.number().int().min(1).max(10_080).optional() }),
  stale_ssm: z.strictObject({ min_age_minutes: z.number().int().min(0).max(10_080).optional() }),
  old_jobs: z.strictObject({ retention_days: z.number().int().min(1).max(3650).optional() }),
  pool_audit: z.strictObject({}),
} as const;

const timestamp = { timestamp: isoTimestamp };

export const HousekeepingMessageSchema = z.discriminatedUnion("task_type", [
  z.object({ task_type: z.literal("orphaned_instances"), ...timestamp, params: TaskParamsSchemas.orphaned_instances.default({}) }),
  z.object({ task_type: z.literal("stale_ssm"), ...timestamp, params: TaskParamsSchemas.stale_ssm.default({}) }),
  z.object({ task_type: z.literal("old_jobs"), ...timestamp, params: TaskParamsSchemas.old_jobs.default({}) }),
  z.object({ task_type: z.literal("pool_audit"), ...timestamp, params: TaskParamsSchemas.pool_audit.default({}) }),
]);
export type HousekeepingMessage = z.output<typeof HousekeepingMessageSchema>;

export type ParseResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** JSON then schema; the reason names every offending field, for the quarantine attribute. */
export function parseBody<S extends z.ZodType>(schema: S, body: string): ParseResult<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, reason: `body is not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  const reason = result.error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") : "body"}: ${i.message}`).join("; ");
  return { ok: false, reason: `schema: ${reason}` };
}

/** RFC 3339 in UTC at second precision: the one spelling stored, so GSI range comparisons are lexical. */
export function rfc3339(date: Date): string {
  // toISOString's `.sss` before the final Z occurs once, so the pattern needs no `$` anchor.
  return date.toISOString().replace(/\.\d{3}Z/, "Z");
}
