import * as aws from "@pulumi/aws";
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

/**
 * Where a service assumes the role on this stack's behalf, for the confused-deputy conditions AWS
 * documents for that service. Lambda and EC2 document none, so their trust policies carry none:
 * a condition the service does not set would silently break the role.
 */
export interface TrustScope {
  accountId: pulumi.Input<string>;
  region: pulumi.Input<string>;
}

/**
 * The source ARN each guarded service sets when it assumes a role: ECS any ARN of the account's ECS
 * in the region (AWS's task-role and execution-role guidance), Scheduler its schedule group (the
 * platform's schedules use the default group).
 */
export const TRUST_SOURCE_ARNS: Readonly<Record<string, (s: { accountId: string; region: string }) => string>> = {
  "ecs-tasks.amazonaws.com": (s) => `arn:aws:ecs:${s.region}:${s.accountId}:*`,
  "scheduler.amazonaws.com": (s) => `arn:aws:scheduler:${s.region}:${s.accountId}:schedule-group/default`,
  "vpc-flow-logs.amazonaws.com": (s) => `arn:aws:ec2:${s.region}:${s.accountId}:vpc-flow-log/*`,
};

/** Egress to AWS APIs (and registries) over HTTPS: what every group here needs; anywhere, since no VPC endpoint serves every API. */
export function httpsEgress(description: string) {
  return { protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], description };
}

/**
 * Trust policy for a role assumed by one AWS service. With `scope`, and for a service AWS documents
 * the conditions for, only requests on behalf of this account (aws:SourceAccount) and from that
 * service's own resources (aws:SourceArn) may assume it.
 */
export function assumedBy(service: string, scope?: TrustScope): aws.types.input.iam.PolicyDocument {
  const sourceArn = TRUST_SOURCE_ARNS[service];
  const guarded = scope && sourceArn;
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Service: service },
        Action: "sts:AssumeRole",
        ...(guarded
          ? {
              Condition: {
                StringEquals: { "aws:SourceAccount": scope.accountId },
                ArnLike: { "aws:SourceArn": pulumi.all([scope.accountId, scope.region]).apply(([accountId, region]) => sourceArn({ accountId, region })) },
              },
            }
          : {}),
      },
    ],
  };
}

/** This stack's account and region, from invokes (known on every preview), for `assumedBy`. */
export function trustScope(parent: pulumi.Resource): TrustScope {
  return { accountId: aws.getCallerIdentityOutput({}, { parent }).accountId, region: aws.getRegionOutput({}, { parent }).region };
}

/**
 * What the SSM agent needs for Session Manager, and nothing else of AmazonSSMManagedInstanceCore
 * (whose other 20 actions let an instance read every plain parameter of the account): AWS's own
 * minimal Session Manager instance policy, scoped as the Service Authorization Reference allows.
 * The four ssmmessages actions have no resource type, so `*`. UpdateInstanceInformation has two,
 * `instance` (arn:aws:ec2:<region>:<account>:instance/<id>) and `managed-instance` (hybrid nodes,
 * `mi-…`, which this program has none of): AWS's example grants it on `*`, but the reference lets
 * it name this account's and region's EC2 instances, and nothing wider is needed.
 */
export function sessionManagerStatements(scope: TrustScope): Statement[] {
  return [
    {
      Sid: "SessionManagerAgent",
      Effect: "Allow",
      Action: ["ssm:UpdateInstanceInformation"],
      Resource: pulumi.interpolate`arn:aws:ec2:${scope.region}:${scope.accountId}:instance/*`,
    },
    {
      Sid: "SessionManagerChannels",
      Effect: "Allow",
      Action: ["ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"],
      Resource: "*",
    },
  ];
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
 * The ENI actions the Lambda service performs with a VPC function's role, each on the narrowest
 * resource type AWS lets it name (AWSLambdaVPCAccessExecutionRole grants all six on `*`):
 * - DescribeNetworkInterfaces and DescribeSubnets have no resource-level permissions (Lambda's
 *   guide: DescribeNetworkInterfaces "only works if it's allowed on all resources").
 * - CreateNetworkInterface is authorized on the new interface, its subnet and its security group:
 *   those types in this account and region. Not the function's own subnets by id: that list is one
 *   computed value, unknown as a whole on a first preview, which would hide the document.
 * - DeleteNetworkInterface and the two private-IP actions act on interfaces Lambda created, whose
 *   ids nobody knows beforehand: the guide asks for "all resource IDs", so every interface of this
 *   account and region. No `ec2:Vpc` condition: AWS does not document which keys Lambda's own ENI
 *   calls carry, and a missing key would break the function's VPC attachment at deploy.
 */
export function vpcAccessStatements(scope: TrustScope): Statement[] {
  const ec2 = (resource: string) => pulumi.interpolate`arn:aws:ec2:${scope.region}:${scope.accountId}:${resource}`;
  return [
    { Sid: "LambdaVpcDescribe", Effect: "Allow", Action: ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"], Resource: "*" },
    {
      Sid: "LambdaVpcCreateEni",
      Effect: "Allow",
      Action: ["ec2:CreateNetworkInterface"],
      Resource: [ec2("network-interface/*"), ec2("subnet/*"), ec2("security-group/*")],
    },
    {
      Sid: "LambdaVpcManageEni",
      Effect: "Allow",
      Action: ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"],
      Resource: ec2("network-interface/*"),
    },
  ];
}
