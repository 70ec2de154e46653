import { calledActions, type Grant } from "../shared/grants";

/**
 * The worker task role's grants, declared once, beside the worker's code; the program binds each
 * symbolic resource (`infra/parts/worker.ts`). The agent-endpoint calls are authorised by the task
 * role as the ECS API actions below.
 */
export type WorkerResource =
  | "work-queue" // the queue in WORK_QUEUE_URL
  | "work-dlq" // the queue in QUARANTINE_QUEUE_URL (the work queue's DLQ)
  | "jobs-table" // the job ledger in WORKER_JOBS_TABLE
  | "own-task"; // this task, in the platform cluster

export const WORKER_GRANTS = [
  { sid: "WorkQueue", actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"], resource: "work-queue" },
  // Malformed messages and unknown job types are moved to the DLQ with their reason (quarantine).
  { sid: "QuarantineToDlq", actions: ["sqs:SendMessage"], resource: "work-dlq" },
  // The job ledger: every write (take, record a handle, renew, release, complete) is one conditional
  // UpdateItem whose ALL_NEW / ALL_OLD answers are its only reads.
  { sid: "JobLedger", actions: ["dynamodb:UpdateItem"], resource: "jobs-table" },
  // PUT $ECS_AGENT_URI/task-protection/v1/state, and GET at start-up.
  { sid: "OwnTaskScaleInProtection", actions: ["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"], resource: "own-task" },
] as const satisfies readonly Grant<WorkerResource>[];

export const WORKER_IAM_ACTIONS: readonly string[] = calledActions(WORKER_GRANTS);

/** The agent call each ECS action stands for, so the test can map recorded requests to actions. */
export const AGENT_METHOD_ACTIONS: Readonly<Record<string, string>> = {
  PUT: "ecs:UpdateTaskProtection",
  GET: "ecs:GetTaskProtection",
};
