import * as pulumi from "@pulumi/pulumi";
import type { Statement } from "./document";

/**
 * What the retraining launcher's code calls (and what IAM authorizes as part of RunTask), as
 * plain data. Each statement mirrors `functions/retraining/iam.ts`; the tests check both.
 */
export interface LauncherAccess {
  /** ARN of the platform ECS cluster. */
  clusterArn: pulumi.Input<string>;
  /** Name of the cluster (task ARNs are `task/<cluster name>/<id>`). */
  clusterName: pulumi.Input<string>;
  /** Task definition ARN without revision, i.e. the family. */
  taskDefinitionFamilyArn: pulumi.Input<string>;
  taskRoleArn: pulumi.Input<string>;
  executionRoleArn: pulumi.Input<string>;
  /** The region of the cluster, for the task ARN pattern. */
  region: string;
  /** The account of the cluster, for the task ARN pattern (the caller's identity). */
  accountId: pulumi.Input<string>;
  stateTableArn: pulumi.Input<string>;
  quarantineQueueArn: pulumi.Input<string>;
  /** The queue the launcher consumes: a message that must wait is re-sent there with a delay. */
  retrainingQueueArn: pulumi.Input<string>;
}

/**
 * `Statement` types condition values as literal strings so the pack can read them at preview;
 * pulumi-aws resolves Inputs anywhere in a document, and the ecs:cluster value is the cluster's
 * ARN output. Only conditions no rule needs to read go through here.
 */
function withClusterCondition(s: Omit<Statement, "Condition">, clusterArn: pulumi.Input<string>): Statement {
  return { ...s, Condition: { ArnEquals: { "ecs:cluster": clusterArn as string } } };
}

/** Every revision of the strategy family, and only on the platform cluster. */
export function runTaskStatement(a: LauncherAccess): Statement {
  return withClusterCondition(
    { Sid: "RunStrategyTask", Effect: "Allow", Action: ["ecs:RunTask"], Resource: pulumi.interpolate`${a.taskDefinitionFamilyArn}:*` },
    a.clusterArn,
  );
}

/**
 * ListTasks authorizes against container instances, not the cluster ARN, so a cluster ARN in
 * Resource would deny it; AWS's own example scopes it with the ecs:cluster condition instead.
 */
export function listTasksStatement(a: LauncherAccess): Statement {
  return withClusterCondition({ Sid: "CountRunningTasks", Effect: "Allow", Action: ["ecs:ListTasks"], Resource: "*" }, a.clusterArn);
}

/** RunTask with tags needs ecs:TagResource on the new task, and only as part of RunTask. */
export function tagOnCreateStatement(a: LauncherAccess): Statement {
  return {
    Sid: "TagLaunchedTask",
    Effect: "Allow",
    Action: ["ecs:TagResource"],
    Resource: pulumi.interpolate`arn:aws:ecs:${a.region}:${a.accountId}:task/${a.clusterName}/*`,
    Condition: { StringEquals: { "ecs:CreateAction": "RunTask" } },
  };
}

/** Handing the task its two roles, and only to ECS tasks. */
export function passTaskRolesStatement(a: LauncherAccess): Statement {
  return {
    Sid: "PassStrategyTaskRoles",
    Effect: "Allow",
    Action: ["iam:PassRole"],
    Resource: [a.taskRoleArn, a.executionRoleArn],
    Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
  };
}

/** Read the models' last launches (redelivery guard), write the state record, take and give back the capacity lease. */
export function stateTableStatement(a: LauncherAccess): Statement {
  return {
    Sid: "RetrainingState",
    Effect: "Allow",
    Action: ["dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem"],
    Resource: a.stateTableArn,
  };
}

export function quarantineStatement(a: LauncherAccess): Statement {
  return { Sid: "QuarantineMalformed", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: a.quarantineQueueArn };
}

/** Deferral: a delayed copy of a message that must wait goes back to the launcher's own queue (SendMessageBatch). */
export function deferStatement(a: LauncherAccess): Statement {
  return { Sid: "DeferToOwnQueue", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: a.retrainingQueueArn };
}

export function launcherStatements(a: LauncherAccess): Statement[] {
  return [
    listTasksStatement(a),
    runTaskStatement(a),
    tagOnCreateStatement(a),
    passTaskRolesStatement(a),
    stateTableStatement(a),
    quarantineStatement(a),
    deferStatement(a),
  ];
}
