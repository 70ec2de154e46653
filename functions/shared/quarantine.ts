import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { logStep, type StepLogger } from "./logger";
import { countOne, type MetricsSink } from "./metrics";

export interface Telemetry {
  logger: StepLogger;
  metrics: MetricsSink;
}

/** Characters SQS refuses in a message (XML 1.0's set): controls, lone surrogates, U+FFFE and U+FFFF. */
const SQS_REFUSED = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
/** A reason longer than this is cut: it names a field or quotes a value, and the copy must stay within SQS's size limit. */
export const MAX_REASON_CHARS = 1024;

/**
 * The reason as an attribute SQS accepts. Reasons quote the body (JSON.parse's message cuts a
 * snippet of it, and can cut an emoji's surrogate pair in half; a schema error may quote a
 * 256 KiB value), and a refused SendMessage would leave the message to be retried forever.
 */
export function reasonAttribute(reason: string): string {
  const safe = reason.replace(SQS_REFUSED, "\uFFFD");
  if (safe.length <= MAX_REASON_CHARS) return safe;
  const cut = safe.slice(0, MAX_REASON_CHARS - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

/**
 * Moves a message that can never succeed to `queueUrl` with the reason attached, so it is not
 * retried forever yet is not lost. Resolving means the caller may acknowledge the record;
 * if SendMessage fails this throws, and the record must be reported as a batch item failure.
 */
export async function quarantine(sqs: SQSClient, queueUrl: string, record: SQSRecord, rawReason: string, telemetry: Telemetry): Promise<void> {
  const reason = reasonAttribute(rawReason);
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: record.body,
      MessageAttributes: {
        "quarantine-reason": { DataType: "String", StringValue: reason },
        "source-message-id": { DataType: "String", StringValue: record.messageId },
        "source-queue-arn": { DataType: "String", StringValue: record.eventSourceARN || "unknown" },
      },
    }),
  );
  logStep(telemetry.logger, "warn", "message_quarantined", { message_id: record.messageId, reason });
  countOne(telemetry.metrics, "MessagesQuarantined");
}
