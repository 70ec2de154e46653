import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/** The SNS protocols an alert subscription may use; `sqs` is not one of them (see alertSubscriptionProblem). */
export const ALERT_PROTOCOLS = ["email", "email-json", "https", "lambda", "sms"] as const;

export interface AlertSubscription {
  /** SNS protocol: `email`, `email-json`, `https`, `lambda` or `sms`. */
  protocol: string;
  /** The address, URL or (for `lambda`) the function's ARN. */
  endpoint: string;
}

/** A Lambda function's ARN, unqualified or with a version or alias: what SNS invokes and AddPermission takes. */
const LAMBDA_FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]+)?$/;

/**
 * Why a subscription would be accepted by SNS but never deliver, or undefined; the second value is
 * the field at fault. Pure.
 *
 * A subscription delivers only if its endpoint lets the topic in. For `lambda` the topic creates
 * that itself: a Lambda permission is one statement added to the function's resource policy, so
 * it touches nothing else of a function this stack does not own. For `sqs` it cannot: a queue's
 * policy is one document (aws.sqs.QueuePolicy sets all of it), so granting the topic
 * sqs:SendMessage from here would overwrite the policy of a queue another stack owns, and leaving
 * it out subscribes a queue that never receives anything. So `sqs` is refused, and the stack that
 * owns the queue subscribes it (or adds its own topic to `alarmActions`).
 */
export function alertSubscriptionProblem(s: AlertSubscription): { field: "protocol" | "endpoint"; message: string } | undefined {
  if (s.protocol === "sqs") {
    return {
      field: "protocol",
      message:
        "sqs is not supported: the queue must allow the topic sns:SendMessage, and a queue policy is one document that this stack would overwrite on a queue it does not own; " +
        "subscribe the queue from the stack that owns it, or add that stack's topic to encache:alarmActions",
    };
  }
  if (!(ALERT_PROTOCOLS as readonly string[]).includes(s.protocol)) return { field: "protocol", message: `must be one of ${ALERT_PROTOCOLS.join(", ")}` };
  if (s.protocol === "lambda" && !LAMBDA_FUNCTION_ARN.test(s.endpoint)) {
    return {
      field: "endpoint",
      message:
        "must be a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>) in this stack's account: the stack grants the topic lambda:InvokeFunction on it",
    };
  }
  return undefined;
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
    (args.subscriptions ?? []).forEach((s, i) => {
      const problem = alertSubscriptionProblem(s);
      if (problem) throw new Error(`AlertTopic ${name}: subscriptions[${i}].${problem.field}: ${problem.message}`);
      // SNS invokes a function only if the function's resource policy lets this topic in; without
      // this the subscription is created, confirmed, and never delivers.
      const permission =
        s.protocol === "lambda"
          ? new aws.lambda.Permission(
              `${name}-subscription-${i}-invoke`,
              { action: "lambda:InvokeFunction", function: s.endpoint, principal: "sns.amazonaws.com", sourceArn: this.topic.arn },
              { parent: this },
            )
          : undefined;
      new aws.sns.TopicSubscription(
        `${name}-subscription-${i}`,
        { topic: this.topic.arn, protocol: s.protocol, endpoint: s.endpoint },
        { parent: this, ...(permission ? { dependsOn: [permission] } : {}) },
      );
    });
    this.registerOutputs({ topicArn: this.topic.arn });
  }
}
