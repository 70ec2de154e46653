import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { DLQ_RETENTION_SECONDS, QUEUE_ROLE_TAG } from "./managedQueue";
import { queueDepthAlarm } from "./queueDepthAlarm";

export interface QuarantineQueueArgs {
  /**
   * Alarm actions (SNS topic ARNs) for the depth alarm.
   * @default []
   */
  alarmActions?: pulumi.Input<string>[];
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * A terminal queue for malformed messages whose consumer already reads a DLQ. Sending them
 * back to that DLQ would loop them through the same consumer, so they are parked here,
 * with the reason as a message attribute, for a human. Nothing consumes it (the policy pack
 * checks that), it keeps messages 14 days, and any message in it trips the alarm.
 */
export class QuarantineQueue extends pulumi.ComponentResource {
  readonly queue: aws.sqs.Queue;
  readonly alarm: aws.cloudwatch.MetricAlarm;

  constructor(name: string, args: QuarantineQueueArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:messaging:QuarantineQueue", name, {}, opts);
    const tags = args.tags ?? {};
    this.queue = new aws.sqs.Queue(
      name,
      {
        messageRetentionSeconds: DLQ_RETENTION_SECONDS,
        sqsManagedSseEnabled: true,
        tags: { ...tags, [QUEUE_ROLE_TAG]: "quarantine" },
      },
      { parent: this },
    );
    this.alarm = queueDepthAlarm(
      `${name}-depth`,
      this.queue,
      { threshold: 1, alarmActions: args.alarmActions ?? [], description: `Malformed messages were quarantined in ${name}.`, tags },
      { parent: this },
    );
    this.registerOutputs({ queueArn: this.queue.arn, queueUrl: this.queue.url });
  }
}
