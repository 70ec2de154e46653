import { randomUUID } from "node:crypto";
import type { ECSClient } from "@aws-sdk/client-ecs";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import type { MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { approximateReceiveCount, once, processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { LaunchSlots } from "./capacity";
import type { LauncherConfig } from "./config";
import { countRunningTasks, fallbackPlacement, firstPlacement, isCapacityFailure, LaunchFailedError, launchTask, type Placement, runTaskInput } from "./ecs";
import { deadLetterStamped, type Lineage, lineageOf, resendDeferred } from "./defer";
import { ClaimLostError, claimIntent, completeIntent, type LaunchedIntent, launchedIntents, markFallback, releaseIntent } from "./intent";
import { jobIdFor } from "./job-id";
import { acquireLease, LeaseBusyError, type LeaseHolder, leaseWindow, releaseLease } from "./lease";
import { type MessageParseResult, parseRetrainingMessage, type RetrainingMessage } from "./message";
import { recordLaunch } from "./state";

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
  /** Spot launches refused for capacity and retried on FARGATE (SPOT_FALLBACK on-demand). */
  spotFallbacks: "SpotFallbacks",
} as const;

/** A valid message that must wait, and why; it is re-sent once the batch's records have run. */
interface PendingDeferral {
  record: SQSRecord;
  lineage: Lineage;
  modelName: string;
  /** `in_progress`: another live attempt has claimed the same origin; asked again after the delay. */
  reason: "at_capacity" | "lease_busy" | "in_progress";
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
 * message's id (its origin): the job id, clientToken, state record and intent all use it, so a
 * message keeps one job id however often it waits.
 *
 * RunTask happens once per origin: the launcher claims the origin's intent (intent.ts) with a
 * conditional write just before RunTask and completes it with the task's ARN, so a duplicate
 * delivery (concurrent, interleaved with other messages of the model, or a DLQ redrive days
 * later) finds the claim or the launch and does not call RunTask again.
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
  spotFallbacks = 0;
  readonly deferrals: PendingDeferral[] = [];
  private leaseHeld = false;
  private readonly table: string;
  private readonly holder: LeaseHolder;
  private readonly parsedById: Map<string, MessageParseResult>;
  /** Lease, then one ListTasks (paginated) per batch, and only if some message needs a slot. */
  private readonly slots: () => Promise<LaunchSlots>;
  /** Every body is parsed once; the duplicate check reads the intents of all their origins at once. */
  private readonly launchedByOrigin: () => Promise<Map<string, LaunchedIntent>>;

  constructor(
    private readonly deps: LauncherDeps,
    records: readonly SQSRecord[],
    private readonly context: Context | undefined,
  ) {
    this.table = deps.config.stateTable;
    this.parsedById = new Map(records.map((r) => [r.messageId, parseRetrainingMessage(r.body)] as const));
    const origins = records.filter((r) => this.parsedById.get(r.messageId)?.ok).map((r) => lineageOf(r).originMessageId);
    // A token of this batch's own, not the request id: a redelivered batch must never pass for this
    // holder. The origins only tell an operator reading the item whose launches it serialises.
    this.holder = { token: randomUUID(), origins: [...new Set(origins)] };
    this.slots = once(() => this.takeLeaseAndCount());
    this.launchedByOrigin = once(() => launchedIntents(deps.db, deps.config.intentTable, origins));
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
    const window = leaseWindow(clock(), this.remainingMs());
    const attempts = await acquireLease(deps.db, this.table, holder, { now: clock, sleep: deps.sleep, ...window });
    if (attempts === false) {
      logStep(logger, "warn", "capacity_lease_busy", { holder: holder.token, waited_until: new Date(window.waitUntil).toISOString() });
      throw new LeaseBusyError();
    }
    this.leaseHeld = true;
    logStep(logger, "info", "capacity_lease_acquired", { holder: holder.token, attempts, expires_at: new Date(window.expiresAt).toISOString() });
    const running = await countRunningTasks(deps.ecs, config.cluster);
    logStep(logger, "info", "running_tasks_counted", { running, max_concurrent_tasks: config.maxConcurrentTasks });
    return new LaunchSlots(running, config.maxConcurrentTasks);
  }

  private remainingMs(): number {
    return this.context?.getRemainingTimeInMillis() ?? DEFAULT_REMAINING_MS;
  }

  /**
   * One record. A valid message that keeps failing is, on its last receive, dead-lettered by the
   * launcher itself with its origin stamped on: SQS would move it unstamped, and a DLQ redrive gives
   * a message a new id, so only the stamp lets the redriven message find its intent.
   */
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
    // A relaunch keeps the interrupted task's job id: the same job, run again.
    const jobId = parsed.message.relaunchOf?.jobId ?? jobIdFor(messageId);
    const job: LaunchJob = { record, lineage, message: parsed.message, messageId, jobId };
    try {
      await this.handleJob(job);
    } catch (error) {
      if (!(await this.deadLetterOnLastReceive(job, error))) throw error;
    }
  }

  /** Duplicate check (before the cap: a launched origin is acknowledged even when the cap is full), slot, claim, RunTask, completion, record. */
  private async handleJob(job: LaunchJob): Promise<void> {
    const known = (await this.launchedByOrigin()).get(job.messageId);
    if (known) return this.duplicate(job, known);
    const slots = await this.takeSlot(job);
    if (!slots) return;
    const attempt = randomUUID();
    const claimed = await this.claim(job, slots, attempt);
    if (!claimed) return;
    const taskArn = await this.launch(job, slots, attempt, claimed.fallback);
    const launchedAtMs = await this.complete(job, attempt, taskArn);
    await this.record(job, taskArn, launchedAtMs, true);
    this.processed += 1;
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

  /**
   * Claims the origin's intent once a slot is taken, so a claim is followed by RunTask at once and
   * "claimed long ago" means "RunTask may have run"; with whether an earlier attempt turned to FARGATE.
   * Undefined when this delivery must not launch: the
   * slot is given back and the message acknowledged (launched), deferred (another live attempt
   * holds it) or quarantined (a dead attempt's claim beyond the clientToken window).
   */
  private async claim(job: LaunchJob, slots: LaunchSlots, attempt: string): Promise<{ fallback: boolean } | undefined> {
    const { deps } = this;
    const nowMs = deps.now().getTime();
    let claim;
    try {
      claim = await claimIntent(deps.db, deps.config.intentTable, {
        originMessageId: job.messageId,
        attempt,
        modelName: job.message.modelName,
        jobId: job.jobId,
        trigger: job.message.trigger,
        nowMs,
        inProgressUntil: nowMs + this.remainingMs(),
        retentionSeconds: deps.config.intentRetentionSeconds,
      });
    } catch (error) {
      slots.release();
      throw error;
    }
    const fields = { message_id: job.record.messageId, origin_message_id: job.messageId, model_name: job.message.modelName, job_id: job.jobId };
    if (claim.kind === "claimed") {
      if (claim.takeover) logStep(deps.logger, "warn", "launch_intent_taken_over", { ...fields, fallback: claim.fallback });
      return { fallback: claim.fallback };
    }
    slots.release();
    if (claim.kind === "launched") {
      await this.duplicate(job, claim.intent);
    } else if (claim.kind === "in_progress") {
      logStep(deps.logger, "info", "launch_in_progress_elsewhere", { ...fields, until: new Date(claim.until).toISOString() });
      this.deferrals.push({ record: job.record, lineage: job.lineage, modelName: job.message.modelName, reason: "in_progress" });
    } else {
      const since = new Date(claim.firstClaimedAt).toISOString();
      logStep(deps.logger, "error", "launch_outcome_unknown", { ...fields, first_claimed_at: since });
      // A task may exist that ECS no longer ties to the clientToken: an operator decides, with the reason in the DLQ.
      await quarantine(
        deps.sqs,
        deps.config.quarantineQueueUrl,
        job.record,
        `launch_outcome_unknown: claimed at ${since}, beyond the RunTask clientToken window`,
        deps,
      );
    }
    return undefined;
  }

  /** Acknowledges a delivery of an origin already launched, repairing the state record if an earlier write of it failed. */
  private async duplicate(job: LaunchJob, intent: LaunchedIntent): Promise<void> {
    const { deps } = this;
    logStep(deps.logger, "info", "duplicate_message_skipped", {
      message_id: job.record.messageId,
      origin_message_id: job.messageId,
      model_name: job.message.modelName,
      job_id: job.jobId,
      task_arn: intent.taskArn,
    });
    this.processed += 1;
    // The launch is settled, so a failed repair (logged) does not fail the duplicate.
    await this.record(job, intent.taskArn, intent.launchedAt, false).catch(() => undefined);
  }

  /**
   * RunTask for a claimed origin. On Fargate Spot, a refusal for capacity is retried at once on
   * FARGATE when SPOT_FALLBACK is on-demand (ECS has no such fallback for standalone tasks): the
   * claim records the turn first, so an attempt that takes the claim over repeats the retry, under
   * its own clientToken, and never a second Spot RunTask. `fallback`: an earlier attempt turned already.
   */
  private async launch(job: LaunchJob, slots: LaunchSlots, attempt: string, fallback: boolean): Promise<string> {
    const { deps } = this;
    const { messageId, jobId, message } = job;
    const { modelName, trigger } = message;
    let placement: Placement = fallback ? fallbackPlacement(messageId) : firstPlacement(deps.config, messageId, message.relaunchOf !== undefined);
    let taskArn: string;
    try {
      try {
        taskArn = (await launchTask(deps.ecs, runTaskInput(deps.config, job, placement))).taskArn;
      } catch (error) {
        if (!(placement.capacityProvider === "FARGATE_SPOT" && deps.config.spotFallback === "on-demand" && isCapacityFailure(error))) throw error;
        logStep(deps.logger, "warn", "spot_capacity_fallback", { message_id: messageId, model_name: modelName, job_id: jobId, error: errorMessage(error) });
        this.spotFallbacks += 1;
        // Nothing started on Spot: if the claim is lost meanwhile, giving it up definitely is right.
        await markFallback(deps.db, deps.config.intentTable, { originMessageId: messageId, attempt });
        placement = fallbackPlacement(messageId);
        taskArn = (await launchTask(deps.ecs, runTaskInput(deps.config, job, placement))).taskArn;
      }
    } catch (error) {
      slots.release();
      logStep(deps.logger, "error", "ecs_task_launch_failed", {
        message_id: messageId,
        model_name: modelName,
        capacity_provider: placement.capacityProvider,
        error: errorMessage(error),
      });
      // ECS answered "no task" (failures), or the claim was lost before a retry: nothing started. Any other error: RunTask may have applied.
      await this.giveUpIntent(job, attempt, error instanceof LaunchFailedError || error instanceof ClaimLostError);
      throw error;
    }
    this.launched += 1;
    logStep(deps.logger, "info", "ecs_task_launched", {
      message_id: messageId,
      model_name: modelName,
      job_id: jobId,
      task_arn: taskArn,
      trigger,
      capacity_provider: placement.capacityProvider,
    });
    return taskArn;
  }

  /** Never throws: the launch's own error is what the record fails with; an unreleased claim lapses at the invocation's deadline. */
  private async giveUpIntent(job: LaunchJob, attempt: string, definite: boolean): Promise<void> {
    try {
      await releaseIntent(this.deps.db, this.deps.config.intentTable, { originMessageId: job.messageId, attempt, definite });
    } catch (error) {
      logStep(this.deps.logger, "error", "launch_intent_release_failed", { origin_message_id: job.messageId, error: errorMessage(error) });
    }
  }

  /**
   * Marks the intent launched and returns the launch's epoch ms. If this write fails the record
   * fails: the claim lapses at the invocation's deadline, and the redelivery takes it over and
   * sends the same clientToken, which ECS answers with this same task.
   */
  private async complete(job: LaunchJob, attempt: string, taskArn: string): Promise<number> {
    const { deps } = this;
    const nowMs = deps.now().getTime();
    const fields = { origin_message_id: job.messageId, model_name: job.message.modelName, task_arn: taskArn };
    let result;
    try {
      result = await completeIntent(deps.db, deps.config.intentTable, {
        originMessageId: job.messageId,
        attempt,
        taskArn,
        nowMs,
        retentionSeconds: deps.config.intentRetentionSeconds,
      });
    } catch (error) {
      logStep(deps.logger, "error", "launch_intent_complete_failed", { ...fields, error: errorMessage(error) });
      throw error;
    }
    if (result.kind === "superseded") logStep(deps.logger, "warn", "launch_intent_superseded", { ...fields, by_attempt: result.by, status: result.status });
    return nowMs;
  }

  /** The seed's state record. `first`: this delivery launched; otherwise a duplicate repairs it (a failure is logged only). */
  private async record(job: LaunchJob, taskArn: string, launchedAtMs: number, first: boolean): Promise<void> {
    const { deps } = this;
    const { messageId, jobId } = job;
    const { modelName, trigger } = job.message;
    let result;
    try {
      const relaunchedFrom = job.message.relaunchOf?.taskArn;
      result = await recordLaunch(deps.db, this.table, {
        modelName,
        taskArn,
        jobId,
        trigger,
        messageId,
        launchedAtMs,
        nowMs: deps.now().getTime(),
        ...(relaunchedFrom ? { relaunchedFrom } : {}),
      });
    } catch (error) {
      // Retried: the redelivery finds the launched intent and writes the record again, launching nothing.
      const step = first ? "state_record_failed" : "state_repair_failed";
      logStep(deps.logger, first ? "error" : "warn", step, { message_id: messageId, model_name: modelName, task_arn: taskArn, error: errorMessage(error) });
      throw error;
    }
    if (result.kind === "superseded")
      logStep(deps.logger, "info", "state_superseded", { model_name: modelName, task_arn: taskArn, job_id: jobId, newer_message_id: result.by });
    else if (first) logStep(deps.logger, "info", "state_recorded", { model_name: modelName, task_arn: taskArn, job_id: jobId });
  }

  /**
   * On the queue's last receive (MAX_RECEIVE_COUNT) a valid message that failed is sent to the DLQ
   * by the launcher, with its lineage and the reason, and acknowledged: true when that happened.
   * False (the record fails and SQS moves it, unstamped) when the count is unknown or not reached,
   * or the copy was refused.
   */
  private async deadLetterOnLastReceive(job: LaunchJob, error: unknown): Promise<boolean> {
    const { deps } = this;
    const max = deps.config.maxReceiveCount;
    if (max === undefined || approximateReceiveCount(job.record) < max) return false;
    const reason = `retries_exhausted: ${errorMessage(error)}`;
    const fields = { message_id: job.record.messageId, origin_message_id: job.messageId, model_name: job.message.modelName };
    try {
      await deadLetterStamped(deps.sqs, deps.config.quarantineQueueUrl, job.record, job.lineage, reason);
    } catch (sendError) {
      logStep(deps.logger, "error", "dead_letter_failed", { ...fields, error: errorMessage(sendError) });
      return false;
    }
    logStep(deps.logger, "warn", "message_dead_lettered", { ...fields, reason });
    return true;
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
  deps.metrics.addMetric(METRICS.spotFallbacks, MetricUnit.Count, batch.spotFallbacks);
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
async function giveBackLease(deps: LauncherDeps, table: string, holder: LeaseHolder): Promise<void> {
  try {
    const released = await releaseLease(deps.db, table, holder);
    if (released) logStep(deps.logger, "info", "capacity_lease_released", { holder: holder.token });
    else logStep(deps.logger, "warn", "capacity_lease_lost", { holder: holder.token });
  } catch (error) {
    logStep(deps.logger, "error", "capacity_lease_release_failed", { holder: holder.token, error: errorMessage(error) });
  }
}
