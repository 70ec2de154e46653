import { z } from "zod";
import { MODEL_NAME_PATTERN, MODEL_NAME_RULE } from "../shared/patterns";

export const TRIGGERS = ["scheduled", "drift_detected", "manual"] as const;
export type Trigger = (typeof TRIGGERS)[number];

/**
 * The model name becomes an ECS tag value and a container env var, so it is held to ECS's tag
 * character set (letters, digits, spaces and `_ . : / = + - @`, at most 256) and must start with a
 * letter or digit, so the strategy segment before the first `-` is never empty. A name outside
 * this set would fail RunTask on every retry; rejecting it here quarantines it at once instead.
 */

/**
 * An ECS task ARN in the long format, `arn:aws:ecs:<region>:<account>:task/<cluster>/<id>`: ECS's
 * ids are 32 hex digits; a UUID with dashes (moto's, and ECS's before the format change) is taken too.
 */
export const TASK_ARN_PATTERN =
  /^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:task\/[A-Za-z0-9_-]{1,255}\/(?:[a-f0-9]{32}|[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})$/;
const JOB_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Extra keys are ignored: producers may add context the launcher does not use. */
export const RetrainingMessageSchema = z.looseObject({
  model_name: z.string().regex(MODEL_NAME_PATTERN, `must be ${MODEL_NAME_RULE}`),
  trigger: z.enum(TRIGGERS),
  /**
   * Set only by the relaunch consumer (relaunch-handler.ts): this request relaunches a task that
   * Fargate Spot interrupted, on FARGATE, under the same job id.
   */
  relaunch_of: z
    .strictObject({
      task_arn: z.string().regex(TASK_ARN_PATTERN, "must be an ECS task ARN"),
      job_id: z.string().regex(JOB_ID_PATTERN, "must be a job id (UUID)"),
    })
    .optional(),
});

export interface RetrainingMessage {
  modelName: string;
  trigger: Trigger;
  /** A relaunch of an interrupted task: its ARN and job id. */
  relaunchOf?: { taskArn: string; jobId: string };
}

/** Why a body can never launch a task; the reason travels with the quarantined message. */
export type QuarantineReason = "invalid_json" | "not_an_object" | "missing_model_name" | "invalid_model_name" | "invalid_trigger" | "invalid_relaunch";

export type MessageParseResult = { ok: true; message: RetrainingMessage } | { ok: false; reason: QuarantineReason; detail: string };

export function parseRetrainingMessage(body: string): MessageParseResult {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, reason: "invalid_json", detail: error instanceof Error ? error.message : String(error) };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { ok: false, reason: "not_an_object", detail: `body is ${Array.isArray(json) ? "an array" : typeof json}` };
  }
  const result = RetrainingMessageSchema.safeParse(json);
  if (result.success) {
    const { model_name: modelName, trigger, relaunch_of: relaunch } = result.data;
    return { ok: true, message: { modelName, trigger, ...(relaunch ? { relaunchOf: { taskArn: relaunch.task_arn, jobId: relaunch.job_id } } : {}) } };
  }
  const first = result.error.issues[0];
  const field = first?.path[0];
  const detail = result.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ");
  if (field === "model_name") {
    const missing = !("model_name" in json) || (json as Record<string, unknown>).model_name === "";
    return { ok: false, reason: missing ? "missing_model_name" : "invalid_model_name", detail };
  }
  if (field === "relaunch_of") return { ok: false, reason: "invalid_relaunch", detail };
  return { ok: false, reason: "invalid_trigger", detail };
}

/** Seed 001: the strategy is the model name's segment before the first `-`, as written. */
export function strategyOf(modelName: string): string {
  return modelName.split("-", 1)[0] ?? modelName;
}
