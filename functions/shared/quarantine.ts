import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { logStep, type StepLogger } from "./logger";
import { countOne, type MetricsSink } from "./metrics";

export interface Telemetry {
  logger: StepLogger;
  metrics: MetricsSink;
}

/**
 * Moves a message that can never succeed to `queueUrl` with the reason attached, so it is not
 * retried forever yet is not lost. Resolving means the caller may acknowledge the record;
 * if SendMessage fails this throws, and the record must be reported as a batch item failure.
 */
export async function quarantine(
  sqs: SQSClient,
  queueUrl: string,
  record: SQSRecord,
  reason: string,
  telemetry: Telemetry,
): Promise<void> {
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
