import * as pulumi from "@pulumi/pulumi";
import type { Statement } from "./document";

/**
 * What the ingest functions' code calls, as plain data. Each list mirrors the SDK commands in
 * `functions/ingest/`; `test/infra/unit/iam.test.ts` checks the two stay in step.
 */

export interface GpuParameterAccess {
  /** ARN of the SSM parameter that holds the GPU instance id. */
  parameterArn: pulumi.Input<string>;
}

/** Read the id, and write it back when the tag scan finds the running instance. Only that parameter. */
export function gpuParameterStatement(a: GpuParameterAccess): Statement {
  return { Sid: "GpuInstanceIdParameter", Effect: "Allow", Action: ["ssm:GetParameter", "ssm:PutParameter"], Resource: a.parameterArn };
}

/** DescribeInstances has no resource-level permissions in IAM, so it needs `Resource: "*"`. */
export function describeInstancesStatement(): Statement {
  return { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" };
}

/**
 * StartInstances only on instances carrying the GPU's Name tag. The tag value is a literal from
 * config, so this document is fully known at preview time.
 */
export function startGpuStatement(args: { region: string; nameTag: string }): Statement {
  return {
    Sid: "StartTaggedGpu",
    Effect: "Allow",
    Action: ["ec2:StartInstances"],
    Resource: `arn:aws:ec2:${args.region}:*:instance/*`,
    Condition: { StringEquals: { "aws:ResourceTag/Name": args.nameTag } },
  };
}

/** Moving a malformed message aside, with its reason. */
export function quarantineStatement(quarantineQueueArn: pulumi.Input<string>): Statement {
  return { Sid: "QuarantineMalformed", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: quarantineQueueArn };
}

/** Parking a DLQ message for 900 s while the GPU boots. */
export function parkDlqMessageStatement(dlqArn: pulumi.Input<string>): Statement {
  return { Sid: "ParkDlqMessage", Effect: "Allow", Action: ["sqs:ChangeMessageVisibility"], Resource: dlqArn };
}

/** The ingest-window consumer's own code: resolve the GPU, write back its id, quarantine. */
export function windowConsumerStatements(a: GpuParameterAccess & { quarantineQueueArn: pulumi.Input<string> }): Statement[] {
  return [gpuParameterStatement(a), describeInstancesStatement(), quarantineStatement(a.quarantineQueueArn)];
}

/**
 * The ingest-dlq consumer's inline statements. Its EC2 rights (Describe + tag-scoped Start) come
 * from the shared GPU EC2 managed policy, attached separately, as the seed's template does.
 */
export function dlqConsumerStatements(
  a: GpuParameterAccess & { quarantineQueueArn: pulumi.Input<string>; dlqArn: pulumi.Input<string> },
): Statement[] {
  return [gpuParameterStatement(a), parkDlqMessageStatement(a.dlqArn), quarantineStatement(a.quarantineQueueArn)];
}

/** The GPU EC2 managed policy: what "can start the GPU" means. */
export function gpuEc2PolicyStatements(args: { region: string; nameTag: string }): Statement[] {
  return [startGpuStatement(args), describeInstancesStatement()];
}
