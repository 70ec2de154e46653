import { randomUUID } from "node:crypto";
import type { ECSClient } from "@aws-sdk/client-ecs";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
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
import { type MessageParseResult, parseRetrainingMessage, type RetrainingMessage } from "./message";
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

/** A valid message on its way to a launch, under its origin's id and job id. */
interface LaunchJob {
  record: SQSRecord;
  lineage: Lineage;
  message: RetrainingMessage;
  messageId: string;
  jobId: string;
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
  return async (event, context) => {
    const batch = new LauncherBatch(deps, event.Records, context);
    const response = await batch.processRecords(event, context);
    const unsent = await deferAll(deps, batch.deferrals);
    const withUnsent = { batchItemFailures: [...response.batchItemFailures, ...unsent.map((id) => ({ itemIdentifier: id }))] };
    reportBatch(deps, batch, { received: event.Records.length, failed: withUnsent.batchItemFailures.length, deferred: batch.deferrals.length - unsent.length });
    return withUnsent;
  };
}

/** One invocation's state: its lease holder, counters, the once-per-batch lookups and the deferrals it collects. */
class LauncherBatch {
  launched = 0;
  processed = 0;
  readonly deferrals: PendingDeferral[] = [];
  private leaseHeld = false;
  private readonly table: string;
  private readonly holder: string;
  private readonly parsedById: Map<string, MessageParseResult>;
  /** Lease, then one ListTasks (paginated) per batch, and only if some message needs a slot. */
  private readonly slots: () => Promise<LaunchSlots>;
  /** Every body is parsed once; the redelivery check reads the state of all their models at once. */
  private readonly launchedIds: () => Promise<Map<string, string>>;

  constructor(
    private readonly deps: LauncherDeps,
    records: readonly SQSRecord[],
    private readonly context: Context | undefined,
  ) {
    this.table = deps.config.stateTable;
    this.holder = `${context?.awsRequestId ?? "local"}/${randomUUID()}`;
    this.slots = once(() => this.takeLeaseAndCount());
    this.parsedById = new Map(records.map((r) => [r.messageId, parseRetrainingMessage(r.body)] as const));
    this.launchedIds = once(async () => {
      const models = [...this.parsedById.values()].flatMap((p) => (p.ok ? [p.message.modelName] : []));
      return latestLaunchedMessageIds(deps.db, this.table, models);
    });
  }

  /** Runs every record, then gives the lease back whatever happened. */
  async processRecords(event: SQSEvent, context: Context | undefined): Promise<SQSBatchResponse> {
    try {
      return await processSqsBatch(event, (record) => this.handleRecord(record), context);
    } finally {
      if (this.leaseHeld) await giveBackLease(this.deps, this.table, this.holder);
    }
  }

  private async takeLeaseAndCount(): Promise<LaunchSlots> {
    const { deps, holder } = this;
    const { config, logger } = deps;
    const clock = () => deps.now().getTime();
    const window = leaseWindow(clock(), this.context?.getRemainingTimeInMillis() ?? DEFAULT_REMAINING_MS);
    const attempts = await acquireLease(deps.db, this.table, holder, { now: clock, sleep: deps.sleep, ...window });
    if (attempts === false) {
      logStep(logger, "warn", "capacity_lease_busy", { holder, waited_until: new Date(window.waitUntil).toISOString() });
      throw new LeaseBusyError();
    }
    this.leaseHeld = true;
    logStep(logger, "info", "capacity_lease_acquired", { holder, attempts, expires_at: new Date(window.expiresAt).toISOString() });
    const running = await countRunningTasks(deps.ecs, config.cluster);
    logStep(logger, "info", "running_tasks_counted", { running, max_concurrent_tasks: config.maxConcurrentTasks });
    return new LaunchSlots(running, config.maxConcurrentTasks);
  }

  private async handleRecord(record: SQSRecord): Promise<void> {
    const parsed = this.parsedById.get(record.messageId) ?? parseRetrainingMessage(record.body);
    if (!parsed.ok) {
      // Seed: "skip, no retry". DESIGN: skipped means quarantined with its reason, never lost.
      await quarantine(this.deps.sqs, this.deps.config.quarantineQueueUrl, record, `${parsed.reason}: ${parsed.detail}`, this.deps);
      return;
    }
    const lineage = lineageOf(record);
    // The origin's id, not this copy's: a deferred message launches as the message first received.
    const messageId = lineage.originMessageId;
    const job: LaunchJob = { record, lineage, message: parsed.message, messageId, jobId: jobIdFor(messageId) };
    if (await this.alreadyLaunched(job)) return;
    const slots = await this.takeSlot(job);
    if (!slots) return;
    const taskArn = await this.launch(job, slots);
    await this.record(job, taskArn);
  }

