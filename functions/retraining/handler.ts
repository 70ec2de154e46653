import { randomUUID } from "node:crypto";
import type { ECSClient } from "@aws-sdk/client-ecs";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SQSBatchResponse, SQSRecord } from "aws-lambda";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import type { MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { once, processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { LaunchSlots } from "./capacity";
import type { LauncherConfig } from "./config";
import { capacityProviderFor, countRunningTasks, launchTask, runTaskInput } from "./ecs";
import { type Lineage, lineageOf, resendDeferred } from "./defer";
import { jobIdFor } from "./job-id";
import { acquireLease, LeaseBusyError, leaseWindow, releaseLease } from "./lease";
import { parseRetrainingMessage } from "./message";
import { isoUtc, latestLaunchedMessageIds, recordLaunch } from "./state";

/** Powertools Metrics plus the one dimension docs/parts/retraining.md puts on every metric. */
export interface LauncherMetrics extends MetricsSink {
  addDimension(name: string, value: string): unknown;
}

export interface LauncherDeps {
  ecs: ECSClient;
  db: DynamoDBDocumentClient;
  sqs: SQSClient;
  config: LauncherConfig;
  logger: StepLogger;
  metrics: LauncherMetrics;
  now: () => Date;
  /** Pause between attempts to take the capacity lease. */
  sleep: (ms: number) => Promise<void>;
}

/** Time assumed left when invoked without a Lambda context (local runs): the original system's 30 s timeout. */
export const DEFAULT_REMAINING_MS = 30_000;


/** The original system's four metrics plus deferrals (namespace suffix RetrainingPipeline, dimension Environment). */
export const METRICS = {
  received: "SQSMessagesReceived",
  processed: "SQSMessagesProcessed",
  failed: "SQSMessagesFailed",
  launched: "ECSTasksLaunched",
  deferred: "SQSMessagesDeferred",
} as const;

/** A valid message that must wait, and why; it is re-sent once the batch's records have run. */
interface PendingDeferral {
  record: SQSRecord;
  lineage: Lineage;
  modelName: string;
  reason: "at_capacity" | "lease_busy";
  running?: number;
  max?: number;
}

/**
 * Seed 001's sqs-consumer: validate each message (malformed ones are quarantined, never
 * retried), count running tasks once per batch, defer what exceeds MAX_CONCURRENT_TASKS, launch
 * the rest on Fargate or Fargate Spot, record each launch, and report batch item failures.
 *
 * The mapping runs several invocations at once, so "count, then launch" is serialised across
 * them by a lease in the state table: a batch holds it from before ListTasks until its launches
 * have returned, and a batch that cannot get it defers its valid messages.
 *
 * Deferring re-sends a delayed copy to the launcher's own queue and acknowledges the original
 * (defer.ts), so waiting for capacity never spends maxReceiveCount. A copy keeps the first
 * message's id (its origin): the job id, clientToken, state record and redelivery guard all use
 * it, so a message keeps one job id however often it waits.
 */
export function createLauncherHandler(deps: LauncherDeps): SqsBatchHandler {
  const { config, logger } = deps;
  return async (event, context) => {
    let launched = 0;
    let processed = 0;
    const table = config.stateTable;
    const holder = `${context?.awsRequestId ?? "local"}/${randomUUID()}`;
    let leaseHeld = false;
    // Lease, then one ListTasks (paginated) per batch, and only if some message needs a slot.
    const slots = once(async () => {
      const clock = () => deps.now().getTime();
      const window = leaseWindow(clock(), context?.getRemainingTimeInMillis() ?? DEFAULT_REMAINING_MS);
      const attempts = await acquireLease(deps.db, table, holder, { now: clock, sleep: deps.sleep, ...window });
      if (attempts === false) {
        logStep(logger, "warn", "capacity_lease_busy", { holder, waited_until: new Date(window.waitUntil).toISOString() });
        throw new LeaseBusyError();
      }
      leaseHeld = true;
      logStep(logger, "info", "capacity_lease_acquired", { holder, attempts, expires_at: new Date(window.expiresAt).toISOString() });
      const running = await countRunningTasks(deps.ecs, config.cluster);
      logStep(logger, "info", "running_tasks_counted", { running, max_concurrent_tasks: config.maxConcurrentTasks });
      return new LaunchSlots(running, config.maxConcurrentTasks);
    });

    // Every body is parsed once; the redelivery check reads the state of all their models at once.
    const parsedById = new Map(event.Records.map((r) => [r.messageId, parseRetrainingMessage(r.body)] as const));
    const launchedIds = once(async () => {
      const models = [...parsedById.values()].flatMap((p) => (p.ok ? [p.message.modelName] : []));
      return latestLaunchedMessageIds(deps.db, table, models);
    });

    const deferrals: PendingDeferral[] = [];

    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parsedById.get(record.messageId) ?? parseRetrainingMessage(record.body);
      if (!parsed.ok) {
        // Seed: "skip, no retry". DESIGN: skipped means quarantined with its reason, never lost.
        await quarantine(deps.sqs, config.quarantineQueueUrl, record, `${parsed.reason}: ${parsed.detail}`, deps);
        return;
      }
      const { modelName, trigger } = parsed.message;
      const lineage = lineageOf(record);
      // The origin's id, not this copy's: a deferred message launches as the message first received.
      const messageId = lineage.originMessageId;
      const jobId = jobIdFor(messageId);

      // Before the cap: an already-launched message must be acknowledged even when the cap is full.
      if ((await launchedIds()).get(modelName) === messageId) {
        logStep(logger, "info", "duplicate_message_skipped", { message_id: record.messageId, origin_message_id: messageId, model_name: modelName, job_id: jobId });
        processed += 1;
        return;
      }

      let batchSlots: LaunchSlots;
      try {
        batchSlots = await slots();
      } catch (error) {
        // Busy is "wait", not "broken": deferred like the cap. Other errors fail the record (retried).
        if (!(error instanceof LeaseBusyError)) throw error;
        deferrals.push({ record, lineage, modelName, reason: "lease_busy" });
        return;
      }
      if (!batchSlots.tryTake()) {
        deferrals.push({ record, lineage, modelName, reason: "at_capacity", running: batchSlots.inUse, max: batchSlots.max });
        return;
      }

      let taskArn: string;
      try {
        const task = await launchTask(deps.ecs, runTaskInput(config, { message: parsed.message, messageId, jobId }));
        taskArn = task.taskArn;
      } catch (error) {
        batchSlots.release();
        logStep(logger, "error", "ecs_task_launch_failed", { message_id: messageId, model_name: modelName, error: errorMessage(error) });
        throw error;
      }
      launched += 1;
      logStep(logger, "info", "ecs_task_launched", {
        message_id: messageId,
        model_name: modelName,
        job_id: jobId,
        task_arn: taskArn,
        trigger,
        capacity_provider: capacityProviderFor(config.useSpot),
      });

      try {
        await recordLaunch(deps.db, table, { modelName, taskArn, jobId, trigger, messageId, now: isoUtc(deps.now()) });
      } catch (error) {
        // Retried: the redelivery sends the same clientToken, so ECS returns this task instead of a new one.
        logStep(logger, "error", "state_record_failed", { message_id: messageId, model_name: modelName, task_arn: taskArn, error: errorMessage(error) });
        throw error;
      }
      logStep(logger, "info", "state_recorded", { model_name: modelName, task_arn: taskArn, job_id: jobId });
      processed += 1;
    };

    let response: SQSBatchResponse;
    try {
      response = await processSqsBatch(event, handleRecord, context);
    } finally {
      if (leaseHeld) await giveBackLease(deps, table, holder);
    }
    const unsent = await deferAll(deps, deferrals);
    response = { batchItemFailures: [...response.batchItemFailures, ...unsent.map((id) => ({ itemIdentifier: id }))] };
    const deferred = deferrals.length - unsent.length;
    const failed = response.batchItemFailures.length;
    logStep(logger, "info", "batch_processed", { received: event.Records.length, processed, failed, launched, deferred });
    deps.metrics.addDimension("Environment", config.environment);
    deps.metrics.addMetric(METRICS.received, MetricUnit.Count, event.Records.length);
    deps.metrics.addMetric(METRICS.processed, MetricUnit.Count, processed);
    deps.metrics.addMetric(METRICS.failed, MetricUnit.Count, failed);
    deps.metrics.addMetric(METRICS.launched, MetricUnit.Count, launched);
    deps.metrics.addMetric(METRICS.deferred, MetricUnit.Count, deferred);
    deps.metrics.publishStoredMetrics();
    return response;
  };
}

/**
 * Re-sends every deferral in SendMessageBatch calls and returns the message ids whose copy was
 * not accepted: those become batch item failures and come back by normal redelivery.
 */
async function deferAll(deps: LauncherDeps, deferrals: readonly PendingDeferral[]): Promise<string[]> {
  if (deferrals.length === 0) return [];
  const delay = deps.config.deferDelaySeconds;
  const outcome = await resendDeferred(deps.sqs, deps.config.retrainingQueueUrl, deferrals, delay);
  const unsent: string[] = [];
  for (const d of deferrals) {
    const fields = {
      message_id: d.record.messageId,
      origin_message_id: d.lineage.originMessageId,
      model_name: d.modelName,
      reason: d.reason,
      ...(d.reason === "at_capacity" ? { running: d.running, max_concurrent_tasks: d.max } : {}),
      deferrals: d.lineage.deferrals + 1,
      delay_seconds: delay,
    };
    const error = outcome.has(d.record.messageId) ? outcome.get(d.record.messageId) : "not sent";
    if (error === undefined) {
      logStep(deps.logger, "info", "capacity_deferred", fields);
    } else {
      logStep(deps.logger, "error", "capacity_defer_failed", { ...fields, error });
      unsent.push(d.record.messageId);
    }
  }
  return unsent;
}

/**
 * Never throws: the batch's outcome is already decided, and a lease that could not be deleted
 * lapses at its expiry. Losing it means it lapsed while held, so the cap may have been exceeded.
 */
async function giveBackLease(deps: LauncherDeps, table: string, holder: string): Promise<void> {
  try {
    const released = await releaseLease(deps.db, table, holder);
    if (released) logStep(deps.logger, "info", "capacity_lease_released", { holder });
    else logStep(deps.logger, "warn", "capacity_lease_lost", { holder });
  } catch (error) {
    logStep(deps.logger, "error", "capacity_lease_release_failed", { holder, error: errorMessage(error) });
  }
}
