/**
 * The IAM actions each fleet handler's code calls, with the resource each applies to. Kept apart
 * from the entry modules because importing those parses the environment. The event source
 * mapping's own sqs:ReceiveMessage/DeleteMessage/GetQueueAttributes are not listed: the handler
 * code never calls them.
 */
export type FleetResource =
  | "jobs-table" // RUNS_FLEET_JOBS_TABLE
  | "jobs-table-indexes" // its GSIs (Query)
  | "runner-parameters" // /runs-fleet/runners/* (and the path itself for GetParametersByPath)
  | "managed-instances" // instances tagged runs-fleet:managed=true, by condition
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "termination-dlq" // RUNS_FLEET_TERMINATION_DLQ_URL (quarantine)
  | "housekeeping-dlq"; // RUNS_FLEET_HOUSEKEEPING_DLQ_URL (quarantine)

export interface IamPermission {
  readonly action: string;
  readonly resource: FleetResource;
}

export const TERMINATION_IAM_PERMISSIONS = [
  { action: "dynamodb:UpdateItem", resource: "jobs-table" },
  { action: "ssm:DeleteParameter", resource: "runner-parameters" },
  { action: "sqs:SendMessage", resource: "termination-dlq" },
] as const satisfies readonly IamPermission[];

export const HOUSEKEEPING_IAM_PERMISSIONS = [
  { action: "ec2:DescribeInstances", resource: "*" },
  { action: "ec2:TerminateInstances", resource: "managed-instances" },
  { action: "ssm:GetParametersByPath", resource: "runner-parameters" },
  { action: "ssm:DeleteParameters", resource: "runner-parameters" },
  { action: "dynamodb:Query", resource: "jobs-table-indexes" },
  { action: "dynamodb:BatchWriteItem", resource: "jobs-table" },
  { action: "sqs:SendMessage", resource: "housekeeping-dlq" },
] as const satisfies readonly IamPermission[];

export const TERMINATION_IAM_ACTIONS: readonly string[] = TERMINATION_IAM_PERMISSIONS.map((p) => p.action);
export const HOUSEKEEPING_IAM_ACTIONS: readonly string[] = HOUSEKEEPING_IAM_PERMISSIONS.map((p) => p.action);
