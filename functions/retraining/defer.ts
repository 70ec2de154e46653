import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSMessageAttributes, SQSRecord } from "aws-lambda";
import { errorMessage } from "../shared/logger";
import { reasonAttribute } from "../shared/quarantine";

/**
 * A message that must wait (cap full, lease busy) is re-sent to its own queue with a delay and
 * the original acknowledged, instead of being failed: a failure would come back only after the
 * visibility timeout and spend one of maxReceiveCount receives, so a good message would reach the
 * DLQ whenever the cap stayed full for long. These two attributes travel with each copy.
 */
export const ORIGIN_ATTRIBUTE = "retraining-origin-message-id";
export const DEFERRALS_ATTRIBUTE = "retraining-deferrals";

/** SendMessageBatch limits: 10 entries; the payload budget is the classic 256 KiB (safe on every queue). */
export const MAX_BATCH_ENTRIES = 10;
export const MAX_BATCH_BYTES = 256 * 1024;

/** Where a message comes from: the id of the message first received, and how often it was deferred. */
export interface Lineage {
  originMessageId: string;
  deferrals: number;
}

/**
 * An origin id becomes RunTask's clientToken (at most 64 ASCII characters) and the job id's
 * seed; SQS message ids are UUIDs. A value that could not be one is ignored rather than trusted.
 */
const ORIGIN_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The lineage a record carries, or a fresh one (its own id, no deferrals) for a first delivery. */
export function lineageOf(record: SQSRecord): Lineage {
  const attrs = record.messageAttributes ?? {};
  const origin = attrs[ORIGIN_ATTRIBUTE]?.stringValue;
  const count = Number(attrs[DEFERRALS_ATTRIBUTE]?.stringValue);
  return {
    originMessageId: origin !== undefined && ORIGIN_ID.test(origin) ? origin : record.messageId,
    deferrals: Number.isSafeInteger(count) && count > 0 ? count : 0,
  };
}

/**
 * The record's own attributes in the SQS API's spelling (Lambda delivers them camelCase, binary
 * as base64), minus the lineage ones, which the copy gets afresh. List values are reserved by
 * SQS and never set, so they are not carried.
 */
export function carriedAttributes(attributes: SQSMessageAttributes): Record<string, MessageAttributeValue> {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, a] of Object.entries(attributes)) {
    if (name === ORIGIN_ATTRIBUTE || name === DEFERRALS_ATTRIBUTE) continue;
    const value: MessageAttributeValue = { DataType: a.dataType };
    if (a.stringValue !== undefined) value.StringValue = a.stringValue;
    if (a.binaryValue !== undefined) value.BinaryValue = Buffer.from(a.binaryValue, "base64");
    out[name] = value;
  }
  return out;
}

/** The copy of a deferred record, without the batch entry id. */
export function deferredCopy(record: SQSRecord, lineage: Lineage, delaySeconds: number): Omit<SendMessageBatchRequestEntry, "Id"> {
  return {
    MessageBody: record.body,
    DelaySeconds: delaySeconds,
    MessageAttributes: {
      ...carriedAttributes(record.messageAttributes ?? {}),
      [ORIGIN_ATTRIBUTE]: { DataType: "String", StringValue: lineage.originMessageId },
      [DEFERRALS_ATTRIBUTE]: { DataType: "Number", StringValue: String(lineage.deferrals + 1) },
    },
  };
}

/** What SQS counts toward a message's size: the body plus each attribute's name, type and value. */
export function entryBytes(entry: Omit<SendMessageBatchRequestEntry, "Id">): number {
  let bytes = Buffer.byteLength(entry.MessageBody ?? "", "utf8");
  for (const [name, v] of Object.entries(entry.MessageAttributes ?? {})) {
    bytes += Buffer.byteLength(name, "utf8") + Buffer.byteLength(v.DataType ?? "", "utf8");
    bytes += v.StringValue !== undefined ? Buffer.byteLength(v.StringValue, "utf8") : (v.BinaryValue?.byteLength ?? 0);
  }
  return bytes;
}

/** Splits entries (in order) into SendMessageBatch calls of at most 10 entries and 256 KiB; an oversized entry goes alone. Pure. */
export function chunkEntries<T>(items: readonly T[], bytesOf: (item: T) => number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const bytes = bytesOf(item);
    if (current.length > 0 && (current.length === MAX_BATCH_ENTRIES || size + bytes > MAX_BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export interface DeferRequest {
  record: SQSRecord;
  lineage: Lineage;
}

/** Per record (by message id): undefined when its copy was accepted, else why not. */
export type ResendOutcome = Map<string, string | undefined>;

/**
 * Sends a delayed copy of each record to `queueUrl` with SendMessageBatch. An entry SQS refuses,
 * or every entry of a call that throws, gets its reason; those records must be reported as batch
 * item failures, so they come back by normal redelivery and nothing is lost.
 */
export async function resendDeferred(sqs: SQSClient, queueUrl: string, requests: readonly DeferRequest[], delaySeconds: number): Promise<ResendOutcome> {
  const outcome: ResendOutcome = new Map();
  const entries = requests.map((r) => ({ messageId: r.record.messageId, copy: deferredCopy(r.record, r.lineage, delaySeconds) }));
  for (const chunk of chunkEntries(entries, (e) => entryBytes(e.copy))) {
    // Entry ids only need to be unique within one call; message ids may hold characters SQS refuses there.
    const byEntryId = new Map(chunk.map((e, i) => [`d${i}`, e.messageId] as const));
    try {
      const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk.map((e, i) => ({ Id: `d${i}`, ...e.copy })) }));
      const ok = new Set((out?.Successful ?? []).map((s) => s.Id));
      const refused = new Map((out?.Failed ?? []).map((f) => [f.Id, `${f.Code ?? "error"}: ${f.Message ?? "refused"}`] as const));
      for (const [id, messageId] of byEntryId) {
        // An entry SQS reports neither way is not known to be sent, so it counts as failed.
        outcome.set(messageId, ok.has(id) ? undefined : (refused.get(id) ?? "not acknowledged by SendMessageBatch"));
      }
    } catch (error) {
      for (const messageId of byEntryId.values()) outcome.set(messageId, errorMessage(error));
    }
  }
  return outcome;
}

/** Why the launcher dead-lettered a message itself, and the id of the message it came from. */
export const DEAD_LETTER_REASON_ATTRIBUTE = "dead-letter-reason";
export const SOURCE_MESSAGE_ID_ATTRIBUTE = "source-message-id";

/**
 * Sends `record` to the DLQ with its lineage stamped on (origin id, deferral count unchanged) and
 * why. SQS gives a redriven message a new id, so a message that reaches the DLQ by SQS's own move
 * comes back as a stranger; this copy comes back carrying its origin, and its launch intent finds
 * it. Throws when SQS refuses it (e.g. over 10 attributes): the caller then lets SQS move it.
 */
export async function deadLetterStamped(sqs: SQSClient, dlqUrl: string, record: SQSRecord, lineage: Lineage, reason: string): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: record.body,
      MessageAttributes: {
        ...carriedAttributes(record.messageAttributes ?? {}),
        [ORIGIN_ATTRIBUTE]: { DataType: "String", StringValue: lineage.originMessageId },
        [DEFERRALS_ATTRIBUTE]: { DataType: "Number", StringValue: String(lineage.deferrals) },
        [DEAD_LETTER_REASON_ATTRIBUTE]: { DataType: "String", StringValue: reasonAttribute(reason) },
        [SOURCE_MESSAGE_ID_ATTRIBUTE]: { DataType: "String", StringValue: record.messageId },
      },
    }),
  );
}
