/**
 * SQS's message move tasks (StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask), which
 * moto lacks, as a stand-in with SQS's documented semantics (the SQS API reference for the three
 * actions, and the developer guide's "Learn how to configure a dead-letter queue redrive"):
 * - the source must be a DLQ: some queue's redrive policy names it (else UnsupportedOperation);
 * - one active task per source queue (a second start is refused with UnsupportedOperation);
 * - at most 500 messages a second (MaxNumberOfMessagesPerSecond, 1–500; without it, 500 here);
 * - the count to move (ApproximateNumberOfMessagesToMove) is the DLQ's depth when the task starts;
 *   messages that arrive later wait for the next task;
 * - without a DestinationArn each message returns to the queue SQS moved it from
 *   (DeadLetterQueueSourceArn). moto does not record that, so this stand-in keeps which messages
 *   reached a queue by a plain send ({@link DirectSends}, fed by the SQS proxies): such a message has
 *   no source, and the task fails on it (FAILED, the message left in the DLQ, what moved stays moved);
 * - cancel only while RUNNING (CANCELLING, then CANCELLED once the message in hand is moved);
 * - ListMessageMoveTasks gives the most recent tasks first (MaxResults 1 by default, at most 10), with
 *   the TaskHandle only while a task runs.
 * A moved message keeps its body and message attributes, and is sent before it is deleted, so a
 * failure between the two leaves a copy in each place, never none.
 */
import { randomUUID } from "node:crypto";
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";

const MAX_MESSAGES_PER_SECOND = 500;

/** Which messages reached each queue by a plain send, by queue name (the last path part of its URL). */
export class DirectSends {
  private readonly byQueue = new Map<string, Set<string>>();

  /** The SQS proxies' `onSent`. */
  readonly sent = (queueUrl: string, messageIds: string[]): void => {
    const name = queueUrl.split("/").at(-1) ?? queueUrl;
    const ids = this.byQueue.get(name) ?? new Set<string>();
    for (const id of messageIds) ids.add(id);
    this.byQueue.set(name, ids);
  };

  sentDirectly(queueName: string, messageId: string): boolean {
    return this.byQueue.get(queueName)?.has(messageId) ?? false;
  }
}

/** An SQS error as the JSON protocol carries it. */
export class SqsError extends Error {
  constructor(
    readonly code: "UnsupportedOperation" | "ResourceNotFoundException" | "InvalidParameterValue" | "AccessDenied",
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = code;
  }
}

export interface MoveTaskQueue {
  name: string;
  arn: string;
  /** moto's URL (the stand-in talks to moto directly). */
  url: string;
  /** The DLQ its redrive policy names, if any. */
  deadLetterTargetArn?: string;
}

type Status = "RUNNING" | "COMPLETED" | "CANCELLING" | "CANCELLED" | "FAILED";

interface Task {
  handle: string;
  source: MoveTaskQueue;
  destinationArn?: string;
  rate: number;
  status: Status;
  moved: number;
  toMove: number;
  startedMs: number;
  failureReason?: string;
}

export class MessageMoveTasks {
  private readonly tasks: Task[] = [];
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  /** `sqs` goes straight to moto; `direct` says which messages reached a queue by a plain send. */
  constructor(private readonly o: { sqs: SQSClient; queues: MoveTaskQueue[]; direct: DirectSends }) {}

  async start(input: { SourceArn?: unknown; DestinationArn?: unknown; MaxNumberOfMessagesPerSecond?: unknown }): Promise<{ TaskHandle: string }> {
    const source = this.queue(input.SourceArn, "SourceArn");
    if (!this.o.queues.some((q) => q.deadLetterTargetArn === source.arn)) {
      throw new SqsError("UnsupportedOperation", `Source queue ${source.arn} must be configured as a dead-letter queue of another queue.`);
    }
    const destinationArn = input.DestinationArn === undefined ? undefined : this.queue(input.DestinationArn, "DestinationArn").arn;
    const rateIn = input.MaxNumberOfMessagesPerSecond;
    if (rateIn !== undefined && (typeof rateIn !== "number" || !Number.isInteger(rateIn) || rateIn < 1 || rateIn > MAX_MESSAGES_PER_SECOND)) {
      throw new SqsError(
        "InvalidParameterValue",
        `Value ${String(rateIn)} for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be between 1 and ${MAX_MESSAGES_PER_SECOND}.`,
      );
    }
    if (this.tasks.some((t) => t.source.arn === source.arn && (t.status === "RUNNING" || t.status === "CANCELLING"))) {
      throw new SqsError("UnsupportedOperation", "There is already a task running. Only one active task is allowed for a source queue arn at a given time.");
    }
    const depth = await this.o.sqs.send(new GetQueueAttributesCommand({ QueueUrl: source.url, AttributeNames: ["ApproximateNumberOfMessages"] }));
    const task: Task = {
      handle: Buffer.from(JSON.stringify({ taskId: randomUUID(), sourceArn: source.arn })).toString("base64"),
      source,
      ...(destinationArn ? { destinationArn } : {}),
      rate: typeof rateIn === "number" ? rateIn : MAX_MESSAGES_PER_SECOND,
      status: "RUNNING",
      moved: 0,
      toMove: Number(depth.Attributes?.ApproximateNumberOfMessages ?? 0),
      startedMs: Date.now(),
    };
    this.tasks.unshift(task);
    const run = this.run(task).finally(() => this.running.delete(run));
    this.running.add(run);
    return { TaskHandle: task.handle };
  }

