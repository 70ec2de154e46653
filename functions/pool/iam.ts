/**
 * The IAM actions the pool code calls, with the resource each applies to. Side-effect free:
 * importing the entry module would parse the environment.
 */
export type PoolResource =
  | "pool-queues" // every class's pool queue
  | "claim-table" // the claim table (locks and refill leases)
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "pool-instances" // instances tagged encache:pool=<poolTag>
  | "pool-launch" // RunInstances: tagged instances/volumes plus the pool's templates, subnets, groups, images
  | "instance-role" // iam:PassRole of the pool instance profile's role, to ec2.amazonaws.com only
  | "refill-dlq"; // the refill queue's DLQ (quarantine of malformed refill messages)

export interface IamPermission {
  readonly action: string;
  readonly resource: PoolResource;
}

/** The claim API (pickup + lock + EC2 check): for the claim worker's role. */
export const CLAIM_IAM_PERMISSIONS = [
  { action: "sqs:ReceiveMessage", resource: "pool-queues" },
  { action: "sqs:DeleteMessage", resource: "pool-queues" },
  { action: "sqs:SendMessage", resource: "pool-queues" },
  { action: "dynamodb:PutItem", resource: "claim-table" },
  { action: "dynamodb:DeleteItem", resource: "claim-table" },
  { action: "ec2:DescribeInstances", resource: "*" },
  { action: "ec2:StartInstances", resource: "pool-instances" },
] as const satisfies readonly IamPermission[];

/** What the refill handler's code sends. */
export const REFILL_IAM_PERMISSIONS = [
  { action: "dynamodb:PutItem", resource: "claim-table" },
  { action: "dynamodb:DeleteItem", resource: "claim-table" },
  { action: "dynamodb:BatchGetItem", resource: "claim-table" },
  { action: "ec2:DescribeInstances", resource: "*" },
  { action: "ec2:StartInstances", resource: "pool-instances" },
  { action: "ec2:RunInstances", resource: "pool-launch" },
  { action: "sqs:SendMessage", resource: "pool-queues" },
  { action: "sqs:SendMessage", resource: "refill-dlq" },
] as const satisfies readonly IamPermission[];

/**
 * Authorised by AWS as part of RunInstances rather than sent by the code: tag-on-create needs
 * ec2:CreateTags (conditioned on ec2:CreateAction=RunInstances), and a template with an
 * instance profile needs iam:PassRole on its role.
 */
export const REFILL_IMPLIED_PERMISSIONS = [
  { action: "ec2:CreateTags", resource: "pool-launch" },
  { action: "iam:PassRole", resource: "instance-role" },
] as const satisfies readonly IamPermission[];

export const CLAIM_IAM_ACTIONS: readonly string[] = [...new Set(CLAIM_IAM_PERMISSIONS.map((p) => p.action))];
export const REFILL_IAM_ACTIONS: readonly string[] = [...new Set(REFILL_IAM_PERMISSIONS.map((p) => p.action))];
export const REFILL_ROLE_ACTIONS: readonly string[] = [...new Set([...REFILL_IAM_ACTIONS, ...REFILL_IMPLIED_PERMISSIONS.map((p) => p.action)])];
