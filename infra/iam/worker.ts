import * as pulumi from "@pulumi/pulumi";
import type { Statement } from "./document";

/**
 * The worker's task role and execution role as plain data. The task role mirrors
 * `functions/worker/iam.ts` (the code's calls); `test/functions/worker/iam.test.ts` and the
 * plan test keep the three in step.
 */

export interface WorkerTaskAccess {
  workQueueArn: pulumi.Input<string>;
  workDlqArn: pulumi.Input<string>;
  /** ARN of the cluster the tasks run in; protection is granted on its tasks only. */
  clusterArn: pulumi.Input<string>;
}

/** `arn:aws:ecs:r:a:cluster/name` → `arn:aws:ecs:r:a:task/name/*`: every task of that cluster. Pure. */
export function clusterTasksArn(clusterArn: string): string {
  return `${clusterArn.replace(":cluster/", ":task/")}/*`;
}

export function workerTaskRoleStatements(a: WorkerTaskAccess): Statement[] {
  return [
    {
      Sid: "WorkQueue",
      Effect: "Allow",
      Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"],
      Resource: a.workQueueArn,
    },
    // Malformed messages and unknown job types are moved to the DLQ with their reason (quarantine).
    { Sid: "QuarantineToDlq", Effect: "Allow", Action: ["sqs:SendMessage"], Resource: a.workDlqArn },
    {
      Sid: "OwnTaskScaleInProtection",
      Effect: "Allow",
      Action: ["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"],
      Resource: pulumi.output(a.clusterArn).apply(clusterTasksArn),
    },
  ];
}
