import { calledActions, grantedActions, type Grant } from "../shared/grants";

/**
 * The IAM grants the pool code needs, declared once, beside that code; the program binds each
 * symbolic resource (`infra/parts/pool.ts`), scoping EC2 start and launch by the pool tag.
 * Side-effect free: importing the entry module would parse the environment.
 */
export type PoolResource =
  | "pool-queues" // every class's pool queue
  | "claim-table" // the claim table (locks and refill leases)
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "pool-instances" // instances tagged encache:pool=<poolTag>
  | "pool-launch-created" // what RunInstances creates (instance, volumes, ENI), which must carry the pool tag
  | "pool-launch-instances" // the instances RunInstances creates: pool-tagged, from a pool template, of a pool instance type
  | "pool-launch-attachments" // the volumes and ENIs it creates with them: pool-tagged, from a pool template
  | "pool-launch-inputs" // what RunInstances uses: the pool's launch templates, subnet, security group, images
  | "pool-spot-requests" // the Spot request RunInstances creates for a Spot class's template
  | "pool-ami-parameters" // the public SSM parameters the templates name as their AMI (resolve:ssm:)
  | "instance-role" // the pool instance profile's role
  | "refill-dlq"; // the refill queue's DLQ (quarantine of malformed refill messages)

const describeInstances = { sid: "DescribeInstances", actions: ["ec2:DescribeInstances"], resource: "*" } as const satisfies Grant<PoolResource>;
const startPoolInstances = { sid: "StartPoolInstances", actions: ["ec2:StartInstances"], resource: "pool-instances" } as const satisfies Grant<PoolResource>;

/** The claim API (pickup + lock + EC2 check): a managed policy the claim worker's role attaches. */
export const CLAIM_GRANTS = [
  { sid: "PickupAdverts", actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:SendMessage"], resource: "pool-queues" },
  { sid: "ClaimTable", actions: ["dynamodb:PutItem", "dynamodb:DeleteItem"], resource: "claim-table" },
  describeInstances,
  startPoolInstances,
] as const satisfies readonly Grant<PoolResource>[];

/** The refill handler. */
export const REFILL_GRANTS = [
  { sid: "ClaimTable", actions: ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem"], resource: "claim-table" },
  describeInstances,
  startPoolInstances,
  // RunInstances authorises every resource it touches: the ones it creates must carry the pool tag
  // in the request, the ones it uses are named, and every one of them only through one of the
  // pool's launch templates (the bindings' ec2:LaunchTemplate condition): the role cannot launch
  // another AMI, instance type or user data with the pool's instance role.
  { sid: "RunTaggedPoolInstances", actions: ["ec2:RunInstances"], resource: "pool-launch-instances" },
  { sid: "RunTaggedPoolAttachments", actions: ["ec2:RunInstances"], resource: "pool-launch-attachments" },
  { sid: "RunFromPoolTemplates", actions: ["ec2:RunInstances"], resource: "pool-launch-inputs" },
  // A Spot class's template makes RunInstances create a Spot request, which IAM authorises too;
  // without it every Spot refill is denied. It launches nothing the statements above do not allow.
  { sid: "RunSpotRequests", actions: ["ec2:RunInstances"], resource: "pool-spot-requests" },
  // The templates name their AMI as resolve:ssm:<parameter>; EC2 reads the parameter with the
  // caller's rights when it launches, so the caller needs ssm:GetParameters on it.
  { sid: "ResolveTemplateAmi", actions: ["ssm:GetParameters"], resource: "pool-ami-parameters", implied: true },
  // Tag-on-create needs CreateTags, and only as part of RunInstances.
  {
    sid: "TagOnLaunch",
    actions: ["ec2:CreateTags"],
    resource: "pool-launch-created",
    condition: { StringEquals: { "ec2:CreateAction": "RunInstances" } },
    implied: true,
  },
  // A template with an instance profile needs iam:PassRole on its role, and only to EC2.
  {
    sid: "PassInstanceRole",
    actions: ["iam:PassRole"],
    resource: "instance-role",
    condition: { StringEquals: { "iam:PassedToService": "ec2.amazonaws.com" } },
    implied: true,
  },
  { sid: "Advertise", actions: ["sqs:SendMessage"], resource: "pool-queues" },
  { sid: "QuarantineMalformed", actions: ["sqs:SendMessage"], resource: "refill-dlq" },
] as const satisfies readonly Grant<PoolResource>[];

export const CLAIM_IAM_ACTIONS: readonly string[] = calledActions(CLAIM_GRANTS);
export const REFILL_IAM_ACTIONS: readonly string[] = calledActions(REFILL_GRANTS);
/** Those plus what AWS authorises as part of RunInstances (ec2:CreateTags, iam:PassRole). */
export const REFILL_ROLE_ACTIONS: readonly string[] = grantedActions(REFILL_GRANTS);
