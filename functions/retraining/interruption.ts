import { z } from "zod";
import { RELAUNCH_OF_ENV, STARTED_BY } from "./ecs";
import { MODEL_NAME_PATTERN } from "../shared/patterns";
import { TASK_ARN_PATTERN, TRIGGERS, type Trigger } from "./message";

/**
 * An "ECS Task State Change" event as EventBridge delivers it to the interruptions queue (the
 * body is the event's JSON): the fields the relaunch reads. Extra keys are ignored.
 * https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs_task_events.html
 */
const EnvEntry = z.object({ name: z.string(), value: z.string() });
export const TaskStateChangeSchema = z.looseObject({
  source: z.literal("aws.ecs"),
  "detail-type": z.literal("ECS Task State Change"),
  detail: z.looseObject({
    clusterArn: z.string(),
    taskArn: z.string().regex(TASK_ARN_PATTERN, "must be an ECS task ARN"),
    lastStatus: z.string(),
    stopCode: z.string().optional(),
    startedBy: z.string().optional(),
    overrides: z
      .looseObject({ containerOverrides: z.array(z.looseObject({ name: z.string().optional(), environment: z.array(EnvEntry).optional() })).default([]) })
      .default({ containerOverrides: [] }),
  }),
});

/** What the relaunch consumer does with one event. Pure outcome of {@link decideRelaunch}. */
export type RelaunchDecision =
  /** Ask the launcher to run the job again, on FARGATE, under the origin `relaunch-<task id>`. */
  | { kind: "relaunch"; taskArn: string; origin: string; modelName: string; trigger: Trigger; jobId: string }
  /** Not one to relaunch; logged and counted, not an error. */
  | { kind: "skip"; reason: "not_spot_interruption" | "not_a_launcher_task" | "other_cluster" | "relaunch_interrupted"; taskArn: string }
  /** A body that can never be relaunched: quarantined with the reason. */
  | { kind: "malformed"; reason: string };

/** `relaunch-` and the task's 32-hex id: a valid launcher origin (≤ 64 of `[A-Za-z0-9_-]`), the same for every copy of the event. */
export function relaunchOrigin(taskArn: string): string {
  return `relaunch-${taskArn.slice(taskArn.lastIndexOf("/") + 1)}`;
}

/**
 * Decides from the event body. The rule already matches this cluster, STOPPED, SpotInterruption and
 * the launcher's startedBy; the checks are repeated because a queue is no proof of its sender's
 * filter (a redrive, a test message). A task that is itself a relaunch (its RELAUNCH_OF override) is
 * not relaunched again: a relaunch runs on FARGATE, so a second interruption means something other
 * than Spot capacity, which an operator should see. Pure.
 */
export function decideRelaunch(body: string, clusterArn: string): RelaunchDecision {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { kind: "malformed", reason: `invalid_json: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = TaskStateChangeSchema.safeParse(json);
  if (!parsed.success)
    return {
      kind: "malformed",
      reason: `not_a_task_state_change: ${parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")}`,
    };
  const { detail } = parsed.data;
  const taskArn = detail.taskArn;
  if (detail.clusterArn !== clusterArn) return { kind: "skip", reason: "other_cluster", taskArn };
  if (detail.lastStatus !== "STOPPED" || detail.stopCode !== "SpotInterruption") return { kind: "skip", reason: "not_spot_interruption", taskArn };
  if (detail.startedBy !== STARTED_BY) return { kind: "skip", reason: "not_a_launcher_task", taskArn };
  const env = new Map(detail.overrides.containerOverrides.flatMap((c) => c.environment ?? []).map((e) => [e.name, e.value] as const));
  if (env.has(RELAUNCH_OF_ENV)) return { kind: "skip", reason: "relaunch_interrupted", taskArn };
  const modelName = env.get("MODEL_NAME") ?? "";
  const trigger = env.get("RETRAINING_TRIGGER") ?? "";
  const jobId = env.get("JOB_ID") ?? "";
  if (!MODEL_NAME_PATTERN.test(modelName))
    return { kind: "malformed", reason: `missing_launch_overrides: MODEL_NAME ${JSON.stringify(modelName)} of ${taskArn}` };
  if (!(TRIGGERS as readonly string[]).includes(trigger))
    return { kind: "malformed", reason: `missing_launch_overrides: RETRAINING_TRIGGER ${JSON.stringify(trigger)} of ${taskArn}` };
  if (!/^[0-9a-f-]{36}$/.test(jobId)) return { kind: "malformed", reason: `missing_launch_overrides: JOB_ID ${JSON.stringify(jobId)} of ${taskArn}` };
  return { kind: "relaunch", taskArn, origin: relaunchOrigin(taskArn), modelName, trigger: trigger as Trigger, jobId };
}
