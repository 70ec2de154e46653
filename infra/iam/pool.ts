import * as pulumi from "@pulumi/pulumi";
import type { Statement } from "./document";

/**
 * What the pool code calls, as plain data (mirrors `functions/pool/iam.ts`). EC2 start and run
 * grants are conditioned on the pool tag; iam:PassRole names only the instance profile's role.
 */

export interface PoolIamArgs {
  region: string;
  /** Value of the `encache:pool` tag. */
  poolTag: string;
}

const TAG = "encache:pool";

export function describeInstancesStatement(): Statement {
  // DescribeInstances supports no resource-level permissions.
  return { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" };
}

/** StartInstances only on instances tagged as members of this pool. */
export function startPoolInstancesStatement(a: PoolIamArgs): Statement {
  return {
    Sid: "StartPoolInstances",
    Effect: "Allow",
    Action: ["ec2:StartInstances"],
    Resource: `arn:aws:ec2:${a.region}:*:instance/*`,
    Condition: { StringEquals: { [`aws:ResourceTag/${TAG}`]: a.poolTag } },
  };
}

export function claimTableStatement(tableArn: pulumi.Input<string>, actions: string[]): Statement {
  return { Sid: "ClaimTable", Effect: "Allow", Action: actions, Resource: tableArn };
}

/**
 * RunInstances authorises every resource it touches. The ones it creates (instance, volumes,
 * network interface) must carry the pool tag in the request; the ones it uses are named: the
 * pool's launch templates, subnets and security group, and AMIs (any image, but an image is
 * not an instance). Tag-on-create needs CreateTags, only as part of RunInstances.
 */
export function runPoolInstancesStatements(
  a: PoolIamArgs & {
    launchTemplateArns: pulumi.Input<string>[];
    subnetId: pulumi.Input<string>;
    securityGroupArn: pulumi.Input<string>;
    instanceRoleArn: pulumi.Input<string>;
  },
): Statement[] {
  const created = ["instance", "volume", "network-interface"].map((t) => `arn:aws:ec2:${a.region}:*:${t}/*`);
  return [
    {
      Sid: "RunTaggedPoolInstances",
      Effect: "Allow",
      Action: ["ec2:RunInstances"],
      Resource: created,
      Condition: { StringEquals: { [`aws:RequestTag/${TAG}`]: a.poolTag } },
    },
    {
      Sid: "RunFromPoolTemplates",
      Effect: "Allow",
      Action: ["ec2:RunInstances"],
      Resource: [
        ...a.launchTemplateArns,
        pulumi.interpolate`arn:aws:ec2:${a.region}:*:subnet/${a.subnetId}`,
        a.securityGroupArn,
        `arn:aws:ec2:${a.region}::image/*`,
      ],
    },
    {
      Sid: "TagOnLaunch",
      Effect: "Allow",
      Action: ["ec2:CreateTags"],
      Resource: created,
      Condition: { StringEquals: { "ec2:CreateAction": "RunInstances" } },
    },
    {
      Sid: "PassInstanceRole",
      Effect: "Allow",
      Action: ["iam:PassRole"],
      Resource: a.instanceRoleArn,
      Condition: { StringEquals: { "iam:PassedToService": "ec2.amazonaws.com" } },
    },
  ];
}

/** The refill function's own statements (the poller's and log actions are added by QueueConsumer). */
export function refillStatements(
  a: PoolIamArgs & {
    tableArn: pulumi.Input<string>;
    poolQueueArns: pulumi.Input<string>[];
    refillDlqArn: pulumi.Input<string>;
    launchTemplateArns: pulumi.Input<string>[];
    subnetId: pulumi.Input<string>;
    securityGroupArn: pulumi.Input<string>;
    instanceRoleArn: pulumi.Input<string>;
  },
): Statement[] {
  return [
    claimTableStatement(a.tableArn, ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem"]),
    describeInstancesStatement(),
    startPoolInstancesStatement(a),
    ...runPoolInstancesStatements(a),
    { Sid: "AdvertiseAndQuarantine", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: [...a.poolQueueArns, a.refillDlqArn] },
  ];
}

/** The claim API's statements, as a managed policy the claim worker's role attaches. */
export function claimStatements(a: PoolIamArgs & { tableArn: pulumi.Input<string>; poolQueueArns: pulumi.Input<string>[] }): Statement[] {
  return [
    { Sid: "PickupAdverts", Effect: "Allow", Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:SendMessage"], Resource: a.poolQueueArns },
    claimTableStatement(a.tableArn, ["dynamodb:PutItem", "dynamodb:DeleteItem"]),
    describeInstancesStatement(),
    startPoolInstancesStatement(a),
  ];
}
