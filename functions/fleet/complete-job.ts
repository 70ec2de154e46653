import { type DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { JOBS_TABLE } from "../../policy/contract";
import { type ConditionFailure, conditionFailureItem, isConditionFailure } from "../shared/conditional-write";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";
import { JOB_STATUS_FOR } from "./jobs";
import { rfc3339, type TerminationMessage } from "./messages";

/** Who is completing the job, recorded in the item by the completing write. */
export interface CompletionWriter {
  /** The termination message's id: the same on every redelivery of the message. */
  messageId: string;
  /**
   * A fresh token per completion attempt. The SDK's retries of the write resend it; a redelivery,
   * or a second copy of the message processed at the same time, brings another.
   */
  attempt: string;
}

/**
 * `completed`: this attempt's write completed the job, so its metrics are this attempt's to emit;
 * `recovered` when the write applied but its response was lost and the SDK's retry failed the
 * condition on the item it had just written. `duplicate`: the job was already complete (or not
 * running), by another message or by an earlier delivery of this one (`completedBy` says which).
 */
export type CompletionOutcome =
  | { kind: "completed"; recovered: boolean }
  | { kind: "duplicate"; completedBy: string | undefined; foundStatus: string | undefined };

const DAY_SECONDS = 86_400;


/** Epoch seconds at which DynamoDB may expire the record: completion + retention. */
export function expiresAt(completedAt: string, retentionDays: number): number {
  return Math.floor(Date.parse(completedAt) / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * Marks the job complete, once. The condition (status `running`, or no status yet) makes the
 * update idempotent under at-least-once delivery: a second delivery fails the condition, and
 * that is reported as `duplicate`, a success. The write records its writer (`completed_by`,
 * `completion_attempt`) and asks for the old item when the condition fails (ALL_OLD), so a
 * condition failed by this very attempt's own write (a lost response the SDK retried) is told
 * apart from a real duplicate without a second read. One UpdateItem call either way.
 */
export async function markJobComplete(
  dynamodb: DynamoDBClient,
  table: string,
  message: TerminationMessage,
  retentionDays: number,
  writer: CompletionWriter,
  retry: ResendPolicy = DEFAULT_RESEND,
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
    "#completed_by = :completed_by",
    "#completion_attempt = :completion_attempt",
  ];
  const names: Record<string, string> = {
    "#status": "status",
    "#exit_code": "exit_code",
    "#duration": "duration_seconds",
    "#completed_at": "completed_at",
    "#started_at": "started_at",
    "#instance_id": "instance_id",
    "#ttl": JOBS_TABLE.ttlAttribute,
    "#completed_by": JOBS_TABLE.completedByAttribute,
    "#completion_attempt": JOBS_TABLE.completionAttemptAttribute,
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
    ":completed_by": { S: writer.messageId },
    ":completion_attempt": { S: writer.attempt },
  };
  if (message.error !== undefined) {
    sets.push("#error = :error");
    names["#error"] = "error";
    values[":error"] = { S: message.error };
  }
  const command = new UpdateItemCommand({
    TableName: table,
    Key: { [JOBS_TABLE.hashKey]: { S: message.job_id } },
    UpdateExpression: `SET ${sets.join(", ")}`,
    ConditionExpression: "#status = :running OR attribute_not_exists(#status)",
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
  try {
    // Re-sent with the same token after the SDK gave up: an earlier send that applied then fails
    // its condition on this attempt's own item, which resolves as this attempt's completion; the
    // redelivery (another token) could not tell whether this attempt emitted the metrics.
    await withResends(() => dynamodb.send(command), retry);
    return { kind: "completed", recovered: false };
  } catch (error) {
    if (isConditionFailure(error)) return resolveFailedCondition(error, writer);
    throw error;
  }
}

/** A failed condition: completed by this very attempt (its earlier write applied), or a duplicate. */
function resolveFailedCondition(error: ConditionFailure, writer: CompletionWriter): CompletionOutcome {
  const item = conditionFailureItem(error);
  const completedBy = item?.[JOBS_TABLE.completedByAttribute]?.S;
  if (completedBy === writer.messageId && item?.[JOBS_TABLE.completionAttemptAttribute]?.S === writer.attempt) {
    return { kind: "completed", recovered: true };
  }
  return { kind: "duplicate", completedBy, foundStatus: item?.["status"]?.S };
}
