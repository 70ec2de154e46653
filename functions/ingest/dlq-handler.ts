import type { EC2Client } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { SQSRecord } from "aws-lambda";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { approximateReceiveCount, messageAgeSeconds, once, processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { DlqConfig } from "./config";
import { deliverWindow, type GpuServiceUrlBuilder } from "./deliver-window";
import { type AutostartOutcome, type GpuAddress, type GpuObservation, GpuUnavailableError, lookupGpu, tryStartGpu } from "./gpu";
import { parkReasonFor, parkSeconds, stillBooting, type ParkReason } from "./park";
import type { FetchFn } from "./gpu-http";
import { type FleetTarget, oldestInServiceLaunch } from "./fleet";
import { parseWindowPayload } from "./payload";
import { changeVisibilityInBatches } from "./visibility";

export interface DlqHandlerDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  gpuServiceUrl: GpuServiceUrlBuilder;
  config: DlqConfig;
  logger: StepLogger;
  metrics: MetricsSink;
  /** Fleet mode: the group and its load balancer stand in for the single instance (fleet.ts). */
  fleet?: FleetTarget;
  /** Epoch milliseconds; injectable so tests control message age. */
  now?: () => number;
}

/**
 * How long a warm environment trusts a GPU it found serving. Draining a backlog takes many
 * invocations of at most 10 records; without this each would cost an SSM read and a
 * DescribeInstances on top of its POSTs. A GPU that stopped meanwhile only fails one batch's POSTs,
 * which clears this.
 */
export const SERVING_GPU_CACHE_MS = 30_000;

export function createDlqHandler(deps: DlqHandlerDeps): SqsBatchHandler {
  // Module scope in the Lambda (the handler is built once), so warm invocations share it.
  let serving: { address: GpuAddress; until: number } | undefined;
  return async (event, context) => {
    const now = deps.now ?? Date.now;
    const cached = serving !== undefined && now() < serving.until ? serving.address : undefined;
    // A failed check counts as "unavailable": this queue's job is to hold messages until the
    // GPU is back, so parking is the safe answer.
    const gpuLookup = once(
      (): Promise<{ address: GpuAddress | null; seen: GpuObservation | undefined }> =>
        cached
          ? Promise.resolve({ address: cached, seen: undefined as GpuObservation | undefined })
          : lookupGpu(deps).catch((error: unknown) => {
              logStep(deps.logger, "warn", "gpu_availability_check_failed", { error: errorMessage(error) });
              return { address: null, seen: undefined as GpuObservation | undefined };
            }),
    );
    const runningGpu = async () => (await gpuLookup()).address;
    // The start attempt reuses what the availability check read; after a failed check it reads afresh.
    const startGpuOnce = once(async (): Promise<AutostartOutcome> => {
      const outcome = await tryStartGpu(deps, (await gpuLookup()).seen);
      if (outcome === "attempted") countOne(deps.metrics, "GpuAutostartAttempted");
      if (outcome === "insufficient_capacity") countOne(deps.metrics, "GpuStartInsufficientCapacity");
      return outcome;
    });

    // Fleet mode: the address is the load balancer's, with no launch time; a refused delivery asks
    // when the longest-serving in-service instance launched (once per invocation).
    const fleetLaunch = once(async (): Promise<Date | undefined> => {
      const group = (await gpuLookup()).seen?.fleet;
      return group ? oldestInServiceLaunch(deps.ec2, group, deps.logger) : undefined;
    });

    // Parks are collected and sent after the batch, one ChangeMessageVisibilityBatch per 10 records:
    // the records still throw, so each is reported failed whether or not its park succeeds.
    const parks: Array<{ record: SQSRecord; reason: ParkReason }> = [];
    const park = (record: SQSRecord, reason: ParkReason): void => {
      parks.push({ record, reason });
    };

    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseWindowPayload(record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      // The DLQ has no DLQ of its own: a message the GPU never took would expire here unseen.
      const ageSeconds = messageAgeSeconds(record, now());
      if (ageSeconds >= deps.config.maxAgeSeconds) {
        const reason = `expiring_in_dlq: ${ageSeconds} s old, limit ${deps.config.maxAgeSeconds} s, ${approximateReceiveCount(record)} receives`;
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, reason, deps);
        return;
      }
      const gpu = await runningGpu();
      if (gpu) {
        try {
          await deliverWindow(deps, record, parsed.payload, gpu);
          serving = { address: gpu, until: now() + SERVING_GPU_CACHE_MS };
        } catch (error) {
          serving = undefined;
          // A service that refuses right after its instance started is booting (in fleet mode: right
          // after the longest-serving in-service instance started): park briefly so this message is
          // back soon after it answers. Otherwise the failure retries as before.
          const launchTime = gpu.launchTime ?? (deps.fleet ? await fleetLaunch() : undefined);
          if (stillBooting(launchTime, now(), deps.config)) park(record, "booting");
          throw error;
        }
        return;
      }
      const reason = parkReasonFor(await startGpuOnce());
      park(record, reason);
      throw new GpuUnavailableError(`message ${record.messageId} parked: GPU ${reason}`);
    };

    try {
      const result = await processSqsBatch(event, handleRecord, context);
      await applyParks(deps, parks);
      return result;
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

/** Hides each parked record for its reason's park, in batches of 10, and logs and counts each park. */
async function applyParks(deps: DlqHandlerDeps, parks: ReadonlyArray<{ record: SQSRecord; reason: ParkReason }>): Promise<void> {
  const changes = parks.map(({ record, reason }) => ({ record, seconds: parkSeconds(reason, deps.config) }));
  const failed = await changeVisibilityInBatches(deps.sqs, deps.config.dlqUrl, changes);
  parks.forEach(({ record, reason }, i) => {
    const error = failed.get(record.messageId);
    if (error !== undefined) {
      // The record is still reported as failed, so it only comes back sooner than planned.
      logStep(deps.logger, "error", "dlq_visibility_extend_failed", { message_id: record.messageId, error });
      return;
    }
    logStep(deps.logger, "info", "dlq_visibility_extended", {
      message_id: record.messageId,
      extended_seconds: changes[i]?.seconds,
      receive_count: approximateReceiveCount(record),
      reason: `gpu_${reason}`,
    });
    countOne(deps.metrics, "DlqMessagesParked");
  });
}
