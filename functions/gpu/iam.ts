import { calledActions, type Grant } from "../shared/grants";

/**
 * The GPU instance role's grants, declared once, beside the gateway's code; the program binds each
 * symbolic resource (`infra/parts/ingest.ts`). What the instance itself does at boot (pull the
 * images, ship the logs) is the platform's, bound beside the user data, not here.
 */
export type GpuResource =
  | "gpu-keys-table" // the key table in GPU_KEYS_TABLE
  | "stack-gpu-group"; // fleet mode: this stack's Auto Scaling group (GPU_FLEET_GROUP_NAME), by ARN and environment tag

/** Every key write (claim, done, release) is one conditional UpdateItem or DeleteItem whose ALL_OLD answer is its only read. */
const keyTable = {
  sid: "GpuKeyClaims",
  actions: ["dynamodb:UpdateItem", "dynamodb:DeleteItem"],
  resource: "gpu-keys-table",
} as const satisfies Grant<GpuResource>;

/** Instance mode: the gateway claims keys only. */
export const GATEWAY_GRANTS = [keyTable] as const satisfies readonly Grant<GpuResource>[];

/** Fleet mode: the gateway also completes its own terminate lifecycle action once drained. */
export const FLEET_GATEWAY_GRANTS = [
  keyTable,
  { sid: "CompleteOwnDrain", actions: ["autoscaling:CompleteLifecycleAction"], resource: "stack-gpu-group" },
] as const satisfies readonly Grant<GpuResource>[];

export const GATEWAY_IAM_ACTIONS: readonly string[] = calledActions(FLEET_GATEWAY_GRANTS);
