import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface AlertSubscription {
  /** SNS protocol: `email`, `email-json`, `https`, `sqs`, `lambda` or `sms`. */
  protocol: string;
  /** The address, URL or ARN. */
  endpoint: string;
}

export interface AlertTopicArgs {
  /** This stack's account, for the topic policy's confused-deputy condition. */
  accountId: pulumi.Input<string>;
  /**
   * Who is told. An email subscription stays pending until its recipient confirms it.
   * @default []
   */
  subscriptions?: AlertSubscription[];
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * The stack's one alert topic: every alarm notifies it, besides any topics the config names.
 *
 * Not encrypted with a KMS key, on purpose: CloudWatch cannot publish to a topic encrypted with the
 * AWS-managed SNS key, and a customer-managed key would cost about $1 a month per stack and a key
 * policy granting cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey. An alarm message
 * carries the alarm's name, metric and threshold, nothing of the platform's data.
 */
export class AlertTopic extends pulumi.ComponentResource {
  readonly topic: aws.sns.Topic;

  constructor(name: string, args: AlertTopicArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:alerting:AlertTopic", name, {}, opts);
    const tags = args.tags ?? {};
    this.topic = new aws.sns.Topic(name, { tags }, { parent: this });
    new aws.sns.TopicPolicy(
      `${name}-policy`,
      {
        arn: this.topic.arn,
        policy: pulumi.jsonStringify({
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "CloudWatchAlarmsOfThisAccount",
              Effect: "Allow",
              Principal: { Service: "cloudwatch.amazonaws.com" },
              Action: "sns:Publish",
              Resource: this.topic.arn,
              Condition: { StringEquals: { "aws:SourceAccount": args.accountId } },
            },
          ],
        }),
      },
      { parent: this },
    );
    (args.subscriptions ?? []).forEach(
      (s, i) => new aws.sns.TopicSubscription(`${name}-subscription-${i}`, { topic: this.topic.arn, protocol: s.protocol, endpoint: s.endpoint }, { parent: this }),
    );
    this.registerOutputs({ topicArn: this.topic.arn });
  }
}
