import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { settleBatch } from "../../../local/hosts/event-source";
import { RECEIVE_ALL_ATTRIBUTES, toSqsEvent } from "../../../functions/shared/sqs-record";
import type { SqsBatchHandler } from "../../../functions/shared/sqs";

export interface MappingTarget {
  queueUrl: string;
  queueArn: string;
  batchSize?: number;
}

export interface InvocationResult {
  event: SQSEvent;
  response: SQSBatchResponse;
  deleted: string[];
}

/**
 * What Lambda's SQS event source mapping does (moto cannot invoke Lambdas): receive a batch,
 * invoke the handler with the SQS event, and delete only the records not reported in
 * batchItemFailures. Returns null when the queue had nothing to receive.
 */
export async function pollOnce(sqs: SQSClient, target: MappingTarget, handler: SqsBatchHandler): Promise<InvocationResult | null> {
  const received = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: target.queueUrl,
      MaxNumberOfMessages: target.batchSize ?? 10,
      ...RECEIVE_ALL_ATTRIBUTES,
      WaitTimeSeconds: 0,
    }),
  );
  const messages = received.Messages ?? [];
  if (messages.length === 0) return null;

  const event: SQSEvent = toSqsEvent(messages, target.queueArn);
  const response = await handler(event);

  // The local runtime's rule for what a response deletes (an invalid one deletes nothing).
  const settled = new Set(
    settleBatch(
      { kind: "ok", response, durationMs: 0 },
      messages.map((m) => m.MessageId ?? ""),
      true,
    ).delete,
  );
  const toDelete = messages.filter((m) => settled.has(m.MessageId ?? ""));
  if (toDelete.length > 0) {
    const out = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: target.queueUrl,
        Entries: toDelete.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    if (out.Failed?.length) throw new Error(`delete failed: ${JSON.stringify(out.Failed)}`);
  }
  return { event, response, deleted: toDelete.map((m) => m.MessageId ?? "") };
}