  list(input: { SourceArn?: unknown; MaxResults?: unknown }) {
    const source = this.queue(input.SourceArn, "SourceArn");
    const max = input.MaxResults === undefined ? 1 : Number(input.MaxResults);
    if (!Number.isInteger(max) || max < 1 || max > 10)
      throw new SqsError("InvalidParameterValue", `Value ${String(input.MaxResults)} for parameter MaxResults is invalid. Reason: must be between 1 and 10.`);
    return {
      Results: this.tasks
        .filter((t) => t.source.arn === source.arn)
        .slice(0, max)
        .map(result),
    };
  }

  cancel(input: { TaskHandle?: unknown }): { ApproximateNumberOfMessagesMoved: number } {
    const task = this.tasks.find((t) => t.handle === input.TaskHandle);
    if (!task) throw new SqsError("ResourceNotFoundException", "The specified task handle does not exist.");
    if (task.status !== "RUNNING") throw new SqsError("UnsupportedOperation", `Only a RUNNING task can be cancelled; this one is ${task.status}.`);
    task.status = "CANCELLING";
    return { ApproximateNumberOfMessagesMoved: task.moved };
  }

  /** Ends every task's loop (what is in hand is finished first). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.running]);
  }

  private queue(arn: unknown, parameter: string): MoveTaskQueue {
    if (typeof arn !== "string" || arn === "")
      throw new SqsError("InvalidParameterValue", `Value for parameter ${parameter} is invalid. Reason: a queue ARN is required.`);
    const q = this.o.queues.find((x) => x.arn === arn);
    if (!q) throw new SqsError("ResourceNotFoundException", `The resource that you specified for the ${parameter} parameter doesn't exist.`);
    return q;
  }

  /** Moves up to `toMove` messages at no more than `rate` a second, then settles the status. */
  private async run(task: Task): Promise<void> {
    let quiet = 0;
    const began = Date.now();
    while (task.status === "RUNNING" && !this.stopped && task.moved < task.toMove && quiet < 3) {
      // The rate, over the task's whole life: the batch may not run ahead of `rate` messages per elapsed second.
      const allowed = Math.floor(((Date.now() - began) / 1000) * task.rate) + 1 - task.moved;
      if (allowed <= 0) {
        await new Promise((r) => setTimeout(r, Math.ceil(1000 / task.rate)));
        continue;
      }
      const out = await this.o.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: task.source.url,
          MaxNumberOfMessages: Math.min(10, allowed, task.toMove - task.moved),
          VisibilityTimeout: 30,
          WaitTimeSeconds: 0,
          MessageAttributeNames: ["All"],
        }),
      );
      const messages = out.Messages ?? [];
      quiet = messages.length === 0 ? quiet + 1 : 0;
      for (const m of messages) {
        const destination = this.destinationOf(task, m.MessageId ?? "");
        if (!destination) {
          // Nothing to return it to: the task stops here, and the message is visible in the DLQ again.
          task.status = "FAILED";
          task.failureReason = `Message ${m.MessageId} has no DeadLetterQueueSourceArn: it was sent to the dead-letter queue directly, so there is no source queue to move it back to.`;
          for (const left of messages.slice(messages.indexOf(m))) {
            await this.o.sqs
              .send(new ChangeMessageVisibilityCommand({ QueueUrl: task.source.url, ReceiptHandle: left.ReceiptHandle ?? "", VisibilityTimeout: 0 }))
              .catch(() => undefined);
          }
          return;
        }
        await this.o.sqs.send(
          new SendMessageCommand({
            QueueUrl: destination.url,
            MessageBody: m.Body ?? "",
            ...(m.MessageAttributes && Object.keys(m.MessageAttributes).length > 0
              ? { MessageAttributes: m.MessageAttributes as Record<string, MessageAttributeValue> }
              : {}),
          }),
        );
        await this.o.sqs.send(new DeleteMessageCommand({ QueueUrl: task.source.url, ReceiptHandle: m.ReceiptHandle ?? "" }));
        task.moved += 1;
      }
      if (messages.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    if (task.status === "CANCELLING") task.status = "CANCELLED";
    // A task cut short by the platform stopping did not complete; it stays as it was.
    else if (task.status === "RUNNING" && !this.stopped) task.status = "COMPLETED";
  }

  /** The queue a message goes to: the task's destination, else the source SQS moved it from. */
  private destinationOf(task: Task, messageId: string): MoveTaskQueue | undefined {
    if (task.destinationArn) return this.o.queues.find((q) => q.arn === task.destinationArn);
    if (this.o.direct.sentDirectly(task.source.name, messageId)) return undefined;
    const sources = this.o.queues.filter((q) => q.deadLetterTargetArn === task.source.arn);
    // Several queues sharing one DLQ would need SQS's per-message record; the program gives each DLQ one source.
    return sources.length === 1 ? sources[0] : undefined;
  }
}

/** A task as ListMessageMoveTasks shows it. */
function result(t: Task) {
  return {
    ...(t.status === "RUNNING" ? { TaskHandle: t.handle } : {}),
    Status: t.status,
    SourceArn: t.source.arn,
    ...(t.destinationArn ? { DestinationArn: t.destinationArn } : {}),
    MaxNumberOfMessagesPerSecond: t.rate,
    ApproximateNumberOfMessagesMoved: t.moved,
    ApproximateNumberOfMessagesToMove: t.toMove,
    ...(t.failureReason ? { FailureReason: t.failureReason } : {}),
    StartedTimestamp: t.startedMs,
  };
}
