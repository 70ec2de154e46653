/**
 * The IAM actions each handler's code calls, with the resource each applies to. Kept apart
 * from the handler entry modules because importing those parses the environment.
 * The event source mapping's own sqs:ReceiveMessage/DeleteMessage/GetQueueAttributes on the
 * consumed queue are not listed: the handler code never calls them.
 */
export type IngestResource =
  | "gpu-instance-id-parameter" // the SSM parameter named by GPU_INSTANCE_ID_PARAM
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "gpu-instances" // the GPU instance(s) carrying the Name tag GPU_NAME_TAG
  | "quarantine-queue" // the queue in QUARANTINE_QUEUE_URL
  | "ingest-dlq"; // the queue in INGEST_DLQ_URL

export interface IamPermission {
  readonly action: string;
  readonly resource: IngestResource;
}

export const WINDOW_IAM_PERMISSIONS = [
  { action: "ssm:GetParameter", resource: "gpu-instance-id-parameter" },
  { action: "ssm:PutParameter", resource: "gpu-instance-id-parameter" },
  { action: "ec2:DescribeInstances", resource: "*" },
  { action: "sqs:SendMessage", resource: "quarantine-queue" },
] as const satisfies readonly IamPermission[];

export const DLQ_IAM_PERMISSIONS = [
  { action: "ssm:GetParameter", resource: "gpu-instance-id-parameter" },
  { action: "ssm:PutParameter", resource: "gpu-instance-id-parameter" },
  { action: "ec2:DescribeInstances", resource: "*" },
  { action: "ec2:StartInstances", resource: "gpu-instances" },
  { action: "sqs:ChangeMessageVisibility", resource: "ingest-dlq" },
  { action: "sqs:SendMessage", resource: "quarantine-queue" },
] as const satisfies readonly IamPermission[];

/** Just the action names, for building and checking roles. */
export const WINDOW_IAM_ACTIONS: readonly string[] = WINDOW_IAM_PERMISSIONS.map((p) => p.action);
export const DLQ_IAM_ACTIONS: readonly string[] = DLQ_IAM_PERMISSIONS.map((p) => p.action);
