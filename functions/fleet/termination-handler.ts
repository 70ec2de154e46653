import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";
import type { Context, SQSRecord } from "aws-lambda";
import { errorMessage, logStep } from "../shared/logger";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import {
  claimable,
  claimCompletionReport,
  type CompletionOutcome,
  type CompletionWriter,
  markJobComplete,
  markReported,
  REPORT_TAKEOVER_SECONDS,
} from "./complete-job";
import { DEFAULT_RESEND, type ResendPolicy } from "../shared/resend";
import { budgetFrom } from "./budget";
import type { TerminationConfig } from "./config";
import { runnerConfigParameter } from "./jobs";
import { parseBody, TerminationMessageSchema, type TerminationMessage } from "./messages";
import { emitNow, emitWithDimension, type FleetTelemetry, MetricUnit } from "./telemetry";

export interface TerminationHandlerDeps extends FleetTelemetry {
  dynamodb: DynamoDBClient;
  ssm: SSMClient;
  sqs: SQSClient;
  config: TerminationConfig;
  /** A fresh completion-attempt token per record processed; default a random UUID. */
  newAttemptToken?: () => string;
  /** How often the completing write is re-sent after the SDK gave up; tests pass an instant sleep. */
  completionRetry?: ResendPolicy;
  /** The clock (epoch ms) of the report claims; default Date.now. */
  now?: () => number;
}

/**
 * The `Error` dimension of `JobFailure`. Free-text errors would make every distinct message a
 * billed custom metric, so the dimension is a bounded class: `timeout`, `interrupted`, or
 * `exit_<code>` for a failure; the text itself is logged.
 */
export function errorClass(message: TerminationMessage): string {
  return message.status === "failure" ? `exit_${message.exit_code}` : message.status;
}

/**
 * JobDuration (Status), then JobSuccess or JobFailure (Error), each written at once as its own EMF
 * line (none is stored for the end of the batch, where a later crash would lose it after the
 * report was claimed). Called once per job: by the delivery whose report claim applied.
 */
function publishJobMetrics(deps: FleetTelemetry, message: TerminationMessage): void {
  emitWithDimension(deps.metrics, "JobDuration", MetricUnit.Seconds, message.duration_seconds, { name: "Status", value: message.status });
  if (message.status === "success") emitNow(deps.metrics, "JobSuccess", MetricUnit.Count, 1);
  else emitWithDimension(deps.metrics, "JobFailure", MetricUnit.Count, 1, { name: "Error", value: errorClass(message) });
}

/**
 * The `done` mark is re-sent for far longer than the other writes. A claimant that emitted the report
 * and could not mark it leaves an unfinished claim of its own message, and that message's
 * redelivery cannot tell it from a claim whose every answer was lost before anything was emitted:
 * it takes the claim over and reports again. So the mark keeps trying, with short pauses, for up to
 * MARK_RESEND_ROUNDS sends, and never into the reserve kept for the rest of the batch: the last
 * quarter of the time the invocation had when it started.
 */
export const MARK_RESEND_ROUNDS = 16;
export const MARK_MAX_DELAY_MS = 400;
export const MARK_BASE_DELAY_MS = 50;

function markPolicy(retry: ResendPolicy, context: Context | undefined, reserveMs: number): ResendPolicy {
  const reserve = budgetFrom(context, reserveMs);
  return { ...retry, rounds: MARK_RESEND_ROUNDS, baseDelayMs: MARK_BASE_DELAY_MS, maxDelayMs: MARK_MAX_DELAY_MS, continueWhile: () => !reserve.exhausted() };
}

/** The longest single pause while waiting out a live claimant; the clock is read again after each. */
export const CLAIMANT_WAIT_STEP_MS = 1_000;

/** This invocation: when it ends, and the reserve of time it keeps for the rest of its batch. */
export interface Invocation {
  context: Context | undefined;
  /** The last quarter of the time the invocation started with (0 without a context). */
  reserveMs: number;
}

/**
 * Epoch seconds (the function's clock) by which this invocation has certainly ended: now plus its
 * remaining time. Without a Lambda context only Lambda's longest timeout bounds it.
 */
function deadlineSeconds(invocation: Invocation, nowMs: number): number {
  const remainingMs = invocation.context ? invocation.context.getRemainingTimeInMillis() : REPORT_TAKEOVER_SECONDS * 1000;
  return Math.ceil((nowMs + remainingMs) / 1000);
}

