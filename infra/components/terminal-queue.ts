import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { QUEUE_ROLE_TAG, type QueueRole } from "../../policy/contract";
import { DLQ_RETENTION_SECONDS } from "./managed-queue";
import { queueDepthAlarm } from "../lib/queue-depth-alarm";

export type TerminalQueueRole = Exclude<QueueRole, "source">;

export interface TerminalQueueArgs {
  /**
   * `quarantine`: malformed messages moved aside by a consumer whose own queue is already a DLQ.
   * `dlq`: the dead-letter queue of EventBridge Scheduler schedules or rule targets.
   */
  role: TerminalQueueRole;
  /**
   * Alarm actions (SNS topic ARNs) for the depth alarm.
   * @default []
   */
  alarmActions?: pulumi.Input<string>[];
  /**
   * Mark the queue `protect`: what waits here is the only copy of work that failed or was malformed.
   * @default false
   */
  protect?: boolean;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

const DESCRIPTIONS: Record<TerminalQueueRole, (name: string) => string> = {
  quarantine: (name) => `Malformed messages were quarantined in ${name}.`,
  dlq: (name) => `Scheduled or routed events failed delivery and wait in ${name}.`,
};

/**
 * A queue at the end of the line: nothing consumes it (the policy pack checks that), it keeps
 * messages 14 days, and one message trips its alarm, because what lands here needs a human.
 * The role tag tells operators and the pack which kind of sink it is.
 */
export class TerminalQueue extends pulumi.ComponentResource {
  readonly queue: aws.sqs.Queue;
  readonly alarm: aws.cloudwatch.MetricAlarm;
  /** The component's name, which the queue takes: how the dashboard and the local run call it. */
  readonly label: string;
  /** Which kind of sink it is: the operator's command lists quarantine queues apart from Scheduler's DLQs. */
  readonly role: TerminalQueueRole;

  constructor(name: string, args: TerminalQueueArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:messaging:TerminalQueue", name, {}, opts);
    this.label = name;
    this.role = args.role;
    const tags = args.tags ?? {};
    this.queue = this.declareQueue(args.role, args.protect ?? false, tags);
    this.alarm = this.declareDepthAlarm(args.role, args.alarmActions ?? [], tags);
    this.registerOutputs({ queueArn: this.arn, queueUrl: this.url });
  }

  get url(): pulumi.Output<string> {
    return this.queue.url;
  }

  get arn(): pulumi.Output<string> {
    return this.queue.arn;
  }

  /** The queue's physical name (the `QueueName` dimension of its metrics). */
  get name(): pulumi.Output<string> {
    return this.queue.name;
  }

  /** `<name>`: keeps what lands here 14 days, encrypted, tagged with its role. */
  private declareQueue(role: TerminalQueueRole, protect: boolean, tags: Record<string, string>): aws.sqs.Queue {
    return new aws.sqs.Queue(
      this.label,
      { messageRetentionSeconds: DLQ_RETENTION_SECONDS, sqsManagedSseEnabled: true, tags: { ...tags, [QUEUE_ROLE_TAG]: role } },
      { parent: this, protect },
    );
  }

  /** `<name>-depth`: one message trips it. */
  private declareDepthAlarm(role: TerminalQueueRole, alarmActions: pulumi.Input<string>[], tags: Record<string, string>): aws.cloudwatch.MetricAlarm {
    return queueDepthAlarm(
      `${this.label}-depth`,
      this.queue,
      { threshold: 1, alarmActions, description: DESCRIPTIONS[role](this.label), tags },
      { parent: this },
    );
  }
}
