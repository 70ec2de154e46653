import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import type { GpuConfig } from "./config";
import { gpuServiceUrlFor } from "./deliver-window";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ssm = new SSMClient({});
const ec2 = new EC2Client({});
const sqs = new SQSClient({});
const autoscaling = new AutoScalingClient({});

/** The real clients and telemetry every ingest entry point runs with; tests build their own. */
export function runtimeClients<C>(config: C) {
  return {
    ssm,
    ec2,
    sqs,
    autoscaling,
    fetch: (url: string, init: RequestInit) => fetch(url, init),
    config,
    logger: createLogger(),
    metrics: createMetrics(),
  };
}

/** The fleet target when the config names a group and its load balancer (fleet mode), else undefined (one instance). */
export function fleetTargetOf(config: Pick<GpuConfig, "fleetGroupName" | "fleetServiceHost">, client: AutoScalingClient = autoscaling) {
  if (config.fleetGroupName === undefined && config.fleetServiceHost === undefined) return undefined;
  if (config.fleetGroupName === undefined || config.fleetServiceHost === undefined) {
    throw new Error("GPU_FLEET_GROUP_NAME and GPU_FLEET_SERVICE_HOST are set together (fleet mode) or not at all (one instance)");
  }
  return { autoscaling: client, groupName: config.fleetGroupName, serviceHost: config.fleetServiceHost };
}

/** runtimeClients, plus the GPU service's window URL the consumers post to, and the fleet in fleet mode. */
export function runtimeDeps<C extends GpuConfig>(config: C) {
  const fleet = fleetTargetOf(config);
  return { ...runtimeClients(config), gpuServiceUrl: gpuServiceUrlFor(config), ...(fleet ? { fleet } : {}) };
}
