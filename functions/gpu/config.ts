import { EnvConfigError, type EnvValuesOf } from "../shared/env";
import { GATEWAY_ENV } from "./env";

/** Fleet mode: the stack's Auto Scaling group and its terminate hook, which the gateway completes itself once drained. */
export interface FleetDrain {
  groupName: string;
  hookName: string;
}

/**
 * The gateway's settings: GATEWAY_ENV's fields, except that parse turns the env's seconds into
 * milliseconds inside the code (so tests can run the same code in ms) and the two fleet variables,
 * which come together or not at all, into one `fleet`. `modelUrl` (the model server's base URL) loses
 * any trailing slash.
 */
export interface GatewayConfig extends Omit<EnvValuesOf<typeof GATEWAY_ENV>, "keyLeaseSeconds" | "drainPollSeconds" | "groupName" | "drainHookName"> {
  keyLeaseMs: number;
  drainPollMs: number;
  /** Set in fleet mode only; instance mode has no lifecycle action to complete. */
  fleet: FleetDrain | undefined;
}

/**
 * Reads GATEWAY_ENV. The two fleet variables come together or not at all: one without the other is
 * a program bug that would leave a terminating instance waiting out its hook's whole timeout.
 */
export function parseGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const e = GATEWAY_ENV.parse(env);
  const problems: string[] = [];
  if (e.modelConcurrency < 1) problems.push("GPU_MODEL_CONCURRENCY must be at least 1");
  if ((e.groupName === undefined) !== (e.drainHookName === undefined))
    problems.push("GPU_FLEET_GROUP_NAME and GPU_DRAIN_HOOK_NAME are set together (fleet mode) or not at all (instance mode)");
  if (problems.length > 0) throw new EnvConfigError(problems);
  return {
    servicePort: e.servicePort,
    servicePath: e.servicePath,
    statusPath: e.statusPath,
    modelUrl: e.modelUrl.replace(/\/+$/, ""),
    modelPath: e.modelPath,
    modelHealthPath: e.modelHealthPath,
    modelConcurrency: e.modelConcurrency,
    modelTimeoutMs: e.modelTimeoutMs,
    keysTable: e.keysTable,
    keyLeaseMs: e.keyLeaseSeconds * 1000,
    drainPollMs: e.drainPollSeconds * 1000,
    fleet: e.groupName !== undefined && e.drainHookName !== undefined ? { groupName: e.groupName, hookName: e.drainHookName } : undefined,
  };
}
