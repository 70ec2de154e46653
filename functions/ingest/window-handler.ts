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
        throw error;
      }
      await deliverWindow(deps, record, parsed.payload, gpu);
    };

    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
