import type { SQSEvent, SQSRecord } from "aws-lambda";

export const INGEST_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:ingest";

export function validPayload(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { sessionId: "s1", userId: "u1", windowIndex: 0, frameCount: 30, ...overrides };
}

let counter = 0;

/** An SQS record as Lambda delivers it; `body` may be an object (JSON-encoded) or a raw string. */
export function sqsRecord(body: string | Record<string, unknown> = validPayload(), overrides: Partial<SQSRecord> = {}): SQSRecord {
  counter += 1;
  return {
    messageId: `m${counter}`,
    receiptHandle: `r${counter}`,
    body: typeof body === "string" ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: "1",
      SentTimestamp: "1700000000000",
      SenderId: "AIDAEXAMPLE",
      ApproximateFirstReceiveTimestamp: "1700000000001",
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: INGEST_QUEUE_ARN,
    awsRegion: "us-east-1",
    ...overrides,
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}
