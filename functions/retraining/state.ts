import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { Trigger } from "./message";

/**
 * Whether the model's state record already names this message's launch. The record keeps only
 * the latest launch per model, so this catches the common redelivery (the Lambda acknowledged
 * too late, or SQS delivered twice); ECS's clientToken covers the rest.
 */
export async function alreadyLaunched(db: DynamoDBDocumentClient, table: string, modelName: string, messageId: string): Promise<boolean> {
  const out = await db.send(
    new GetCommand({
      TableName: table,
      Key: { model_name: modelName },
      ProjectionExpression: "message_id",
      ConsistentRead: true,
    }),
  );
  return out.Item?.message_id === messageId;
}

export interface LaunchRecord {
  modelName: string;
  taskArn: string;
  jobId: string;
  trigger: Trigger;
  messageId: string;
  /** ISO-8601 with offset, as the seed's record shows. */
  now: string;
}

/** Seed 001's state record, written with UpdateItem so other attributes of the model's row survive. */
export async function recordLaunch(db: DynamoDBDocumentClient, table: string, r: LaunchRecord): Promise<void> {
  await db.send(
    new UpdateCommand({
      TableName: table,
      Key: { model_name: r.modelName },
      UpdateExpression:
        "SET task_arn = :task_arn, job_id = :job_id, trigger_type = :trigger_type, started_at = :now, #status = :status, updated_at = :now, message_id = :message_id",
      // `status` is a DynamoDB reserved word.
      ExpressionAttributeNames: { "#status": "status" },
      ExpressionAttributeValues: {
        ":task_arn": r.taskArn,
        ":job_id": r.jobId,
        ":trigger_type": r.trigger,
        ":now": r.now,
        ":status": "running",
        ":message_id": r.messageId,
      },
    }),
  );
}

/** `2024-01-01T12:00:00+00:00`: the seed's Python isoformat, seconds precision, explicit UTC offset. */
export function isoUtc(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "+00:00");
}
