import { BatchWriteItemCommand, type DynamoDBClient, paginateQuery, type WriteRequest } from "@aws-sdk/client-dynamodb";
import { logStep } from "../../shared/logger";
import { chunks } from "../budget";
import { JOBS_TABLE } from "../../shared/tables";
import { TERMINAL_JOB_STATUSES } from "../jobs";
import { rfc3339 } from "../messages";
import { MetricUnit } from "../telemetry";
import type { Task } from "./types";

/** BatchWriteItem takes at most 25 requests. */
export const DELETE_BATCH_SIZE = 25;
/** Re-submissions of UnprocessedItems before the rest is left for the next run. */
export const MAX_UNPROCESSED_ATTEMPTS = 5;

export function oldJobsCutoff(now: Date, retentionDays: number): string {
  return rfc3339(new Date(now.getTime() - retentionDays * 86_400_000));
}

/**
 * One batch delete, re-submitting UnprocessedItems. Throttling of the call itself is retried by
 * the SDK; UnprocessedItems are not errors, so the SDK does not retry them. They are re-sent at
 * most MAX_UNPROCESSED_ATTEMPTS times; whatever still remains stays in the table, where the next
 * run's Query finds it again. Returns how many delete requests DynamoDB accepted (`deleteRequests`):
 * BatchWriteItem does not say whether a key still existed, so a record that TTL removed after the
 * (eventually consistent) index Query listed it is counted too.
 */
export async function batchDelete(dynamodb: DynamoDBClient, table: string, jobIds: string[]): Promise<{ deleteRequests: number; unprocessed: number }> {
  let pending: WriteRequest[] = jobIds.map((id) => ({ DeleteRequest: { Key: { [JOBS_TABLE.hashKey]: { S: id } } } }));
  for (let attempt = 0; attempt < MAX_UNPROCESSED_ATTEMPTS && pending.length > 0; attempt++) {
    const out = await dynamodb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
    pending = out.UnprocessedItems?.[table] ?? [];
  }
  return { deleteRequests: jobIds.length - pending.length, unprocessed: pending.length };
}

/**
 * Jobs completed before now − retention, found by a Query per terminal status on the
 * status/completed_at index (no Scan), deleted 25 at a time. The TTL set on completion normally
 * expires them first; this is the backstop (TTL deletion may lag by days).
 *
 * `JobRecordsArchived` (the original system's metric name, kept for its dashboards) is the number of DELETE
 * REQUESTS ISSUED and accepted, not of records that existed: an exact count would need a
 * DeleteItem with ReturnValues per record (25x the calls, plus dynamodb:DeleteItem) for a
 * difference that only exists while TTL and this task race on the same record.
 */
export const oldJobs: Task<{ retention_days?: number | undefined }> = async (deps, params, budget) => {
  const retentionDays = params.retention_days ?? deps.config.retentionDays;
  const cutoff = oldJobsCutoff(deps.now(), retentionDays);
  let deleteRequests = 0;
  let unprocessed = 0;
  let complete = true;
  // At least one batch is deleted per run before the budget may stop it: a Query page slower than
  // the whole budget used to end a run having deleted nothing, every run. No cursor is needed to
  // go on: a deleted record leaves the index, so the next run's Query starts where this one stopped.
  let acted = false;
  statuses: for (const status of TERMINAL_JOB_STATUSES) {
    if (acted && budget.exhausted()) {
      complete = false;
      break;
    }
    const pages = paginateQuery(
      { client: deps.dynamodb, pageSize: 100 },
      {
        TableName: deps.config.jobsTable,
        IndexName: JOBS_TABLE.completedIndex.name,
        KeyConditionExpression: "#status = :status AND #completed_at < :cutoff",
        ExpressionAttributeNames: { "#status": "status", "#completed_at": "completed_at", "#job_id": JOBS_TABLE.hashKey },
        ExpressionAttributeValues: { ":status": { S: status }, ":cutoff": { S: cutoff } },
        ProjectionExpression: "#job_id",
        Limit: 100,
      },
    );
    for await (const page of pages) {
      const ids = page.Items?.map((i) => i[JOBS_TABLE.hashKey]?.S).filter((id): id is string => id !== undefined) ?? [];
      for (const batch of chunks(ids, DELETE_BATCH_SIZE)) {
        if (acted && budget.exhausted()) {
          complete = false;
          break statuses;
        }
        const r = await batchDelete(deps.dynamodb, deps.config.jobsTable, batch);
        deleteRequests += r.deleteRequests;
        unprocessed += r.unprocessed;
        acted = true;
      }
      // Before asking for another page (which may take the rest of the budget and more).
      if (acted && budget.exhausted() && page.LastEvaluatedKey !== undefined) {
        complete = false;
        break statuses;
      }
    }
  }
  if (unprocessed > 0) logStep(deps.logger, "warn", "old_jobs_unprocessed", { unprocessed, cutoff });
  logStep(deps.logger, "info", "old_jobs_deleted", { delete_requests: deleteRequests, cutoff, retention_days: retentionDays });
  deps.metrics.addMetric("JobRecordsArchived", MetricUnit.Count, deleteRequests);
  return { complete: complete && unprocessed === 0, deleteRequests, unprocessed };
};
