import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";

/** `context` is the invocation's (its request id, its remaining time) when the batch was given one. */
export type SqsRecordHandler = (record: SQSRecord, context?: Context) => Promise<void>;

/** Every SQS consumer's Lambda handler: a batch in, the partial batch response out. */
export type SqsBatchHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/**
 * Runs `recordHandler` over every record; a record whose handler throws is reported in
 * batchItemFailures. A full-batch failure is reported the same way instead of throwing, so the
 * event source mapping retries exactly the failed items and the Lambda does not count as errored.
 */
export async function processSqsBatch(event: SQSEvent, recordHandler: SqsRecordHandler, context?: Context): Promise<SQSBatchResponse> {
  // A processor per invocation: it holds per-batch state, and tests invoke handlers concurrently.
  const processor = new BatchProcessor(EventType.SQS);
  return processPartialResponse(event, recordHandler, processor, {
    ...(context ? { context } : {}),
    throwOnFullBatchFailure: false,
  });
}

export function approximateReceiveCount(record: SQSRecord): number {
  const count = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isFinite(count) ? count : 0;
}

/**
 * How long ago the message was first sent, in seconds. SQS keeps `SentTimestamp` when it moves a
 * message to a DLQ, so on a DLQ this is the age that its retention is measured against.
 */
export function messageAgeSeconds(record: SQSRecord, nowMs: number): number {
  const sent = Number(record.attributes?.SentTimestamp);
  return Number.isFinite(sent) ? Math.max(0, Math.floor((nowMs - sent) / 1000)) : 0;
}

/** Memoises an async thunk so a batch shares one call, even when records run in parallel. */
export function once<T>(thunk: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => (pending ??= thunk());
}
