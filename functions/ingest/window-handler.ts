import type { EC2Client } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { SQSRecord } from "aws-lambda";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { once, processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { WindowConfig } from "./config";
import { deliverWindow, type GpuServiceUrlBuilder } from "./deliver-window";
import { type GpuAddress, resolveGpuAddress } from "./gpu";
import { stillBooting } from "./park";
import type { FetchFn } from "./gpu-http";
import type { FleetTarget } from "./fleet";
import { parseWindowPayload } from "./payload";
import { changeVisibilityInBatches } from "./visibility";

export interface WindowHandlerDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  gpuServiceUrl: GpuServiceUrlBuilder;
  config: WindowConfig;
  logger: StepLogger;
  metrics: MetricsSink;
  /** Fleet mode: the group and its load balancer stand in for the single instance (fleet.ts). */
  fleet?: FleetTarget;
  /** Epoch milliseconds; injectable so tests control the boot grace. */
  now?: () => number;
}

export function createWindowHandler(deps: WindowHandlerDeps): SqsBatchHandler {
  return async (event, context) => {
    // One lookup per batch; if it fails, every valid record fails with it and is retried.
    const gpuAddress = once(() =>
      resolveGpuAddress(deps).catch((error: unknown) => {
        logStep(deps.logger, "warn", "gpu_unavailable", { error: errorMessage(error) });
        throw error;
      }),
    );

    // Failed records to bring back soon, sent in one batch call after the batch (see retrySoon).
    const soon: Array<{ record: SQSRecord; reason: string }> = [];
    const retrySoon = (record: SQSRecord, reason: string): void => {
      soon.push({ record, reason });
    };

    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseWindowPayload(record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      let gpu: GpuAddress;
      try {
        gpu = await gpuAddress();
      } catch (error) {
        countOne(deps.metrics, "WindowsFailed");
        retrySoon(record, "gpu_unavailable");
        throw error;
      }
      try {
        await deliverWindow(deps, record, parsed.payload, gpu);
      } catch (error) {
        if (stillBooting(gpu.launchTime, (deps.now ?? Date.now)(), deps.config)) retrySoon(record, "gpu_booting");
        throw error;
      }
    };

    try {
      const result = await processSqsBatch(event, handleRecord, context);
      await bringBackSoon(deps, soon);
      return result;
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

/**
 * The GPU is down or booting: bring the failed records back in `retrySeconds`, not the queue's
 * visibility timeout. While the GPU is down that takes windows to the DLQ, whose consumer starts
 * it, within a minute; while it boots they are tried again soon after it answers. One batch call
 * per 10 records; a record whose change fails still fails, and only comes back later.
 */
async function bringBackSoon(deps: WindowHandlerDeps, soon: Array<{ record: SQSRecord; reason: string }>): Promise<void> {
  const seconds = deps.config.retrySeconds;
  const failed = await changeVisibilityInBatches(
    deps.sqs,
    deps.config.ingestQueueUrl,
    soon.map(({ record }) => ({ record, seconds })),
  );
  for (const { record, reason } of soon) {
    const error = failed.get(record.messageId);
    if (error === undefined) logStep(deps.logger, "info", "window_retry_soon", { message_id: record.messageId, retry_seconds: seconds, reason });
    else logStep(deps.logger, "warn", "window_retry_soon_failed", { message_id: record.messageId, error });
  }
}
