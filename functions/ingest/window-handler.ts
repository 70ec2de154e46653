import type { EC2Client } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityCommand, type SQSClient } from "@aws-sdk/client-sqs";
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
import { parseWindowPayload } from "./payload";

export interface WindowHandlerDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  gpuServiceUrl: GpuServiceUrlBuilder;
  config: WindowConfig;
  logger: StepLogger;
  metrics: MetricsSink;
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

    /**
     * The GPU is down or booting: bring the record back in `retrySeconds`, not the queue's
     * visibility timeout. While the GPU is down that takes windows to the DLQ, whose consumer
     * starts it, within a minute; while it boots they are tried again soon after it answers.
     */
    const retrySoon = async (record: SQSRecord, reason: string): Promise<void> => {
      try {
        await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.config.ingestQueueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: deps.config.retrySeconds }));
        logStep(deps.logger, "info", "window_retry_soon", { message_id: record.messageId, retry_seconds: deps.config.retrySeconds, reason });
      } catch (error) {
        // The record still fails; it only comes back after the visibility timeout instead.
        logStep(deps.logger, "warn", "window_retry_soon_failed", { message_id: record.messageId, error: errorMessage(error) });
      }
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
        await retrySoon(record, "gpu_unavailable");
        throw error;
      }
      try {
        await deliverWindow(deps, record, parsed.payload, gpu);
      } catch (error) {
        if (stillBooting(gpu.launchTime, (deps.now ?? Date.now)(), deps.config)) await retrySoon(record, "gpu_booting");
        throw error;
      }
    };

    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
