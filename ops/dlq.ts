/**
 * `ops dlq peek|redrive`: what waits in a dead-letter queue and why, and SQS's own redrive
 * (StartMessageMoveTask) back to the source, followed through ListMessageMoveTasks.
 *
 * A redrive names its destination: the source queue the stack's inventory gives the DLQ. Without a
 * DestinationArn SQS returns each message to its DeadLetterQueueSourceArn, which only messages SQS
 * moved there carry: one the code sent to the DLQ itself (a quarantine into a part's DLQ) would fail
 * the task. Each DLQ of the program has exactly one source, so naming it changes nothing for the others.
 */
import {
  CancelMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
  ListMessageMoveTasksCommand,
  type Message,
  StartMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";
import type { OpsClients } from "./aws";
import { type OpsQueue, queuesOf, type StackOutputs } from "./outputs";
import { readDepth, receiveVisible } from "./queues";

/** The attributes the platform's code stamps on a message it moves aside itself. */
export const REASON_ATTRIBUTES = ["quarantine-reason", "dead-letter-reason"] as const;

/** SQS's limit on a move task's rate. */
export const MAX_MOVE_RATE = 500;

export class DlqRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DlqRefusal";
  }
}

export interface PeekedMessage {
  messageId: string;
  /** Why it is here: the stamped reason, else where SQS moved it from, else that it was sent here directly. */
  why: string;
  receiveCount: number;
  firstReceivedAt: string | null;
  sentAt: string | null;
  body: string;
}

/** Pure: a received message as the peek shows it; `queues` turns a source ARN into its logical name. */
export function describeMessage(m: Message, queues: readonly OpsQueue[]): PeekedMessage {
  const attrs = m.MessageAttributes ?? {};
  const sys = m.Attributes ?? {};
  const stamped = REASON_ATTRIBUTES.map((k) => (attrs[k]?.StringValue ? `${k}: ${attrs[k]?.StringValue}` : undefined)).find((x) => x !== undefined);
  const sourceArn = sys.DeadLetterQueueSourceArn;
  const source = sourceArn ? (queues.find((q) => q.arn === sourceArn)?.name ?? sourceArn) : undefined;
  const why =
    stamped ??
    (source ? `failed its receives on ${source}` : "sent here directly (no DeadLetterQueueSourceArn; a redrive sends it to the DLQ's source all the same)");
  const time = (v: string | undefined) => (v && Number.isFinite(Number(v)) ? new Date(Number(v)).toISOString() : null);
  return {
    messageId: m.MessageId ?? "",
    why,
    receiveCount: Number(sys.ApproximateReceiveCount ?? 0),
    firstReceivedAt: time(sys.ApproximateFirstReceiveTimestamp),
    sentAt: time(sys.SentTimestamp),
    body: m.Body ?? "",
  };
}

export async function peek(c: OpsClients, outputs: StackOutputs, q: OpsQueue, n: number): Promise<PeekedMessage[]> {
  const messages = await receiveVisible(c, q, n);
  const queues = queuesOf(outputs);
  return messages.map((m) => describeMessage(m, queues));
}

export interface MoveTask {
  status: string;
  moved: number;
  toMove: number | null;
  failureReason: string | null;
  taskHandle: string | null;
}

function moveTask(e: ListMessageMoveTasksResultEntry): MoveTask {
  return {
    status: e.Status ?? "UNKNOWN",
    moved: e.ApproximateNumberOfMessagesMoved ?? 0,
    toMove: e.ApproximateNumberOfMessagesToMove ?? null,
    failureReason: e.FailureReason ?? null,
    taskHandle: e.TaskHandle ?? null,
  };
}

/** The queue's latest move task, if any. */
export async function latestMoveTask(c: OpsClients, q: OpsQueue): Promise<MoveTask | null> {
  const out = await c.sqs.send(new ListMessageMoveTasksCommand({ SourceArn: q.arn, MaxResults: 1 }));
  const first = out.Results?.[0];
  return first ? moveTask(first) : null;
}

/** Pure: `--rate` as SQS takes it (1–500 messages a second). */
export function parseRate(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_MOVE_RATE)
    throw new DlqRefusal(`--rate ${raw}: must be a whole number of messages a second, 1 to ${MAX_MOVE_RATE}`);
  return n;
}

export interface RedrivePlan {
  depth: number;
  /** The source queue's logical name. */
  source: string;
  /** The source queue: the move task's destination. */
  destination: OpsQueue;
}

/**
 * What a redrive would move: the DLQ's depth now, and its source queue (refuses a queue that is no
 * DLQ, a source the outputs do not name, or a DLQ with a task running).
 */
export async function planRedrive(c: OpsClients, outputs: StackOutputs, q: OpsQueue): Promise<RedrivePlan> {
  if (q.kind !== "dlq" || !q.source) throw new DlqRefusal(`${q.name} is a ${q.kind} queue, not the DLQ of a source queue: nothing to redrive it to`);
  const destination = queuesOf(outputs).find((x) => x.name === q.source);
  if (!destination) throw new DlqRefusal(`${q.name}'s source ${q.source} is no queue of this stack's outputs: nothing to redrive it to`);
  const running = await latestMoveTask(c, q);
  if (running?.status === "RUNNING")
    throw new DlqRefusal(`a move task is already running on ${q.name} (${running.moved} of ${running.toMove ?? "?"} moved); cancel it with --cancel or wait`);
  const d = await readDepth(c, q);
  return { depth: d.visible, source: q.source, destination };
}

/**
 * Starts the move task from the DLQ to `destination` (every message goes there, whether SQS moved
 * it to the DLQ or the code sent it) and follows it until it ends, calling `progress` on each poll.
 * Resolves to the task's last state (COMPLETED, FAILED or CANCELLED).
 */
export async function redrive(
  c: OpsClients,
  q: OpsQueue,
  destination: OpsQueue,
  opts: { rate?: number; pollMs?: number; progress?: (t: MoveTask) => void; timeoutMs?: number },
): Promise<MoveTask> {
  await c.sqs.send(
    new StartMessageMoveTaskCommand({
      SourceArn: q.arn,
      DestinationArn: destination.arn,
      ...(opts.rate !== undefined ? { MaxNumberOfMessagesPerSecond: opts.rate } : {}),
    }),
  );
  const deadline = Date.now() + (opts.timeoutMs ?? 3_600_000);
  for (;;) {
    const t = await latestMoveTask(c, q);
    if (t) opts.progress?.(t);
    if (t && t.status !== "RUNNING" && t.status !== "CANCELLING") return t;
    if (Date.now() > deadline)
      throw new DlqRefusal(`the move task on ${q.name} still runs after ${Math.round((opts.timeoutMs ?? 3_600_000) / 1000)} s; follow it with \`ops status\``);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
  }
}

/** Cancels the running move task; what moved stays moved. */
export async function cancelRedrive(c: OpsClients, q: OpsQueue): Promise<MoveTask> {
  const t = await latestMoveTask(c, q);
  if (!t || t.status !== "RUNNING" || !t.taskHandle) throw new DlqRefusal(`no move task is running on ${q.name}${t ? ` (the latest is ${t.status})` : ""}`);
  await c.sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle: t.taskHandle }));
  return { ...t, status: "CANCELLING" };
}
