import type { StepLogger } from "../shared/logger";
import { z } from "zod";

/** A job message: `{job_id, type, payload, estimated_seconds?}` (docs/parts/worker.md). */
export const jobSchema = z.object({
  job_id: z.string().min(1).max(256),
  type: z.string().min(1).max(64),
  /** Required: zod 4 refuses a missing key even for `unknown` (`null` is a payload). */
  payload: z.unknown(),
  /** The producer's estimate of the run time; visibility is 2 × this (the original system's rule). */
  estimated_seconds: z.number().positive().max(43_200).optional(),
});

export type Job = z.output<typeof jobSchema>;

export type ParsedJob = { ok: true; job: Job } | { ok: false; reason: string };

/** Never throws: a message that is not a job is quarantined with the returned reason. */
export function parseJob(body: string | undefined): ParsedJob {
  let raw: unknown;
  try {
    raw = JSON.parse(body ?? "");
  } catch {
    return { ok: false, reason: "body is not JSON" };
  }
  const result = jobSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `invalid job: ${issue ? `${issue.path.join(".") || "(body)"} ${issue.message}` : "schema mismatch"}` };
  }
  return { ok: true, job: result.data };
}

/** A heartbeat extends visibility to this many heartbeat intervals, so two missed beats are survivable. */
export const HEARTBEAT_EXTENSION_FACTOR = 3;

/** What one heartbeat extension sets the visibility to, in seconds. Pure. */
export function heartbeatExtensionSeconds(limits: { heartbeatMs: number; maxVisibilitySeconds: number }): number {
  return Math.min(limits.maxVisibilitySeconds, Math.ceil((HEARTBEAT_EXTENSION_FACTOR * limits.heartbeatMs) / 1000));
}

/**
 * The original system's rule: a job safely finishes within 2 × its expected duration, clamped to a maximum;
 * without an estimate, a default. Never below one heartbeat extension: the first heartbeat comes
 * only after `heartbeatMs`, so a short estimate that the job overruns would otherwise expire
 * (and the message go to another task) before the heartbeat could extend it.
 */
export function initialVisibilitySeconds(
  estimatedSeconds: number | undefined,
  limits: { defaultVisibilitySeconds: number; maxVisibilitySeconds: number; heartbeatMs: number },
): number {
  const candidate = estimatedSeconds === undefined ? limits.defaultVisibilitySeconds : Math.ceil(estimatedSeconds * 2);
  const clamped = Math.max(1, Math.min(candidate, limits.maxVisibilitySeconds));
  return Math.max(clamped, heartbeatExtensionSeconds(limits));
}

export interface JobContext {
  job: Job;
  messageId: string;
  /** Aborted when the task must give the job back (SIGTERM past the grace period). */
  signal: AbortSignal;
  logger: StepLogger;
}

/** Resolves when the job succeeded; throws when it failed (the message is then redelivered). */
export type JobHandler = (ctx: JobContext) => Promise<void>;
