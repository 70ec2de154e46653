import { type DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { JOBS_TABLE } from "../../policy/contract";
import { JOB_STATUS_FOR } from "./jobs";
import { rfc3339, type TerminationMessage } from "./messages";

export type CompletionOutcome = "completed" | "duplicate";

const DAY_SECONDS = 86_400;

/** Epoch seconds at which DynamoDB may expire the record: completion + retention. */
export function expiresAt(completedAt: string, retentionDays: number): number {
  return Math.floor(Date.parse(completedAt) / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * Marks the job complete, once. The condition (status `running`, or no status yet) makes the
 * update idempotent under at-least-once delivery: a second delivery fails the condition, and
 * that is reported as `duplicate`, a success. One UpdateItem call either way.
 */
export async function markJobComplete(
  dynamodb: DynamoDBClient,
  table: string,
  message: TerminationMessage,
  retentionDays: number,
): Promise<CompletionOutcome> {
  const completedAt = rfc3339(new Date(message.completed_at));
  const sets = [
    "#status = :status",
    "#exit_code = :exit_code",
    "#duration = :duration",
    "#completed_at = :completed_at",
    "#started_at = if_not_exists(#started_at, :started_at)",
    "#instance_id = :instance_id",
    `#ttl = :ttl`,
  ];
  const names: Record<string, string> = {
    "#status": "status",
    "#exit_code": "exit_code",
    "#duration": "duration_seconds",
    "#completed_at": "completed_at",
    "#started_at": "started_at",
    "#instance_id": "instance_id",
    "#ttl": JOBS_TABLE.ttlAttribute,
  };
  const values: Record<string, { S: string } | { N: string }> = {
    ":status": { S: JOB_STATUS_FOR[message.status] },
    ":exit_code": { N: String(message.exit_code) },
    ":duration": { N: String(message.duration_seconds) },
    ":completed_at": { S: completedAt },
    ":started_at": { S: rfc3339(new Date(message.started_at)) },
    ":instance_id": { S: message.instance_id },
    ":ttl": { N: String(expiresAt(completedAt, retentionDays)) },
    ":running": { S: "running" },
  };
  if (message.error !== undefined) {
    sets.push("#error = :error");
    names["#error"] = "error";
    values[":error"] = { S: message.error };
  }
  try {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { [JOBS_TABLE.hashKey]: { S: message.job_id } },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "#status = :running OR attribute_not_exists(#status)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return "completed";
  } catch (error) {
    if (error instanceof Error && error.name === "ConditionalCheckFailedException") return "duplicate";
    throw error;
  }
}
