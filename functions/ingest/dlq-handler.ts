import type { EC2Client } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { SQSRecord } from "aws-lambda";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { approximateReceiveCount, messageAgeSeconds, once, processSqsBatch } from "../shared/sqs";
import type { DlqConfig } from "./config";
import { deliverWindow, type GpuServiceUrlBuilder } from "./deliver-window";
import { type GpuObservation, GpuUnavailableError, lookupGpu, tryStartGpu } from "./gpu";
import type { FetchFn } from "./gpu-http";
import { parseWindowPayload } from "./payload";
import type { SqsBatchHandler } from "../shared/sqs";

export interface DlqHandlerDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  gpuServiceUrl: GpuServiceUrlBuilder;
  config: DlqConfig;
  logger: StepLogger;
  metrics: MetricsSink;
  /** Epoch milliseconds; injectable so tests control message age. */
  now?: () => number;
}

export function createDlqHandler(deps: DlqHandlerDeps): SqsBatchHandler {
  return async (event, context) => {
    // A failed check counts as "unavailable": this queue's job is to hold messages until the
    // GPU is back, so parking is the safe answer.
    const gpuLookup = once(() =>
      lookupGpu(deps).catch((error: unknown) => {
        logStep(deps.logger, "warn", "gpu_availability_check_failed", { error: errorMessage(error) });
        return { address: null, seen: undefined as GpuObservation | undefined };
      }),
    );
    const runningGpu = async () => (await gpuLookup()).address;
    // The start attempt reuses what the availability check read; after a failed check it reads afresh.
    const startGpuOnce = once(async () => {
      if ((await tryStartGpu(deps, (await gpuLookup()).seen)) === "attempted") countOne(deps.metrics, "GpuAutostartAttempted");
    });

    const park = async (record: SQSRecord): Promise<void> => {
      const extendedSeconds = deps.config.visibilityExtensionSeconds;
      try {
        await deps.sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: deps.config.dlqUrl,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: extendedSeconds,
          }),
        );
      } catch (error) {
        // The record is still reported as failed below, so it only comes back sooner than planned.
        logStep(deps.logger, "error", "dlq_visibility_extend_failed", {
          message_id: record.messageId,
          error: errorMessage(error),
        });
        return;
      }
      logStep(deps.logger, "info", "dlq_visibility_extended", {
        message_id: record.messageId,
        extended_seconds: extendedSeconds,
        receive_count: approximateReceiveCount(record),
        reason: "gpu_unavailable",
      });
      countOne(deps.metrics, "DlqMessagesParked");
    };

    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseWindowPayload(record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      // The DLQ has no DLQ of its own: a message the GPU never took would expire here unseen.
      const ageSeconds = messageAgeSeconds(record, (deps.now ?? Date.now)());
      if (ageSeconds >= deps.config.maxAgeSeconds) {
        const reason = `expiring_in_dlq: ${ageSeconds} s old, limit ${deps.config.maxAgeSeconds} s, ${approximateReceiveCount(record)} receives`;
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, reason, deps);
        return;
      }
      const gpu = await runningGpu();
      if (gpu) {
        await deliverWindow(deps, record, parsed.payload, gpu);
        return;
      }
      await startGpuOnce();
      await park(record);
      throw new GpuUnavailableError(`message ${record.messageId} parked: GPU unavailable`);
    };

    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
