/**
 * What the worker's code calls, with the resource each applies to. Side-effect free (importing
 * the entry would parse the environment). The agent-endpoint calls are authorised by the task
 * role as the ECS API actions below.
 */
export type WorkerResource =
  | "work-queue" // the queue in WORK_QUEUE_URL
  | "work-dlq" // the queue in QUARANTINE_QUEUE_URL (the work queue's DLQ)
  | "own-task"; // this task, in the platform cluster

export interface IamPermission {
  readonly action: string;
  readonly resource: WorkerResource;
}

export const WORKER_IAM_PERMISSIONS = [
  { action: "sqs:ReceiveMessage", resource: "work-queue" },
  { action: "sqs:DeleteMessage", resource: "work-queue" },
  { action: "sqs:ChangeMessageVisibility", resource: "work-queue" },
  { action: "sqs:SendMessage", resource: "work-dlq" },
  { action: "ecs:UpdateTaskProtection", resource: "own-task" }, // PUT $ECS_AGENT_URI/task-protection/v1/state
  { action: "ecs:GetTaskProtection", resource: "own-task" }, // GET, at start-up
] as const satisfies readonly IamPermission[];

export const WORKER_IAM_ACTIONS: readonly string[] = WORKER_IAM_PERMISSIONS.map((p) => p.action);

/** The agent call each ECS action stands for, so the test can map recorded requests to actions. */
export const AGENT_METHOD_ACTIONS: Readonly<Record<string, string>> = {
  PUT: "ecs:UpdateTaskProtection",
  GET: "ecs:GetTaskProtection",
};
