import { calledActions, grantedActions, type Grant } from "../shared/grants";

/**
 * The IAM grants the launcher needs, declared once, beside its code; the program binds each
 * symbolic resource (`infra/parts/retraining.ts`). Kept apart from the entry module, because
 * importing that parses the environment.
 */
export type RetrainingResource =
  | "strategy-task-definition-family" // every revision of the family in ECS_TASK_DEFINITION_ARN, on the cluster only
  | "cluster" // ListTasks: scoped with the ecs:cluster condition (it authorizes against container instances)
  | "cluster-tasks" // the tasks RunTask creates in the cluster (tag-on-create)
  | "strategy-task-roles" // the task role and execution role of the task definition
  | "state-table" // RETRAINING_STATE_TABLE
  | "intent-table" // RETRAINING_INTENT_TABLE
  | "quarantine-queue" // QUARANTINE_QUEUE_URL (the retraining DLQ)
  | "retraining-queue"; // RETRAINING_QUEUE_URL (the launcher's own queue: deferred copies)

export const LAUNCHER_GRANTS = [
  { sid: "CountRunningTasks", actions: ["ecs:ListTasks"], resource: "cluster" },
  { sid: "RunStrategyTask", actions: ["ecs:RunTask"], resource: "strategy-task-definition-family" },
  // RunTask with tags needs ecs:TagResource on the new task, and only as part of RunTask.
  {
    sid: "TagLaunchedTask",
    actions: ["ecs:TagResource"],
    resource: "cluster-tasks",
    condition: { StringEquals: { "ecs:CreateAction": "RunTask" } },
    implied: true,
  },
  // Handing the task its two roles, and only to ECS tasks.
  {
    sid: "PassStrategyTaskRoles",
    actions: ["iam:PassRole"],
    resource: "strategy-task-roles",
    condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
    implied: true,
  },
  // The state record is a conditional UpdateItem (state.ts); the capacity lease (lease.ts) is a
  // conditional put to take, a conditional delete to give back.
  {
    sid: "RetrainingState",
    actions: ["dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem"],
    resource: "state-table",
  },
  // Launch intents (intent.ts): one consistent BatchGetItem per batch finds launched origins; the
  // claim and its completion are conditional UpdateItems; a definite launch failure deletes the claim.
  {
    sid: "RetrainingIntent",
    actions: ["dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
    resource: "intent-table",
  },
  { sid: "QuarantineMalformed", actions: ["sqs:SendMessage"], resource: "quarantine-queue" },
  // Deferral (defer.ts) calls SendMessageBatch, which IAM authorizes as sqs:SendMessage.
  { sid: "DeferToOwnQueue", actions: ["sqs:SendMessage"], resource: "retraining-queue" },
] as const satisfies readonly Grant<RetrainingResource>[];

/** Actions the handler code sends as SDK commands. */
export const LAUNCHER_CALLED_ACTIONS: readonly string[] = calledActions(LAUNCHER_GRANTS);
/** Those plus what IAM authorizes as part of RunTask (iam:PassRole, ecs:TagResource). */
export const LAUNCHER_IAM_ACTIONS: readonly string[] = grantedActions(LAUNCHER_GRANTS);

/** The relaunch consumer's resources: the launcher's queue and its own DLQ. */
export type RelaunchResource = "retraining-queue" | "interruptions-dlq";

export const RELAUNCH_GRANTS = [
  // A relaunch is a launch request on the launcher's queue (relaunch-handler.ts).
  { sid: "RequestRelaunch", actions: ["sqs:SendMessage"], resource: "retraining-queue" },
  // An event that can never be relaunched is quarantined to the interruptions DLQ with its reason.
  { sid: "QuarantineMalformedEvent", actions: ["sqs:SendMessage"], resource: "interruptions-dlq" },
] as const satisfies readonly Grant<RelaunchResource>[];

export const RELAUNCH_CALLED_ACTIONS: readonly string[] = calledActions(RELAUNCH_GRANTS);
