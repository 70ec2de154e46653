import type * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/**
 * IAM policy documents as plain data. Documents are passed to pulumi-aws as objects, not JSON
 * strings: the engine then sees the `Action` lists as literals even while a `Resource` ARN is
 * still unknown on a first preview, so the policy pack can judge them before anything exists.
 */
export interface Statement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  /** Exact action names. Never `*` or `service:*` (the policy pack rejects them). */
  Action: string[];
  Resource: pulumi.Input<string> | pulumi.Input<string>[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

export function policyDocument(statements: Statement[]): aws.types.input.iam.PolicyDocument {
  return { Version: "2012-10-17", Statement: statements };
}

/** Every action a set of statements allows, sorted: what a role grants, for tests and docs. */
export function allowedActions(statements: Statement[]): string[] {
  return [...new Set(statements.filter((s) => s.Effect === "Allow").flatMap((s) => s.Action))].sort();
}

/** Trust policy for a role assumed by one AWS service. */
export function assumedBy(service: string): aws.types.input.iam.PolicyDocument {
  return {
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: { Service: service }, Action: "sts:AssumeRole" }],
  };
}

/** Actions the Lambda SQS poller performs with the function's role (not the function's code). */
export function sqsEventSourceStatement(queueArn: pulumi.Input<string>): Statement {
  return {
    Sid: "EventSourceMappingPoll",
    Effect: "Allow",
    Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
    Resource: queueArn,
  };
}

/** Writing to the function's own log group. The group is created by Pulumi, so no CreateLogGroup. */
export function logsStatement(logGroupArn: pulumi.Input<string>): Statement {
  return {
    Sid: "WriteOwnLogGroup",
    Effect: "Allow",
    Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
    Resource: pulumi.interpolate`${logGroupArn}:*`,
  };
}

/**
 * The ENI actions the Lambda service needs to attach a function to a VPC. The Describe
 * calls support no resource-level permissions, so these carry `Resource: "*"`.
 */
export function vpcAccessStatement(): Statement {
  return {
    Sid: "LambdaVpcEni",
    Effect: "Allow",
    Action: [
      "ec2:CreateNetworkInterface",
      "ec2:DescribeNetworkInterfaces",
      "ec2:DescribeSubnets",
      "ec2:DeleteNetworkInterface",
      "ec2:AssignPrivateIpAddresses",
      "ec2:UnassignPrivateIpAddresses",
    ],
    Resource: "*",
  };
}
