import { calledActions, type Grant } from "../functions/shared/grants";

/**
 * What an operator needs to run `npm run ops` against one stack, declared once, beside the code
 * that makes the calls (as each function's grants are, functions/<part>/iam.ts). The program binds
 * each symbolic resource to this stack's ARNs (infra/parts/operator.ts) and declares the result as
 * the stack's operator policy; the local run judges the operator's calls against that same policy
 * (local/aws/operator-iam.ts); test/ops/iam.test.ts drives every command and checks it sends exactly
 * the called actions.
 */
export type OperatorResource =
  | "*" // actions with no resource-level permissions (Describe calls, CloudWatch's statistics)
  | "stack-queues" // every queue of the stack: sources, their DLQs, terminal queues
  | "dead-letter-queues" // every DLQ and terminal queue (quarantine, Scheduler's DLQs): what peek reads
  | "quarantine-queues" // the quarantine queues: the only ones a release deletes from
  | "redrivable-dlqs" // the DLQs of the stack's source queues: what a move task may start from
  | "redrive-sources" // the source queues those DLQs return messages to
  | "quarantine-sources" // the queues whose consumers quarantine: where a release resends
  | "worker-service" // the queue worker's ECS service
  | "worker-cluster" // `*` with ecs:cluster: a ListTasks naming no container instance is authorised on `*`
  | "worker-tasks" // the tasks on the platform's cluster
  | "stack-gpu" // instance mode: this stack's GPU (its Name tag and environment tag)
  | "stack-gpu-hold-tag" // instance mode: the hold tag on this stack's GPU, and no other key
  | "stack-gpu-group" // fleet mode: this stack's Auto Scaling group
  | "stack-gpu-group-hold-tag"; // fleet mode: the hold tag on that group, and no other key

/** `ops status`, `dlq peek`, `quarantine list|release`, `dlq redrive`: in both GPU capacity modes. */
export const OPERATOR_GRANTS = [
  { sid: "ReadQueueDepths", actions: ["sqs:GetQueueAttributes"], resource: "stack-queues" },
  // GetMetricStatistics supports no resource-level permissions: the oldest message's age per queue.
  { sid: "ReadQueueAges", actions: ["cloudwatch:GetMetricStatistics"], resource: "*" },
  { sid: "ReadWorkerService", actions: ["ecs:DescribeServices"], resource: "worker-service" },
  { sid: "ListWorkerTasks", actions: ["ecs:ListTasks"], resource: "worker-cluster" },
  { sid: "ReadWorkerTasks", actions: ["ecs:DescribeTasks", "ecs:GetTaskProtection"], resource: "worker-tasks" },
  // A peek and a quarantine list receive with visibility 0, so nothing is hidden from consumers.
  { sid: "PeekDeadLetters", actions: ["sqs:ReceiveMessage"], resource: "dead-letter-queues" },
  // A release deletes the copy it resent, from the quarantine queue it read; ops deletes from no other
  // queue (a redrive's deletes are SQS's, on the DLQ, below; Scheduler's DLQs are only ever read).
  { sid: "ReleaseDeletesFromQuarantine", actions: ["sqs:DeleteMessage"], resource: "quarantine-queues" },
  { sid: "ReleaseFromQuarantine", actions: ["sqs:SendMessage"], resource: "quarantine-sources" },
  {
    sid: "RedriveDeadLetters",
    actions: ["sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:CancelMessageMoveTask"],
    resource: "redrivable-dlqs",
  },
  // What SQS checks on the caller's behalf while a move task runs (SQS's developer guide,
  // "Configure queue permissions for dead-letter queue redrive"): receive, delete and read on the DLQ…
  {
    sid: "RedriveReadsDeadLetters",
    actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
    resource: "redrivable-dlqs",
    implied: true,
  },
  // …and send on the queue each message returns to.
  { sid: "RedriveReturnsToSource", actions: ["sqs:SendMessage"], resource: "redrive-sources", implied: true },
] as const satisfies readonly Grant<OperatorResource>[];

/** `ops gpu` in instance mode: the instance's state, the hold tag, the stop (the idle check's, by hand). */
export const OPERATOR_INSTANCE_GRANTS = [
  { sid: "ReadGpu", actions: ["ec2:DescribeInstances"], resource: "*" },
  { sid: "HoldStackGpu", actions: ["ec2:CreateTags", "ec2:DeleteTags"], resource: "stack-gpu-hold-tag" },
  { sid: "StopStackGpu", actions: ["ec2:StopInstances"], resource: "stack-gpu" },
] as const satisfies readonly Grant<OperatorResource>[];

/** `ops gpu` in fleet mode: the group's capacity, the hold tag on the group, its desired capacity (0 for a stop, N for a size). */
export const OPERATOR_FLEET_GRANTS = [
  { sid: "ReadGpuGroup", actions: ["autoscaling:DescribeAutoScalingGroups"], resource: "*" },
  { sid: "HoldStackGpuGroup", actions: ["autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags"], resource: "stack-gpu-group-hold-tag" },
  // `gpu stop` (desired 0) and `gpu size N`: the one call that changes the group's size.
  { sid: "SizeStackGpuGroup", actions: ["autoscaling:SetDesiredCapacity"], resource: "stack-gpu-group" },
] as const satisfies readonly Grant<OperatorResource>[];

export type GpuCapacityMode = "instance" | "fleet";

/** Every grant the operator of a stack in this GPU mode holds. */
export function operatorGrants(mode: GpuCapacityMode): readonly Grant<OperatorResource>[] {
  return [...OPERATOR_GRANTS, ...(mode === "fleet" ? OPERATOR_FLEET_GRANTS : OPERATOR_INSTANCE_GRANTS)];
}

/** The actions `ops` itself sends in this mode (what a test of its calls compares against). */
export function operatorCalledActions(mode: GpuCapacityMode): string[] {
  return calledActions(operatorGrants(mode));
}