/**
 * Waits until `notBeforeMs` (the function's clock), in pauses of at most CLAIMANT_WAIT_STEP_MS,
 * while the invocation would still keep its reserve after the wait; false (at once) when it would
 * not. The clock is read after every pause, and the wait also ends once the pauses add up to the
 * whole wait, so a clock that does not move (a test's) cannot hold it forever.
 */
export async function waitUntil(notBeforeMs: number, now: () => number, sleep: (ms: number) => Promise<void>, invocation: Invocation): Promise<boolean> {
  const total = notBeforeMs - now();
  for (let slept = 0; ; ) {
    const left = notBeforeMs - now();
    if (left <= 0 || slept >= total) return true;
    if (invocation.context && invocation.context.getRemainingTimeInMillis() - left < invocation.reserveMs) return false;
    const pause = Math.min(left, CLAIMANT_WAIT_STEP_MS);
    await sleep(pause);
    slept += pause;
  }
}

/** `ParameterNotFound` is a success: the agent or an earlier delivery already removed it. */
async function deleteRunnerConfig(deps: TerminationHandlerDeps, instanceId: string, messageId: string): Promise<void> {
  const name = runnerConfigParameter(deps.config.runnerParameterPath, instanceId);
  try {
    await deps.ssm.send(new DeleteParameterCommand({ Name: name }));
    logStep(deps.logger, "info", "ssm_parameter_deleted", { message_id: messageId, instance_id: instanceId, parameter: name });
  } catch (error) {
    if (!(error instanceof Error && error.name === "ParameterNotFound")) throw error;
    logStep(deps.logger, "info", "ssm_parameter_not_found", { message_id: messageId, instance_id: instanceId, parameter: name });
  }
}

/**
 * One termination message: complete the job (conditional), claim its report and, if this delivery's
 * claim applied, log the completion and emit the job metrics, then delete the runner's config
 * parameter. Metrics come before the SSM delete (the original system has them after): if the delete
 * fails, the redelivery finds the report already claimed, so metrics after the delete would never
 * be emitted at all.
 *
 * Exactly one delivery reports each job, whichever answer was lost. The completing write records
 * the message id and this attempt's token and leaves the report `pending`; a failed condition
 * returns the old item (ALL_OLD), so a completion whose answer was lost still resolves as this
 * attempt's. Then the report is claimed (`pending` → this attempt's token, conditional): by the
 * completer, or by a later delivery that finds the job complete and its report still pending,
 * because the completer's every answer was lost and it failed before claiming.
 */
