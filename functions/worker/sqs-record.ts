import type { Message } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";

/**
 * The shared quarantine helper speaks Lambda's SQSRecord; a polled message carries the same
 * facts under SDK names. Only the fields quarantine reads need to be real.
 */
export function asSqsRecord(message: Message, queueArn: string): SQSRecord {
  return {
    messageId: message.MessageId ?? "unknown",
    receiptHandle: message.ReceiptHandle ?? "",
    body: message.Body ?? "",
    attributes: {
      ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? "0",
      SentTimestamp: message.Attributes?.SentTimestamp ?? "0",
      SenderId: message.Attributes?.SenderId ?? "",
      ApproximateFirstReceiveTimestamp: message.Attributes?.ApproximateFirstReceiveTimestamp ?? "0",
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(":")[3] ?? "",
  };
}

/** `https://sqs.us-east-1.amazonaws.com/123456789012/work` → `arn:aws:sqs:us-east-1:123456789012:work`. */
export function queueArnFromUrl(url: string): string {
  const u = new URL(url);
  const [, account, name] = u.pathname.split("/");
  const region = /sqs\.([a-z0-9-]+)\./.exec(u.hostname)?.[1] ?? "unknown";
  return `arn:aws:sqs:${region}:${account ?? "unknown"}:${name ?? "unknown"}`;
}

export function receiveCount(message: Message): number {
  const n = Number(message.Attributes?.ApproximateReceiveCount);
  return Number.isFinite(n) ? n : 0;
}
