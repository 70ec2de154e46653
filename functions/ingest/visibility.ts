import { ChangeMessageVisibilityBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { errorMessage } from "../shared/logger";

/** ChangeMessageVisibilityBatch takes at most 10 entries. */
export const VISIBILITY_BATCH = 10;

export interface VisibilityChange {
  record: SQSRecord;
  seconds: number;
}

/**
 * Sets each record's visibility timeout with one ChangeMessageVisibilityBatch per 10 records (each
 * entry keeps its own timeout), and returns why each change that did not happen failed, by message
 * id. A batch call that fails as a whole fails all its entries; nothing is thrown, because a record
 * whose change failed is still reported failed by its handler and only comes back later than asked.
 */
export async function changeVisibilityInBatches(sqs: SQSClient, queueUrl: string, changes: readonly VisibilityChange[]): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  for (let i = 0; i < changes.length; i += VISIBILITY_BATCH) {
    const chunk = changes.slice(i, i + VISIBILITY_BATCH);
    try {
      const out = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map(({ record, seconds }, j) => ({ Id: String(j), ReceiptHandle: record.receiptHandle, VisibilityTimeout: seconds })),
        }),
      );
      for (const f of out.Failed ?? []) {
        const change = chunk[Number(f.Id)];
        if (change) failures.set(change.record.messageId, `${f.Code ?? "?"}: ${f.Message ?? ""}`);
      }
    } catch (error) {
      for (const { record } of chunk) failures.set(record.messageId, errorMessage(error));
    }
  }
  return failures;
}
