import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/**
 * A queue policy letting one EventBridge rule (aws:SourceArn) send to the queue: EventBridge's SQS
 * targets take no role, so the queue's own policy must allow the rule. `sid` names the statement.
 * Another sender with an identity policy of its own (Scheduler's role) is unaffected: in one
 * account an Allow on either side is enough, and this policy denies nothing.
 */
export function ruleMaySend(
  name: string,
  args: { queue: aws.sqs.Queue; rule: aws.cloudwatch.EventRule; sid: string },
  parent: pulumi.Resource,
): aws.sqs.QueuePolicy {
  return new aws.sqs.QueuePolicy(
    name,
    {
      queueUrl: args.queue.url,
      policy: pulumi.jsonStringify({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: args.sid,
            Effect: "Allow",
            Principal: { Service: "events.amazonaws.com" },
            Action: "sqs:SendMessage",
            Resource: args.queue.arn,
            Condition: { ArnEquals: { "aws:SourceArn": args.rule.arn } },
          },
        ],
      }),
    },
    { parent },
  );
}
