import type { SQSRecord } from "aws-lambda";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import type { GpuAddress } from "./gpu";
import { type FetchFn, postWindowToGpu } from "./gpu-http";
import type { WindowPayload } from "./payload";

export type GpuServiceUrlBuilder = (privateIp: string) => string;

export interface DeliverWindowDeps {
  fetch: FetchFn;
  gpuServiceUrl: GpuServiceUrlBuilder;
  config: { requestTimeoutMs: number };
  logger: StepLogger;
  metrics: MetricsSink;
}

export function gpuServiceUrlFor(config: { servicePort: number; servicePath: string }): GpuServiceUrlBuilder {
  return (privateIp) => `http://${privateIp}:${config.servicePort}${config.servicePath}`;
}

/**
 * Sends one validated window to the running GPU. Shared by the window and DLQ consumers so a
 * redelivered message is processed exactly like a fresh one. Throws so the record is retried.
 */
export async function deliverWindow(deps: DeliverWindowDeps, record: SQSRecord, payload: WindowPayload, gpu: GpuAddress): Promise<void> {
  try {
    await postWindowToGpu(deps.fetch, deps.gpuServiceUrl(gpu.privateIp), payload, deps.config.requestTimeoutMs);
  } catch (error) {
    logStep(deps.logger, "warn", "window_failed", {
      message_id: record.messageId,
      instance_id: gpu.instanceId,
      error: errorMessage(error),
    });
    countOne(deps.metrics, "WindowsFailed");
    throw error;
  }
  logStep(deps.logger, "info", "window_processed", {
    message_id: record.messageId,
    instance_id: gpu.instanceId,
    session_id: payload.sessionId,
    window_index: payload.windowIndex,
  });
  countOne(deps.metrics, "WindowsProcessed");
}
