/**
 * The IAM actions the launcher needs, with the resource each applies to. Kept apart from the
 * entry module because importing that parses the environment. The event source mapping's own
 * sqs:ReceiveMessage/DeleteMessage/GetQueueAttributes on the consumed queue are not listed.
 */
export type RetrainingResource =
  | "strategy-task-definition-family" // every revision of the family in ECS_TASK_DEFINITION_ARN, on the cluster only
  | "cluster" // ListTasks: scoped with the ecs:cluster condition (it authorizes against container instances)
  | "cluster-tasks" // the tasks RunTask creates in the cluster (tag-on-create)
  | "strategy-task-roles" // the task role and execution role of the task definition
  | "state-table" // RETRAINING_STATE_TABLE
  | "quarantine-queue" // QUARANTINE_QUEUE_URL (the retraining DLQ)
  | "retraining-queue"; // RETRAINING_QUEUE_URL (the launcher's own queue: deferred copies)

export interface IamPermission {
  readonly action: string;
  readonly resource: RetrainingResource;
}

/** Actions the handler code sends as SDK commands. */
export const LAUNCHER_CALLED_PERMISSIONS = [
  { action: "ecs:ListTasks", resource: "cluster" },
  { action: "ecs:RunTask", resource: "strategy-task-definition-family" },
  { action: "dynamodb:BatchGetItem", resource: "state-table" },
  { action: "dynamodb:UpdateItem", resource: "state-table" },
  // The capacity lease (functions/retraining/lease.ts): conditional put to take, conditional delete to give back.
  { action: "dynamodb:PutItem", resource: "state-table" },
  { action: "dynamodb:DeleteItem", resource: "state-table" },
  { action: "sqs:SendMessage", resource: "quarantine-queue" },
  // Deferral (functions/retraining/defer.ts) calls SendMessageBatch, which IAM authorizes as sqs:SendMessage.
  { action: "sqs:SendMessage", resource: "retraining-queue" },
] as const satisfies readonly IamPermission[];

/**
 * Actions IAM authorizes as part of RunTask rather than as calls of their own: handing the task
 * its roles (iam:PassRole) and tagging the task it creates (ecs:TagResource, required when RunTask
 * carries tags).
 */
export const LAUNCHER_IMPLIED_PERMISSIONS = [
  { action: "iam:PassRole", resource: "strategy-task-roles" },
  { action: "ecs:TagResource", resource: "cluster-tasks" },
] as const satisfies readonly IamPermission[];

export const LAUNCHER_IAM_PERMISSIONS: readonly IamPermission[] = [...LAUNCHER_CALLED_PERMISSIONS, ...LAUNCHER_IMPLIED_PERMISSIONS];

/** Distinct action names (one action may be granted on several resources). */
export const LAUNCHER_CALLED_ACTIONS: readonly string[] = [...new Set(LAUNCHER_CALLED_PERMISSIONS.map((p) => p.action))];
export const LAUNCHER_IAM_ACTIONS: readonly string[] = [...new Set(LAUNCHER_IAM_PERMISSIONS.map((p) => p.action))];
