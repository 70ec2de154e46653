import { BatchGetCommand, type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { Trigger } from "./message";

/** BatchGetItem takes at most 100 keys; unprocessed keys are re-asked this many times. */
const BATCH_GET_LIMIT = 100;
const UNPROCESSED_RETRIES = 3;

/**
 * For each model, the message id of its latest recorded launch, read once per batch with
 * consistent BatchGetItem calls. The record keeps only the latest launch per model, so this
 * catches the common redelivery (the Lambda acknowledged too late, or SQS delivered twice);
 * ECS's clientToken covers the rest. Keys DynamoDB leaves unprocessed after the retries make
 * the call fail, so the batch is retried rather than launching blind.
 */
export async function latestLaunchedMessageIds(db: DynamoDBDocumentClient, table: string, modelNames: readonly string[]): Promise<Map<string, string>> {
  const launched = new Map<string, string>();
  const unique = [...new Set(modelNames)];
  for (let i = 0; i < unique.length; i += BATCH_GET_LIMIT) {
    let keys: Record<string, unknown>[] = unique.slice(i, i + BATCH_GET_LIMIT).map((model_name) => ({ model_name }));
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt > UNPROCESSED_RETRIES) throw new Error(`state table left ${keys.length} key(s) unprocessed after ${UNPROCESSED_RETRIES} retries`);
      const out = await db.send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: keys, ProjectionExpression: "model_name, message_id", ConsistentRead: true } },
        }),
      );
      for (const item of out.Responses?.[table] ?? []) {
        if (typeof item.model_name === "string" && typeof item.message_id === "string") launched.set(item.model_name, item.message_id);
      }
      keys = out.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return launched;
}

export interface LaunchRecord {
  modelName: string;
  taskArn: string;
  jobId: string;
  trigger: Trigger;
  messageId: string;
  /** ISO-8601 with offset, as the original system's record shows. */
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

/** `2024-01-01T12:00:00+00:00`: the original system's Python isoformat, seconds precision, explicit UTC offset. */
export function isoUtc(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "+00:00");
}
