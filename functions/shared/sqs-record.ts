/**
 * SQS API messages → the records Lambda's SQS event source hands a function. The SDK's
 * ReceiveMessage output and Lambda's event spell the same data differently (PascalCase vs
 * camelCase attributes, Uint8Array vs base64), and handlers parse the Lambda spelling. The one
 * converter: the local event source and the integration tests' `pollOnce` build events here, and
 * the worker turns a polled message into the record the shared quarantine helper takes.
 */
import type { Message, MessageAttributeValue } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from "aws-lambda";

/**
 * What ReceiveMessage must ask for so that a record carries everything Lambda's does: system
 * attributes (receive count, timestamps, sender) and every message attribute.
 */
export const RECEIVE_ALL_ATTRIBUTES = {
  MessageSystemAttributeNames: ["All" as const],
  MessageAttributeNames: ["All"],
};

/** `arn:aws:sqs:<region>:<account>:<name>` → region (Lambda's `awsRegion` is the queue's). */
export function regionOfArn(arn: string): string {
  return arn.split(":")[3] || "us-east-1";
}

/** System attributes Lambda copies into a record only when SQS returned them (FIFO, X-Ray, redrive). */
const OPTIONAL_ATTRIBUTES = ["AWSTraceHeader", "SequenceNumber", "MessageGroupId", "MessageDeduplicationId", "DeadLetterQueueSourceArn"] as const;

export function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const attrs = message.Attributes ?? {};
  const attributes: SQSRecordAttributes = {
    ApproximateReceiveCount: attrs.ApproximateReceiveCount ?? "1",
    SentTimestamp: attrs.SentTimestamp ?? "",
    SenderId: attrs.SenderId ?? "",
    ApproximateFirstReceiveTimestamp: attrs.ApproximateFirstReceiveTimestamp ?? "",
  };
  for (const name of OPTIONAL_ATTRIBUTES) {
    const value = attrs[name];
    if (value !== undefined) attributes[name] = value;
  }
  return {
    messageId: message.MessageId ?? "",
    receiptHandle: message.ReceiptHandle ?? "",
    body: message.Body ?? "",
    attributes,
    messageAttributes: toLambdaAttributes(message.MessageAttributes ?? {}),
    md5OfBody: message.MD5OfBody ?? "",
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: regionOfArn(queueArn),
  };
}

export function toSqsEvent(messages: readonly Message[], queueArn: string): SQSEvent {
  return { Records: messages.map((m) => toSqsRecord(m, queueArn)) };
}

/**
 * Lambda spells message attributes in camelCase, sends binary values as base64, and always
 * includes the (reserved, unused) list fields as empty arrays.
 */
export function toLambdaAttributes(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes)) {
    out[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { binaryValue: Buffer.from(value.BinaryValue).toString("base64") } : {}),
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString("base64")),
      dataType: value.DataType ?? "String",
    };
  }
  return out;
}

/** `https://sqs.us-east-1.amazonaws.com/123456789012/work` → `arn:aws:sqs:us-east-1:123456789012:work`. */
export function queueArnFromUrl(url: string): string {
  const u = new URL(url);
  const [, account, name] = u.pathname.split("/");
  const region = /sqs\.([a-z0-9-]+)\./.exec(u.hostname)?.[1] ?? "unknown";
  return `arn:aws:sqs:${region}:${account ?? "unknown"}:${name ?? "unknown"}`;
}

/** A message's ApproximateReceiveCount, 0 when SQS did not return it. */
export function receiveCount(message: Message): number {
  const n = Number(message.Attributes?.ApproximateReceiveCount);
  return Number.isFinite(n) ? n : 0;
}