  /** Before the cap: an already-launched message must be acknowledged even when the cap is full. */
  private async alreadyLaunched(job: LaunchJob): Promise<boolean> {
    const { modelName } = job.message;
    if ((await this.launchedIds()).get(modelName) !== job.messageId) return false;
    logStep(this.deps.logger, "info", "duplicate_message_skipped", { message_id: job.record.messageId, origin_message_id: job.messageId, model_name: modelName, job_id: job.jobId });
    this.processed += 1;
    return true;
  }

  /** The batch's slots with one taken, or undefined when the job was deferred instead. */
  private async takeSlot(job: LaunchJob): Promise<LaunchSlots | undefined> {
    const { record, lineage } = job;
    const { modelName } = job.message;
    let batchSlots: LaunchSlots;
    try {
      batchSlots = await this.slots();
    } catch (error) {
      // Busy is "wait", not "broken": deferred like the cap. Other errors fail the record (retried).
      if (!(error instanceof LeaseBusyError)) throw error;
      this.deferrals.push({ record, lineage, modelName, reason: "lease_busy" });
      return undefined;
    }
    if (!batchSlots.tryTake()) {
      this.deferrals.push({ record, lineage, modelName, reason: "at_capacity", running: batchSlots.inUse, max: batchSlots.max });
      return undefined;
    }
    return batchSlots;
  }

  private async launch(job: LaunchJob, slots: LaunchSlots): Promise<string> {
    const { deps } = this;
    const { messageId, jobId, message } = job;
    const { modelName, trigger } = message;
    let taskArn: string;
    try {
      const task = await launchTask(deps.ecs, runTaskInput(deps.config, { message, messageId, jobId }));
      taskArn = task.taskArn;
    } catch (error) {
      slots.release();
      logStep(deps.logger, "error", "ecs_task_launch_failed", { message_id: messageId, model_name: modelName, error: errorMessage(error) });
      throw error;
    }
    this.launched += 1;
    logStep(deps.logger, "info", "ecs_task_launched", {
      message_id: messageId,
      model_name: modelName,
      job_id: jobId,
      task_arn: taskArn,
      trigger,
      capacity_provider: capacityProviderFor(deps.config.useSpot),
    });
    return taskArn;
  }

  private async record(job: LaunchJob, taskArn: string): Promise<void> {
    const { deps } = this;
    const { messageId, jobId } = job;
    const { modelName, trigger } = job.message;
    try {
      await recordLaunch(deps.db, this.table, { modelName, taskArn, jobId, trigger, messageId, now: isoUtc(deps.now()) });
    } catch (error) {
      // Retried: the redelivery sends the same clientToken, so ECS returns this task instead of a new one.
      logStep(deps.logger, "error", "state_record_failed", { message_id: messageId, model_name: modelName, task_arn: taskArn, error: errorMessage(error) });
      throw error;
    }
    logStep(deps.logger, "info", "state_recorded", { model_name: modelName, task_arn: taskArn, job_id: jobId });
    this.processed += 1;
  }
}

/** The batch_processed log line and the batch's metrics. */
function reportBatch(deps: LauncherDeps, batch: LauncherBatch, counts: { received: number; failed: number; deferred: number }): void {
  const { received, failed, deferred } = counts;
  const { processed, launched } = batch;
  logStep(deps.logger, "info", "batch_processed", { received, processed, failed, launched, deferred });
  deps.metrics.addDimension("Environment", deps.config.environment);
  deps.metrics.addMetric(METRICS.received, MetricUnit.Count, received);
  deps.metrics.addMetric(METRICS.processed, MetricUnit.Count, processed);
  deps.metrics.addMetric(METRICS.failed, MetricUnit.Count, failed);
  deps.metrics.addMetric(METRICS.launched, MetricUnit.Count, launched);
  deps.metrics.addMetric(METRICS.deferred, MetricUnit.Count, deferred);
  deps.metrics.publishStoredMetrics();
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
