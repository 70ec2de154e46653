import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { runbookPointer } from "./runbook";

/**
 * A depth alarm on a terminal queue (a DLQ or a quarantine queue): anything visible there
 * needs a human, so the default threshold is one message. The description ends with the alarm's
 * runbook section (docs/operations.md), named after the alarm.
 */
export function queueDepthAlarm(
  name: string,
  queue: aws.sqs.Queue,
  args: { threshold: number; alarmActions: pulumi.Input<string>[]; description: string; tags: Record<string, string> },
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      alarmDescription: `${args.description} ${runbookPointer(name)}`,
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: queue.name },
      statistic: "Maximum",
      period: 300,
      evaluationPeriods: 1,
      threshold: args.threshold,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      // An empty queue publishes no datapoints for a while; that is the healthy state.
      treatMissingData: "notBreaching",
      alarmActions: args.alarmActions,
      okActions: args.alarmActions,
      tags: args.tags,
    },
    opts,
  );
}
