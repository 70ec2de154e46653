import * as pulumi from "@pulumi/pulumi";
import { MANAGED_TAG, RUNNER_PARAMETER_PATH } from "../../functions/fleet/jobs";
import type { Statement } from "./document";

/**
 * What the fleet functions' code calls, as plain data. Each list mirrors the SDK commands in
 * `functions/fleet/` (`functions/fleet/iam.ts`); tests check the two stay in step.
 */

export interface FleetScope {
  region: string;
  accountId: pulumi.Input<string>;
}

/** `/runs-fleet/runners/*`: the runners' config parameters, nothing else in SSM. */
export function runnerParametersArn(s: FleetScope): pulumi.Output<string> {
  return pulumi.interpolate`arn:aws:ssm:${s.region}:${s.accountId}:parameter${RUNNER_PARAMETER_PATH}/*`;
}

/** GetParametersByPath is authorised on the path itself. */
export function runnerPathArn(s: FleetScope): pulumi.Output<string> {
  return pulumi.interpolate`arn:aws:ssm:${s.region}:${s.accountId}:parameter${RUNNER_PARAMETER_PATH}`;
}

/** The termination consumer: complete the job, delete the runner's config, quarantine. */
export function terminationStatements(a: FleetScope & { tableArn: pulumi.Input<string>; quarantineQueueArn: pulumi.Input<string> }): Statement[] {
  return [
    { Sid: "CompleteJob", Effect: "Allow", Action: ["dynamodb:UpdateItem"], Resource: a.tableArn },
    { Sid: "DeleteRunnerConfig", Effect: "Allow", Action: ["ssm:DeleteParameter"], Resource: runnerParametersArn(a) },
    { Sid: "QuarantineMalformed", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: a.quarantineQueueArn },
  ];
}

/**
 * TerminateInstances only on instances tagged `runs-fleet:managed=true`. The condition, not the
 * ARN, scopes it: fleet instances come and go, and the tag is what makes one the fleet's.
 */
export function terminateManagedStatement(s: FleetScope): Statement {
  return {
    Sid: "TerminateManagedInstances",
    Effect: "Allow",
    Action: ["ec2:TerminateInstances"],
    Resource: pulumi.interpolate`arn:aws:ec2:${s.region}:${s.accountId}:instance/*`,
    Condition: { StringEquals: { [`aws:ResourceTag/${MANAGED_TAG.key}`]: MANAGED_TAG.value } },
  };
}

/** The housekeeping consumer: the four tasks' calls, and quarantine. */
export function housekeepingStatements(a: FleetScope & { tableArn: pulumi.Input<string>; quarantineQueueArn: pulumi.Input<string> }): Statement[] {
  return [
    // DescribeInstances supports no resource-level permissions.
    { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" },
    terminateManagedStatement(a),
    { Sid: "ListRunnerParameters", Effect: "Allow", Action: ["ssm:GetParametersByPath"], Resource: [runnerPathArn(a), runnerParametersArn(a)] },
    { Sid: "DeleteStaleRunnerParameters", Effect: "Allow", Action: ["ssm:DeleteParameters"], Resource: runnerParametersArn(a) },
    { Sid: "QueryJobIndexes", Effect: "Allow", Action: ["dynamodb:Query"], Resource: pulumi.interpolate`${a.tableArn}/index/*` },
    { Sid: "DeleteOldJobs", Effect: "Allow", Action: ["dynamodb:BatchWriteItem"], Resource: a.tableArn },
    { Sid: "QuarantineMalformed", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: a.quarantineQueueArn },
  ];
}
