import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { MAX_RECEIVE_COUNT_TAG, QUEUE_ROLE_TAG, QUEUE_ROLES, retentionNeededSeconds } from "../../policy/contract";
import { queueDepthAlarm } from "../lib/queue-depth-alarm";
import { QueueConsumer, type QueueConsumerArgs } from "./queue-consumer";
import { QueueSchedule, type QueueScheduleArgs } from "./queue-schedule";

/** A consumer's arguments once its queue is known: the queue gives its ARN and its visibility timeout. */
export type QueueSubscriberArgs = Omit<QueueConsumerArgs, "queueArn" | "queueVisibilityTimeoutSeconds">;

/** A DLQ keeps messages the SQS maximum, 14 days, so it always outlives its source. */
export const DLQ_RETENTION_SECONDS = 1_209_600;

export interface ManagedQueueArgs {
  /**
   * Visibility timeout of the source queue, in seconds. Must cover its consumer
   * (6 × function timeout + batching window); the QueueConsumer checks it.
   * @default 30
   */
  visibilityTimeoutSeconds?: number;
  /**
   * How long the source queue keeps a message, in seconds. Must be below the DLQ's 14 days.
   * @default 345600 (4 days)
   */
  messageRetentionSeconds?: number;
  /**
   * Receives before a message moves to the DLQ. Never 1.
   * @default 3
   */
  maxReceiveCount?: number;
  /**
   * Visibility timeout of the DLQ, in seconds. Raise it when the DLQ itself has a consumer.
   * @default 30
   */
  dlqVisibilityTimeoutSeconds?: number;
  /**
   * Visible DLQ messages that trip the depth alarm.
   * @default 1
   */
  dlqAlarmThreshold?: number;
  /**
   * Alarm actions (SNS topic ARNs) for the DLQ depth alarm.
   * @default []
   */
  alarmActions?: pulumi.Input<string>[];
  /**
   * Mark the DLQ `protect`, so Pulumi will not delete it (or the failed messages in it).
   * @default false
   */
  protectDlq?: boolean;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export type ResolvedManagedQueueArgs = Required<Omit<ManagedQueueArgs, "alarmActions" | "tags">> & Pick<ManagedQueueArgs, "alarmActions" | "tags">;

export const managedQueueDefaults = {
  visibilityTimeoutSeconds: 30,
  messageRetentionSeconds: 345_600,
  maxReceiveCount: 3,
  dlqVisibilityTimeoutSeconds: 30,
  dlqAlarmThreshold: 1,
  protectDlq: false,
} as const;

/** Fills defaults and rejects values SQS would refuse or that would lose messages. Pure. */
export function resolveManagedQueueArgs(args: ManagedQueueArgs): ResolvedManagedQueueArgs {
  const resolved = { ...managedQueueDefaults, ...stripUndefined(args) };
  const errors: string[] = [];
  const inRange = (key: Exclude<keyof typeof managedQueueDefaults, "protectDlq">, min: number, max: number) => {
    const v = resolved[key];
    if (!Number.isInteger(v) || v < min || v > max) errors.push(`${key} must be an integer in ${min}..${max} (got ${v})`);
  };
  inRange("visibilityTimeoutSeconds", 0, 43_200);
  inRange("dlqVisibilityTimeoutSeconds", 0, 43_200);
  inRange("messageRetentionSeconds", 60, DLQ_RETENTION_SECONDS);
  inRange("maxReceiveCount", 2, 1000);
  inRange("dlqAlarmThreshold", 1, 1_000_000);
  if (resolved.maxReceiveCount === 1) errors.push("maxReceiveCount must never be 1");
  if (resolved.messageRetentionSeconds >= DLQ_RETENTION_SECONDS) {
    errors.push(`messageRetentionSeconds must be below the DLQ's ${DLQ_RETENTION_SECONDS} s, or messages expire on arrival in the DLQ`);
  }
  const needed = retentionNeededSeconds(resolved.visibilityTimeoutSeconds, resolved.maxReceiveCount);
  if (resolved.messageRetentionSeconds < needed) {
    errors.push(
      `messageRetentionSeconds must cover every receive: ≥ maxReceiveCount × visibilityTimeoutSeconds = ${needed} (got ${resolved.messageRetentionSeconds}), ` +
        "or a failing message expires before it reaches the DLQ",
    );
  }
  if (errors.length > 0) throw new Error(`ManagedQueue: ${errors.join("; ")}`);
  return resolved;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * An SQS queue with its dead-letter queue: SSE on both, a redrive policy, a separate
 * RedriveAllowPolicy on the DLQ (inline it would form a cycle with the redrive policy)
 * and a depth alarm on the DLQ.
 */
export class ManagedQueue extends pulumi.ComponentResource {
  readonly queue: aws.sqs.Queue;
  readonly dlq: aws.sqs.Queue;
  readonly dlqAlarm: aws.cloudwatch.MetricAlarm;
  /** The resolved settings, so consumers can check them without waiting on outputs. */
  readonly settings: ResolvedManagedQueueArgs;
  /** The component's name, which the source queue takes (its DLQ is `<label>-dlq`): how the dashboard, the budgets and the local run call it. */
  readonly label: string;

  private readonly tags: Record<string, string>;

  constructor(name: string, args: ManagedQueueArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:messaging:ManagedQueue", name, {}, opts);
    this.label = name;
    this.settings = resolveManagedQueueArgs(args);
    this.tags = args.tags ?? {};

    this.dlq = this.declareDlq();
    this.queue = this.declareSourceQueue();
    this.declareRedriveAllowPolicy();
    this.dlqAlarm = this.declareDlqAlarm(args.alarmActions ?? []);

    this.registerOutputs({ queueArn: this.arn, queueUrl: this.url, dlqArn: this.dlqArn, dlqUrl: this.dlqUrl });
  }

  /**
   * The Lambda that consumes this queue, in the shape of SST's `subscribe`: the queue gives the
   * consumer its ARN and the visibility timeout its sizing is checked against, so no part restates
   * them. `opts` are the consumer's own: it stays a child of the caller's parent (its URN does not
   * move under the queue).
   */
  consumer(name: string, args: QueueSubscriberArgs, opts?: pulumi.ComponentResourceOptions): QueueConsumer {
    return new QueueConsumer(name, { ...args, queueArn: this.queue.arn, queueVisibilityTimeoutSeconds: this.settings.visibilityTimeoutSeconds }, opts);
  }

  /** An EventBridge schedule that sends its message to this queue (the queue gives the target's ARN). */
  schedule(name: string, args: Omit<QueueScheduleArgs, "queueArn">, opts?: pulumi.ComponentResourceOptions): QueueSchedule {
    return new QueueSchedule(name, { ...args, queueArn: this.queue.arn }, opts);
  }

  /** The Lambda that consumes this queue's DLQ, as consumer() does for the source queue. */
  dlqConsumer(name: string, args: QueueSubscriberArgs, opts?: pulumi.ComponentResourceOptions): QueueConsumer {
    return new QueueConsumer(name, { ...args, queueArn: this.dlq.arn, queueVisibilityTimeoutSeconds: this.settings.dlqVisibilityTimeoutSeconds }, opts);
  }

  /** The source queue's URL. */
  get url(): pulumi.Output<string> {
    return this.queue.url;
  }

  /** The source queue's ARN. */
  get arn(): pulumi.Output<string> {
    return this.queue.arn;
  }

  /** The source queue's physical name (the `QueueName` dimension of its metrics). */
  get name(): pulumi.Output<string> {
    return this.queue.name;
  }

  get dlqUrl(): pulumi.Output<string> {
    return this.dlq.url;
  }

  get dlqArn(): pulumi.Output<string> {
    return this.dlq.arn;
  }

  get dlqName(): pulumi.Output<string> {
    return this.dlq.name;
  }

  /** `<name>-dlq`: keeps a failed message 14 days, encrypted, tagged as a DLQ. */
  private declareDlq(): aws.sqs.Queue {
    const s = this.settings;
    return new aws.sqs.Queue(
      `${this.label}-dlq`,
      {
        messageRetentionSeconds: DLQ_RETENTION_SECONDS,
        visibilityTimeoutSeconds: s.dlqVisibilityTimeoutSeconds,
        sqsManagedSseEnabled: true,
        tags: { ...this.tags, [QUEUE_ROLE_TAG]: QUEUE_ROLES.dlq },
      },
      // What waits in a DLQ is the only copy of work that failed; deleting the queue deletes it.
      { parent: this, protect: s.protectDlq },
    );
  }

  /** `<name>`: the source queue, redriving to the DLQ after maxReceiveCount receives. */
  private declareSourceQueue(): aws.sqs.Queue {
    const s = this.settings;
    return new aws.sqs.Queue(
      this.label,
      {
        visibilityTimeoutSeconds: s.visibilityTimeoutSeconds,
        messageRetentionSeconds: s.messageRetentionSeconds,
        sqsManagedSseEnabled: true,
        redrivePolicy: pulumi.jsonStringify({ deadLetterTargetArn: this.dlq.arn, maxReceiveCount: s.maxReceiveCount }),
        tags: { ...this.tags, [QUEUE_ROLE_TAG]: QUEUE_ROLES.source, [MAX_RECEIVE_COUNT_TAG]: String(s.maxReceiveCount) },
      },
      { parent: this },
    );
  }

  /** `<name>-dlq-redrive-allow`: only the source may redrive into the DLQ (inline it would form a cycle with the redrive policy). */
  private declareRedriveAllowPolicy(): aws.sqs.RedriveAllowPolicy {
    return new aws.sqs.RedriveAllowPolicy(
      `${this.label}-dlq-redrive-allow`,
      {
        queueUrl: this.dlq.id,
        redriveAllowPolicy: pulumi.jsonStringify({ redrivePermission: "byQueue", sourceQueueArns: [this.queue.arn] }),
      },
      { parent: this },
    );
  }

  /** `<name>-dlq-depth`: anything visible in the DLQ needs a human. */
  private declareDlqAlarm(alarmActions: pulumi.Input<string>[]): aws.cloudwatch.MetricAlarm {
    const s = this.settings;
    return queueDepthAlarm(
      `${this.label}-dlq-depth`,
      this.dlq,
      {
        threshold: s.dlqAlarmThreshold,
        alarmActions,
        description: `Messages are waiting in the DLQ of ${this.label}: they failed ${s.maxReceiveCount} times.`,
        tags: this.tags,
      },
      { parent: this },
    );
  }
}
