/**
 * `ops quarantine list|release`: what the consumers moved aside as malformed, grouped by the
 * reason they stamped; and, once an operator has fixed the cause, the message back to the queue it
 * was quarantined from (its `source-queue-arn`), with who released it logged and stamped on it.
 */
import { DeleteMessageCommand, type Message, type MessageAttributeValue, SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetCallerIdentityCommand } from "@aws-sdk/client-sts";
import type { OpsClients } from "./aws";
import { type OpsQueue, queuesOf, type StackOutputs } from "./outputs";
import { receiveVisible } from "./queues";

/** The attributes functions/shared/quarantine.ts stamps. */
export const QUARANTINE_ATTRIBUTES = { reason: "quarantine-reason", sourceMessageId: "source-message-id", sourceQueueArn: "source-queue-arn" } as const;
/** Stamped on a released message, so its next consumer's logs can say where it came from. */
export const RELEASED_BY_ATTRIBUTE = "released-by";
/** More than a quarantine should ever hold; a list stops here and says so. */
export const LIST_LIMIT = 1000;

export class QuarantineRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "QuarantineRefusal";
  }
}

export interface QuarantinedMessage {
  messageId: string;
  queue: string;
  reason: string;
  sourceQueueArn: string | null;
  body: string;
  message: Message;
}

export interface ReasonGroup {
  reason: string;
  count: number;
  example: { messageId: string; queue: string; body: string };
}

function quarantineQueues(outputs: StackOutputs): OpsQueue[] {
  return queuesOf(outputs).filter((q) => q.kind === "quarantine");
}

/** Every message of every quarantine queue (up to LIST_LIMIT each), left where it is. */
export async function readQuarantine(c: OpsClients, outputs: StackOutputs): Promise<QuarantinedMessage[]> {
  const out: QuarantinedMessage[] = [];
  for (const q of quarantineQueues(outputs)) {
    for (const m of await receiveVisible(c, q, LIST_LIMIT)) {
      const attr = (k: string) => m.MessageAttributes?.[k]?.StringValue;
      out.push({
        messageId: m.MessageId ?? "",
        queue: q.name,
        reason: attr(QUARANTINE_ATTRIBUTES.reason) ?? "(no reason stamped)",
        sourceQueueArn: attr(QUARANTINE_ATTRIBUTES.sourceQueueArn) ?? null,
        body: m.Body ?? "",
        message: m,
      });
    }
  }
  return out;
}

/** Pure: by reason, most frequent first, with one example each. */
export function groupByReason(messages: readonly QuarantinedMessage[]): ReasonGroup[] {
  const groups = new Map<string, ReasonGroup>();
  for (const m of messages) {
    const g = groups.get(m.reason);
    if (g) g.count += 1;
    else groups.set(m.reason, { reason: m.reason, count: 1, example: { messageId: m.messageId, queue: m.queue, body: m.body } });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/** Pure: the messages a release names, by id or by reason; refuses a selection that matches nothing. */
export function selectForRelease(messages: readonly QuarantinedMessage[], by: { id?: string; reason?: string }): QuarantinedMessage[] {
  const chosen = messages.filter((m) => (by.id !== undefined ? m.messageId === by.id : m.reason === by.reason));
  if (chosen.length === 0) {
    throw new QuarantineRefusal(by.id !== undefined ? `no quarantined message ${by.id}` : `no quarantined message with reason ${JSON.stringify(by.reason)}`);
  }
  return chosen;
}

/** Who is calling, for the release log: the caller's ARN, or the local user when STS cannot say. */
export async function callerIdentity(c: OpsClients): Promise<string> {
  try {
    return (await c.sts.send(new GetCallerIdentityCommand({}))).Arn ?? "unknown";
  } catch {
    return `local user ${process.env.USER ?? "unknown"}`;
  }
}

export interface Released {
  messageId: string;
  from: string;
  to: string;
  newMessageId: string;
  releasedBy: string;
}

/**
 * Resends each message to its source queue (a queue of this stack, or it is refused), then deletes
 * it from quarantine: a failure between the two leaves a copy in each, never none.
 */
export async function release(c: OpsClients, outputs: StackOutputs, chosen: readonly QuarantinedMessage[], releasedBy: string): Promise<Released[]> {
  const queues = queuesOf(outputs);
  const targets = chosen.map((m) => {
    const to = queues.find((q) => q.arn === m.sourceQueueArn);
    if (!to)
      throw new QuarantineRefusal(`message ${m.messageId} came from ${m.sourceQueueArn ?? "an unknown queue"}, which is no queue of this stack: not released`);
    return { m, to };
  });
  const done: Released[] = [];
  for (const { m, to } of targets) {
    const from = queues.find((q) => q.name === m.queue);
    const kept = Object.fromEntries(
      Object.entries(m.message.MessageAttributes ?? {}).filter(([k]) => !(Object.values(QUARANTINE_ATTRIBUTES) as string[]).includes(k)),
    ) as Record<string, MessageAttributeValue>;
    const sent = await c.sqs.send(
      new SendMessageCommand({
        QueueUrl: to.url,
        MessageBody: m.body,
        MessageAttributes: { ...kept, [RELEASED_BY_ATTRIBUTE]: { DataType: "String", StringValue: releasedBy.slice(0, 1024) } },
      }),
    );
    await c.sqs.send(new DeleteMessageCommand({ QueueUrl: from?.url ?? "", ReceiptHandle: m.message.ReceiptHandle ?? "" }));
    done.push({ messageId: m.messageId, from: m.queue, to: to.name, newMessageId: sent.MessageId ?? "", releasedBy });
  }
  return done;
}
