import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { conditionalWrite } from "../shared/conditional-write";
import type { Trigger } from "./message";

export interface LaunchRecord {
  modelName: string;
  taskArn: string;
  jobId: string;
  trigger: Trigger;
  /** The origin message id: the writer's identity. */
  messageId: string;
  /** Epoch ms of the launch (its intent's completion): orders launches of one model. */
  launchedAtMs: number;
  /** Epoch ms of this write. */
  nowMs: number;
  /** A relaunch: the task Spot interrupted, kept beside the new one (`relaunched_from`). */
  relaunchedFrom?: string;
}

/** `recorded`: this write, or its own earlier try whose response was lost; `superseded`: a later launch of the model is recorded. */
export type RecordResult = { kind: "recorded" } | { kind: "superseded"; by: string };

/**
 * Seed 001's state record: each model's latest launch, written with UpdateItem so other
 * attributes of the model's row survive. Conditional on not being older than the launch already
 * recorded (`launched_at`), so a late or repeated write (a retry, a duplicate repairing a record
 * that failed earlier) never replaces a newer launch; a failed condition is resolved by the
 * item's `message_id`.
 */
export async function recordLaunch(db: DynamoDBDocumentClient, table: string, r: LaunchRecord): Promise<RecordResult> {
  const outcome = await conditionalWrite(
    db,
    new UpdateCommand({
      TableName: table,
      Key: { model_name: r.modelName },
      // Both attempts of a relaunched job: the new task, and the interrupted one it replaces. A plain launch clears the latter.
      UpdateExpression: `SET task_arn = :task_arn, job_id = :job_id, trigger_type = :trigger_type, started_at = :started_at, #status = :status, updated_at = :updated_at, message_id = :message_id, launched_at = :launched_at${r.relaunchedFrom ? ", relaunched_from = :relaunched_from" : " REMOVE relaunched_from"}`,
      ConditionExpression: "attribute_not_exists(launched_at) OR launched_at <= :launched_at",
      // `status` is a DynamoDB reserved word.
      ExpressionAttributeNames: { "#status": "status" },
      ExpressionAttributeValues: {
        ":task_arn": r.taskArn,
        ":job_id": r.jobId,
        ":trigger_type": r.trigger,
        ":started_at": isoUtc(new Date(r.launchedAtMs)),
        ":updated_at": isoUtc(new Date(r.nowMs)),
        ":status": "running",
        ":message_id": r.messageId,
        ":launched_at": r.launchedAtMs,
        ...(r.relaunchedFrom ? { ":relaunched_from": r.relaunchedFrom } : {}),
      },
    }),
  );
  if (outcome.applied || outcome.old?.message_id === r.messageId) return { kind: "recorded" };
  return { kind: "superseded", by: typeof outcome.old?.message_id === "string" ? outcome.old.message_id : "" };
}

/** `2024-01-01T12:00:00+00:00`: the original system's Python isoformat, seconds precision, explicit UTC offset. */
export function isoUtc(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "+00:00");
}