export function createTerminationHandler(deps: TerminationHandlerDeps): SqsBatchHandler {
  const newAttemptToken = deps.newAttemptToken ?? randomUUID;
  const retry = deps.completionRetry ?? DEFAULT_RESEND;
  return async (event, context) => {
    const invocation: Invocation = { context, reserveMs: context ? context.getRemainingTimeInMillis() / 4 : 0 };
    const markRetry = markPolicy(retry, context, invocation.reserveMs);
    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseBody(TerminationMessageSchema, record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      const message = parsed.value;
      const ids = { message_id: record.messageId, job_id: message.job_id, instance_id: message.instance_id };
      const attempt = newAttemptToken();
      const outcome = await markJobComplete(
        deps.dynamodb,
        deps.config.jobsTable,
        message,
        deps.config.retentionDays,
        { messageId: record.messageId, attempt },
        retry,
      );
      const report = await reportCompletion(deps, message, outcome, { messageId: record.messageId, attempt }, ids, retry, markRetry, invocation);
      try {
        await deleteRunnerConfig(deps, message.instance_id, record.messageId);
      } catch (error) {
        // Failing the record now would bring the message back to take its own unfinished claim over
        // and report a second time. The parameter's instance is gone: the stale_ssm sweep deletes it.
        if (report !== "reported-unmarked") throw error;
        logStep(deps.logger, "warn", "ssm_parameter_left_to_sweep", { ...ids, error: errorMessage(error) });
      }
      logStep(deps.logger, "info", "termination_processed", { ...ids, duplicate: report === "not-reported" });
    };

    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

/** Whether this delivery reported the job, and whether its `done` mark stands. */
type ReportResult = "reported" | "reported-unmarked" | "not-reported";

/**
 * Logs the completion and emits the job metrics if this delivery claims the report.
 * A claim that cannot be written (after the re-sends) fails the record before anything is emitted:
 * the redelivery of the message takes the report over. A `done` mark that cannot be written (after
 * re-sending it for most of the invocation, {@link markPolicy}) is only logged, and the record must
 * not fail after it (`reported-unmarked`): a redelivery would take the claim over and report again.
 *
 * An unfinished claim of this message's earlier delivery whose invocation may still be running (its
 * recorded deadline not yet passed: the message came back while that delivery was between its claim
 * and its `done` mark) is taken over only once that invocation has certainly ended: this delivery
 * waits for it, if it can within its own time, and then the takeover's condition (the claim
 * unchanged and not done) finds a claimant that finished as "reported elsewhere". If it cannot wait
 * that long, the record fails before anything is emitted, and the message comes back later.
 */
async function reportCompletion(
  deps: TerminationHandlerDeps,
  message: TerminationMessage,
  outcome: CompletionOutcome,
  writer: CompletionWriter,
  ids: Record<string, string>,
  retry: ResendPolicy,
  markRetry: ResendPolicy,
  invocation: Invocation,
): Promise<ReportResult> {
  const now = deps.now ?? Date.now;
  let nowSeconds = Math.floor(now() / 1000);
  // A completing delivery claims the pending report; a delivery that found the job completed only a claimable one.
  let previous: string | undefined;
  if (outcome.kind === "duplicate") {
    const may = claimable(outcome.report, writer, nowSeconds);
    if (may !== null && may.notBefore !== undefined) {
      const wait = { claimant: may.previous ?? null, claimant_deadline: outcome.report.deadline ?? null, not_before: may.notBefore };
      if (!(await waitUntil(may.notBefore * 1000, now, retry.sleep, invocation))) {
        logStep(deps.logger, "warn", "report_claim_live_deferred", { ...ids, ...wait });
        throw new Error(
          `job ${message.job_id}: the report is claimed by a delivery of this message that may still be running (${may.previous}); not before ${may.notBefore}`,
        );
      }
      logStep(deps.logger, "info", "report_claim_live_waited", { ...ids, ...wait });
      nowSeconds = Math.floor(now() / 1000);
    }
    if (may === null) {
      logStep(deps.logger, "info", "job_already_complete", {
        ...ids,
        status: message.status,
        found_status: outcome.foundStatus ?? null,
        completed_by: outcome.completedBy ?? null,
        // The same message completed it on an earlier delivery, which reported it then.
        redelivery: outcome.completedBy === ids.message_id,
      });
      return "not-reported";
    }
    previous = may.previous;
  }
  const claim = await claimCompletionReport(
    deps.dynamodb,
    deps.config.jobsTable,
    message.job_id,
    writer,
    previous,
    nowSeconds,
    deadlineSeconds(invocation, now()),
    retry,
  );
  if (claim.kind === "mine") {
    logStep(deps.logger, "info", "job_marked_complete", {
      ...ids,
      status: message.status,
      exit_code: message.exit_code,
      duration_seconds: message.duration_seconds,
      recovered: outcome.kind === "completed" && outcome.recovered,
      // A delivery that found the job completed (by an earlier delivery of its message, or another
      // message) and its report pending or unfinished: that delivery failed before it could report.
      ...(outcome.kind === "duplicate" ? { completed_by: outcome.completedBy ?? null, reported_for_earlier_delivery: true, took_over: previous ?? null } : {}),
      ...(claim.recovered ? { report_claim_recovered: true } : {}),
      ...(message.error !== undefined ? { error: message.error } : {}),
    });
    publishJobMetrics(deps, message);
    try {
      await markReported(deps.dynamodb, deps.config.jobsTable, message.job_id, writer, markRetry);
    } catch (error) {
      logStep(deps.logger, "warn", "job_report_mark_failed", { ...ids, error: errorMessage(error) });
      return "reported-unmarked";
    }
    return "reported";
  }
  // Another delivery (a concurrent copy of the message, or another message for the job) claimed the report first, and makes it.
  logStep(deps.logger, "info", "job_completion_reported_elsewhere", {
    ...ids,
    completed_here: outcome.kind === "completed",
    reported_by: claim.state.by ?? null,
  });
  return "not-reported";
}
