/**
 * Queue reads `ops` shares: depths, the oldest message's age from CloudWatch, and a receive that
 * leaves every message where it is (visibility 0).
 */
import { GetMetricStatisticsCommand } from "@aws-sdk/client-cloudwatch";
import { GetQueueAttributesCommand, type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { OpsClients } from "./aws";
import type { OpsQueue } from "./outputs";

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

export async function readDepth(c: OpsClients, q: OpsQueue): Promise<QueueDepth> {
  const out = await c.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: q.url,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/**
 * SQS's `ApproximateAgeOfOldestMessage`, the latest 1-minute maximum of the last 15 minutes, in
 * seconds; null when CloudWatch has no datapoint (an idle queue publishes none for a while).
 */
export async function oldestAgeSeconds(c: OpsClients, q: OpsQueue, now: Date = new Date()): Promise<number | null> {
  const out = await c.cloudwatch.send(
    new GetMetricStatisticsCommand({
      Namespace: "AWS/SQS",
      MetricName: "ApproximateAgeOfOldestMessage",
      Dimensions: [{ Name: "QueueName", Value: queueNameOf(q) }],
      StartTime: new Date(now.getTime() - 15 * 60_000),
      EndTime: now,
      Period: 60,
      Statistics: ["Maximum"],
    }),
  );
  const latest = [...(out.Datapoints ?? [])].sort((a, b) => (b.Timestamp?.getTime() ?? 0) - (a.Timestamp?.getTime() ?? 0))[0];
  return latest?.Maximum ?? null;
}

/** The physical name: the last part of the ARN (the `QueueName` dimension). */
export function queueNameOf(q: Pick<OpsQueue, "arn">): string {
  return q.arn.split(":").at(-1) ?? q.arn;
}

/**
 * Up to `max` distinct messages, received with visibility 0 so they stay visible to whoever else
 * reads the queue. Every receive raises a message's receive count, so this is a peek only in
 * effect; rounds repeat until `max` or two rounds bring nothing new. Each message keeps the receipt
 * handle of its latest receive (an earlier one no longer deletes it).
 */
export async function receiveVisible(c: OpsClients, q: OpsQueue, max: number): Promise<Message[]> {
  const seen = new Map<string, Message>();
  let quiet = 0;
  while (seen.size < max && quiet < 2) {
    const out = await c.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: q.url,
        MaxNumberOfMessages: Math.min(10, max),
        VisibilityTimeout: 0,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    let fresh = 0;
    for (const m of out.Messages ?? []) {
      if (!m.MessageId) continue;
      if (!seen.has(m.MessageId)) fresh += 1;
      if (seen.has(m.MessageId) || seen.size < max) seen.set(m.MessageId, m);
    }
    quiet = fresh === 0 ? quiet + 1 : 0;
  }
  return [...seen.values()];
}
