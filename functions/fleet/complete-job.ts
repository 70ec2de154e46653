import { type AttributeValue, type DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { JOBS_TABLE } from "../shared/tables";
import { type ConditionFailure, conditionFailureItem, isConditionFailure } from "../shared/conditional-write";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";
import { JOB_STATUS_FOR } from "./jobs";
import { rfc3339, type TerminationMessage } from "./messages";

/** Who is completing the job, recorded in the item by the completing write. */
export interface CompletionWriter {
  /** The termination message's id: the same on every redelivery of the message. */
  messageId: string;
  /**
   * A fresh token per completion attempt. The SDK's retries of the write resend it; a redelivery,
   * or a second copy of the message processed at the same time, brings another.
   */
  attempt: string;
}

/**
 * `completed`: this attempt's write completed the job; `recovered` when the write applied but its
 * response was lost and the SDK's retry failed the condition on the item it had just written.
 * `duplicate`: the job was already complete (or not running), by another message or by an earlier
 * delivery of this one (`completedBy` says which); `report` says who reports it
 * ({@link claimCompletionReport}).
 */
export type CompletionOutcome =
  | { kind: "completed"; recovered: boolean }
  | { kind: "duplicate"; completedBy: string | undefined; foundStatus: string | undefined; report: ReportState };

/** `completion_reported_by` of a completed job whose completion nobody has logged and emitted yet. */
export const REPORT_PENDING = "pending";

const DAY_SECONDS = 86_400;

/** Epoch seconds at which DynamoDB may expire the record: completion + retention. */
export function expiresAt(completedAt: string, retentionDays: number): number {
  return Math.floor(Date.parse(completedAt) / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * Marks the job complete, once. The condition (status `running`, or no status yet) makes the
 * update idempotent under at-least-once delivery: a second delivery fails the condition, and
 * that is reported as `duplicate`, a success. The write records its writer (`completed_by`,
 * `completion_attempt`) and asks for the old item when the condition fails (ALL_OLD), so a
 * condition failed by this very attempt's own write (a lost response the SDK retried) is told
 * apart from a real duplicate without a second read. One UpdateItem call either way.
 */
export async function markJobComplete(
  dynamodb: DynamoDBClient,
  table: string,
  message: TerminationMessage,
  retentionDays: number,
  writer: CompletionWriter,
  retry: ResendPolicy = DEFAULT_RESEND,
): Promise<CompletionOutcome> {
  const completedAt = rfc3339(new Date(message.completed_at));
  const sets = [
    "#status = :status",
    "#exit_code = :exit_code",
    "#duration = :duration",
    "#completed_at = :completed_at",
    "#started_at = if_not_exists(#started_at, :started_at)",
    "#instance_id = :instance_id",
    `#ttl = :ttl`,
    "#completed_by = :completed_by",
    "#completion_attempt = :completion_attempt",
    "#reported_by = :pending_report",
  ];
  const names: Record<string, string> = {
    "#status": "status",
    "#exit_code": "exit_code",
    "#duration": "duration_seconds",
    "#completed_at": "completed_at",
    "#started_at": "started_at",
    "#instance_id": "instance_id",
    "#ttl": JOBS_TABLE.ttlAttribute,
    "#completed_by": JOBS_TABLE.completedByAttribute,
    "#completion_attempt": JOBS_TABLE.completionAttemptAttribute,
    "#reported_by": JOBS_TABLE.completionReportedByAttribute,
  };
  const values: Record<string, { S: string } | { N: string }> = {
    ":status": { S: JOB_STATUS_FOR[message.status] },
    ":exit_code": { N: String(message.exit_code) },
    ":duration": { N: String(message.duration_seconds) },
    ":completed_at": { S: completedAt },
    ":started_at": { S: rfc3339(new Date(message.started_at)) },
    ":instance_id": { S: message.instance_id },
    ":ttl": { N: String(expiresAt(completedAt, retentionDays)) },
    ":running": { S: "running" },
    ":completed_by": { S: writer.messageId },
    ":completion_attempt": { S: writer.attempt },
    ":pending_report": { S: REPORT_PENDING },
  };
  if (message.error !== undefined) {
    sets.push("#error = :error");
    names["#error"] = "error";
    values[":error"] = { S: message.error };
  }
  const command = new UpdateItemCommand({
    TableName: table,
    Key: { [JOBS_TABLE.hashKey]: { S: message.job_id } },
    UpdateExpression: `SET ${sets.join(", ")}`,
    ConditionExpression: "#status = :running OR attribute_not_exists(#status)",
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
  try {
    // Re-sent with the same token after the SDK gave up: an earlier send that applied then fails
    // its condition on this attempt's own item, which resolves as this attempt's completion. If
    // every send fails, the record fails and its redelivery finds the report still pending.
    await withResends(() => dynamodb.send(command), retry);
    return { kind: "completed", recovered: false };
  } catch (error) {
    if (isConditionFailure(error)) return resolveFailedCondition(error, writer);
    throw error;
  }
}

/** A failed condition: completed by this very attempt (its earlier write applied), or a duplicate. */
function resolveFailedCondition(error: ConditionFailure, writer: CompletionWriter): CompletionOutcome {
  const item = conditionFailureItem(error);
  const completedBy = item?.[JOBS_TABLE.completedByAttribute]?.S;
  if (completedBy === writer.messageId && item?.[JOBS_TABLE.completionAttemptAttribute]?.S === writer.attempt) {
    return { kind: "completed", recovered: true };
  }
  return { kind: "duplicate", completedBy, foundStatus: item?.["status"]?.S, report: reportStateOf(item) };
}

/** Who reports a job's completion (logs it and emits its metrics), as the job item records it. */
export interface ReportState {
  /** `pending`, the claimant (`<message id> <attempt token>`), or undefined (a job completed before reports were recorded). */
  by: string | undefined;
  /** The claimant wrote, after its log line and metrics, that it reported. */
  done: boolean;
  /** Epoch seconds of the claim, as stored (a DynamoDB number), or undefined when none was recorded. */
  claimedAt: string | undefined;
  /**
   * Epoch seconds by which the claimant's invocation has certainly ended (its Lambda deadline), as
   * stored, or undefined for a claim written before deadlines were recorded.
   */
  deadline: string | undefined;
}

/**
 * Seconds past a claimant's recorded deadline before its own message's redelivery takes the claim
 * over: clocks of two invocations may disagree a little, and ending a timed-out sandbox takes a moment.
 */
export const REPORT_DEADLINE_MARGIN_SECONDS = 10;

/**
 * A claim older than this was made by an invocation that has ended (15 minutes is Lambda's longest
 * timeout), so a delivery of another message may take an unfinished claim over.
 */
export const REPORT_TAKEOVER_SECONDS = 900;

export function reportStateOf(item: Record<string, AttributeValue> | undefined): ReportState {
  return {
    by: item?.[JOBS_TABLE.completionReportedByAttribute]?.S,
    done: item?.[JOBS_TABLE.completionReportedAttribute]?.S !== undefined,
    claimedAt: item?.[JOBS_TABLE.completionReportClaimedAtAttribute]?.N,
    deadline: item?.[JOBS_TABLE.completionReportDeadlineAttribute]?.N,
  };
}

/** `<message id> <attempt token>`: a claimant names its message, so the message's redelivery knows its own earlier claim. */
export function claimantOf(writer: CompletionWriter): string {
  return `${writer.messageId} ${writer.attempt}`;
}

/**
 * What this delivery may claim ({@link claimable}): the pending report (`previous` undefined) or the
 * unfinished claim `previous`; `notBefore` (epoch seconds) when that claim is its own message's and
 * its claimant's invocation may still be running: the claim may be taken over only after then.
 */
export interface Claimable {
  previous: string | undefined;
  notBefore?: number;
}

/**
 * What this delivery may claim: the pending report, or an unfinished claim (no `done`) whose claimant
 * has certainly ended, or will have by `notBefore`. That claimant either never learned that its claim
 * applied (every answer was lost), and so emitted nothing, or emitted and then failed to record
 * `done` and its invocation ended: the first is the single fault this covers, the second a double
 * one (a duplicate report).
 *
 * - A claim of this same message's earlier delivery: ended once the claimant's recorded deadline
 *   (plus {@link REPORT_DEADLINE_MARGIN_SECONDS}) has passed. Before then the claimant may be alive,
 *   between its claim and its `done` mark: a message comes back when its visibility timeout expires,
 *   whether or not the invocation that received it has returned (a slow invocation, one started
 *   late after throttling, two overlapping receives), and a takeover then reports a second time
 *   (the chaos run at 30 %, seed 3). A claim without a recorded deadline (written before deadlines
 *   were; `Number(undefined)` is NaN) is taken over at once, as it was then.
 * - Another message's claim: only once it is REPORT_TAKEOVER_SECONDS old. Its own message comes
 *   back if it failed before emitting; another message taking it over earlier would report twice
 *   after a claimant that emitted and could not mark.
 */
export function claimable(state: ReportState, writer: CompletionWriter, nowSeconds: number): Claimable | null {
  if (state.by === REPORT_PENDING) return { previous: undefined };
  if (state.by === undefined || state.done) return null;
  if (state.by.startsWith(`${writer.messageId} `)) {
    const deadline = Number(state.deadline);
    if (!Number.isFinite(deadline)) return { previous: state.by };
    const notBefore = deadline + REPORT_DEADLINE_MARGIN_SECONDS;
    return notBefore <= nowSeconds ? { previous: state.by } : { previous: state.by, notBefore };
  }
  // A claim without a time is never stale: Number(undefined) is NaN, and NaN <= x is false.
  const stale = Number(state.claimedAt) <= nowSeconds - REPORT_TAKEOVER_SECONDS;
  return stale ? { previous: state.by } : null;
}

/** `mine`: this attempt logs and emits the completion (`recovered`: its claim's answer was lost); `taken`: another delivery does. */
export type ReportClaim = { kind: "mine"; recovered: boolean } | { kind: "taken"; state: ReportState };

/**
 * Claims the right to log the job's completion and emit its metrics: `pending` (or the unfinished
 * claim `previous`, see {@link claimable}) → this attempt's claimant, once per job. The condition lets
 * exactly one claim apply, so exactly one delivery logs and emits, whichever answers were lost: a
 * lost answer is re-sent and resolved from the old item (ALL_OLD) by this attempt's token.
 *
 * The claim comes before the log line and the metrics, which are written at once (EMF single
 * metrics, not stored for the end of the batch), and `done` is recorded after them
 * ({@link markReported}). It records `deadlineSeconds`, by when this claimant's invocation has
 * certainly ended: its own message's redelivery takes an unfinished claim over only after then.
 */
export async function claimCompletionReport(
  dynamodb: DynamoDBClient,
  table: string,
  jobId: string,
  writer: CompletionWriter,
  previous: string | undefined,
  nowSeconds: number,
  deadlineSeconds: number,
  retry: ResendPolicy = DEFAULT_RESEND,
): Promise<ReportClaim> {
  const me = claimantOf(writer);
  const command = new UpdateItemCommand({
    TableName: table,
    Key: { [JOBS_TABLE.hashKey]: { S: jobId } },
    UpdateExpression: "SET #reported_by = :me, #claimed_at = :now, #deadline = :deadline",
    ConditionExpression: previous === undefined ? "#reported_by = :pending" : "#reported_by = :previous AND attribute_not_exists(#reported)",
    ExpressionAttributeNames: {
      "#reported_by": JOBS_TABLE.completionReportedByAttribute,
      "#claimed_at": JOBS_TABLE.completionReportClaimedAtAttribute,
      "#deadline": JOBS_TABLE.completionReportDeadlineAttribute,
      ...(previous === undefined ? {} : { "#reported": JOBS_TABLE.completionReportedAttribute }),
    },
    ExpressionAttributeValues: {
      ":me": { S: me },
      ":now": { N: String(nowSeconds) },
      ":deadline": { N: String(deadlineSeconds) },
      ...(previous === undefined ? { ":pending": { S: REPORT_PENDING } } : { ":previous": { S: previous } }),
    },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
  try {
    await withResends(() => dynamodb.send(command), retry);
    return { kind: "mine", recovered: false };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const state = reportStateOf(conditionFailureItem(error));
    if (state.by === me) return { kind: "mine", recovered: true };
    return { kind: "taken", state };
  }
}

/**
 * Records, after the log line and the metrics, that the claimant reported (conditional on its claim
 * still standing): a later delivery then never takes the claim over. Re-sent like the claim; a
 * lost answer re-sent meets its own value, which the condition allows.
 */
export async function markReported(
  dynamodb: DynamoDBClient,
  table: string,
  jobId: string,
  writer: CompletionWriter,
  retry: ResendPolicy = DEFAULT_RESEND,
): Promise<void> {
  const me = claimantOf(writer);
  await withResends(
    () =>
      dynamodb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { [JOBS_TABLE.hashKey]: { S: jobId } },
          UpdateExpression: "SET #reported = :me",
          ConditionExpression: "#reported_by = :me",
          ExpressionAttributeNames: { "#reported": JOBS_TABLE.completionReportedAttribute, "#reported_by": JOBS_TABLE.completionReportedByAttribute },
          ExpressionAttributeValues: { ":me": { S: me } },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      ),
    retry,
  );
}
