import { BatchGetCommand, DeleteCommand, type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { conditionalWrite } from "../shared/conditional-write";
import type { Trigger } from "./message";

/**
 * The launcher's intent, one item per origin message (the message first received; deferred
 * copies and stamped dead-letter copies carry its id, defer.ts), in RETRAINING_INTENT_TABLE:
 *
 *   in_progress  claimed by one attempt (`attempt`, a token made per record per invocation) just
 *                before its RunTask; `in_progress_until` = that invocation's deadline.
 *   launched     completed with the task's ARN: every later delivery of the origin is a duplicate.
 *
 * `fallback` (FARGATE) is set on an in_progress claim before the on-demand retry of a Spot launch
 * refused for capacity: an attempt that takes the claim over then repeats the retry's RunTask (its
 * own clientToken), never the Spot one, which ECS may now answer with a second task.
 *
 * The claim is a conditional write, so of two deliveries of one origin (concurrent invocations, a
 * redelivery after another message of the same model, a DLQ redrive days later) one calls RunTask.
 * `expires_at` (epoch s, the table's TTL) keeps every record for RETRAINING_INTENT_RETENTION_SECONDS,
 * longer than the longest way a message can come back (infra/parts/retraining.ts).
 */
export const INTENT_KEY = "origin_message_id";

/**
 * ECS keeps a RunTask clientToken for 24 hours. An attempt that died between its RunTask and its
 * completion leaves an expired in_progress record; a later attempt may take it over and call
 * RunTask again only while ECS still maps the token to the first call's task. The margin keeps
 * the takeover clear of the window's edge (clock skew, a slow RunTask).
 */
export const CLIENT_TOKEN_WINDOW_MS = 24 * 3_600_000;
export const TAKEOVER_MARGIN_MS = 3_600_000;

/** BatchGetItem takes at most 100 keys; unprocessed keys are re-asked this many times. */
const BATCH_GET_LIMIT = 100;
const UNPROCESSED_RETRIES = 3;

export interface LaunchedIntent {
  originMessageId: string;
  taskArn: string;
  jobId: string;
  modelName: string;
  trigger: Trigger;
  /** Epoch ms the launch was completed at. */
  launchedAt: number;
}

export interface IntentClaim {
  originMessageId: string;
  /** Identifies this attempt's writes; the same across the SDK's retries of one write. */
  attempt: string;
  modelName: string;
  jobId: string;
  trigger: Trigger;
  nowMs: number;
  /** This invocation's deadline: past it, the attempt cannot be running any more. */
  inProgressUntil: number;
  retentionSeconds: number;
}

/**
 * What a claim found:
 * - `claimed`: this attempt may call RunTask (a fresh claim; its own earlier write whose response
 *   was lost; or the takeover of a dead attempt's claim inside the clientToken window).
 * - `launched`: the origin was launched already; acknowledge it.
 * - `in_progress`: another live attempt holds it; wait (defer) and ask again.
 * - `outcome_unknown`: a dead attempt's claim older than the clientToken window: it may have
 *   started a task that ECS no longer maps to the token, so a RunTask now could start a second.
 */
export type ClaimResult =
  | { kind: "claimed"; takeover: boolean; fallback: boolean }
  | { kind: "launched"; intent: LaunchedIntent }
  | { kind: "in_progress"; attempt: string; until: number }
  | { kind: "outcome_unknown"; firstClaimedAt: number };

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number => (typeof v === "number" ? v : Number(v ?? Number.NaN));

function launchedIntentOf(item: Record<string, unknown>): LaunchedIntent | undefined {
  if (item.status !== "launched" || typeof item.task_arn !== "string") return undefined;
  return {
    originMessageId: str(item[INTENT_KEY]),
    taskArn: item.task_arn,
    jobId: str(item.job_id),
    modelName: str(item.model_name),
    trigger: str(item.trigger) as Trigger,
    launchedAt: num(item.launched_at),
  };
}

const ttl = (nowMs: number, retentionSeconds: number) => Math.ceil(nowMs / 1000) + retentionSeconds;

/**
 * Claims the origin for one attempt, before its RunTask. UpdateItem rather than PutItem so a
 * takeover keeps `first_claimed_at`: the clientToken window runs from the first RunTask, not the
 * latest claim. The condition admits a new origin, or a dead attempt's claim still inside the
 * window; anything else is resolved from the item it failed against (ALL_OLD).
 */
export async function claimIntent(db: DynamoDBDocumentClient, table: string, c: IntentClaim): Promise<ClaimResult> {
  const windowStart = c.nowMs - (CLIENT_TOKEN_WINDOW_MS - TAKEOVER_MARGIN_MS);
  const outcome = await conditionalWrite(
    db,
    new UpdateCommand({
      TableName: table,
      Key: { [INTENT_KEY]: c.originMessageId },
      UpdateExpression:
        "SET #status = :in_progress, #attempt = :me, claimed_at = :now, in_progress_until = :until, first_claimed_at = if_not_exists(first_claimed_at, :now), model_name = :model, job_id = :job, #trigger = :trigger, expires_at = :ttl",
      ConditionExpression: "attribute_not_exists(#key) OR (#status = :in_progress AND in_progress_until < :now AND first_claimed_at > :window_start)",
      // status and trigger are DynamoDB reserved words.
      ExpressionAttributeNames: { "#key": INTENT_KEY, "#status": "status", "#attempt": "attempt", "#trigger": "trigger" },
      ExpressionAttributeValues: {
        ":in_progress": "in_progress",
        ":me": c.attempt,
        ":now": c.nowMs,
        ":until": c.inProgressUntil,
        ":window_start": windowStart,
        ":model": c.modelName,
        ":job": c.jobId,
        ":trigger": c.trigger,
        ":ttl": ttl(c.nowMs, c.retentionSeconds),
      },
      // The old item: an attempt named in it means this claim took a dead attempt's over, and its
      // `fallback` says which RunTask that attempt may have made.
      ReturnValues: "ALL_OLD",
    }),
  );
  if (outcome.applied) return { kind: "claimed", takeover: outcome.attributes?.attempt !== undefined, fallback: outcome.attributes?.fallback === FALLBACK };
  return resolveClaim(outcome.old, c.attempt, c.nowMs);
}

/**
 * Why a claim's condition failed, from the item it failed against. Pure. An expired claim of
 * another attempt failed the condition only by being older than the clientToken window.
 */
export function resolveClaim(old: Record<string, unknown> | undefined, attempt: string, nowMs: number): ClaimResult {
  if (old === undefined) {
    // The item vanished between the check and now (released by its holder): someone was there; ask again later.
    return { kind: "in_progress", attempt: "", until: nowMs };
  }
  const launched = launchedIntentOf(old);
  if (launched) return { kind: "launched", intent: launched };
  // This attempt's own claim: an earlier try of this write applied and its response was lost.
  if (old.attempt === attempt) return { kind: "claimed", takeover: false, fallback: old.fallback === FALLBACK };
  const until = num(old.in_progress_until);
  if (!(until < nowMs)) return { kind: "in_progress", attempt: str(old.attempt), until };
  return { kind: "outcome_unknown", firstClaimedAt: num(old.first_claimed_at) };
}

/** The value of `fallback` once an attempt turned to FARGATE. */
export const FALLBACK = "FARGATE";

/** Another attempt holds the claim now: this one must not launch. */
export class ClaimLostError extends Error {
  constructor(originMessageId: string, by: string) {
    super(`intent of ${originMessageId} is held by attempt ${by || "(none)"}, not this one`);
    this.name = "ClaimLostError";
  }
}

/**
 * Records on this attempt's claim that its launch turns to FARGATE, before that RunTask. Throws
 * ClaimLostError when another attempt holds the claim (it took it over: this one ran past its
 * deadline); a lost response of this write is resolved by the item's own `attempt`.
 */
export async function markFallback(db: DynamoDBDocumentClient, table: string, r: { originMessageId: string; attempt: string }): Promise<void> {
  const outcome = await conditionalWrite(
    db,
    new UpdateCommand({
      TableName: table,
      Key: { [INTENT_KEY]: r.originMessageId },
      UpdateExpression: "SET fallback = :fallback",
      ConditionExpression: "#attempt = :me AND #status = :in_progress",
      ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" },
      ExpressionAttributeValues: { ":fallback": FALLBACK, ":me": r.attempt, ":in_progress": "in_progress" },
    }),
  );
  if (outcome.applied || (outcome.old?.attempt === r.attempt && outcome.old.fallback === FALLBACK)) return;
  throw new ClaimLostError(r.originMessageId, str(outcome.old?.attempt));
}

export interface IntentCompletion {
  originMessageId: string;
  attempt: string;
  taskArn: string;
  nowMs: number;
  retentionSeconds: number;
}

/**
 * What completing found: `completed` (this write, or its own earlier try whose response was lost),
 * or `superseded` when another attempt took the claim over (this one ran past its deadline); that
 * attempt's RunTask carried the same clientToken, so it names the same task. Not an error either way.
 */
export type CompletionResult = { kind: "completed" } | { kind: "superseded"; by: string; status: string };

/** Marks the origin launched with its task's ARN; the TTL restarts from the launch. */
export async function completeIntent(db: DynamoDBDocumentClient, table: string, c: IntentCompletion): Promise<CompletionResult> {
  const outcome = await conditionalWrite(
    db,
    new UpdateCommand({
      TableName: table,
      Key: { [INTENT_KEY]: c.originMessageId },
      UpdateExpression: "SET #status = :launched, task_arn = :task_arn, launched_at = :now, expires_at = :ttl REMOVE in_progress_until",
      ConditionExpression: "#attempt = :me",
      ExpressionAttributeNames: { "#status": "status", "#attempt": "attempt" },
      ExpressionAttributeValues: {
        ":launched": "launched",
        ":task_arn": c.taskArn,
        ":now": c.nowMs,
        ":ttl": ttl(c.nowMs, c.retentionSeconds),
        ":me": c.attempt,
      },
    }),
  );
  if (outcome.applied || outcome.old?.attempt === c.attempt) return { kind: "completed" };
  return { kind: "superseded", by: str(outcome.old?.attempt), status: str(outcome.old?.status) };
}

/**
 * Gives a claim up after a launch that failed. `definite`: ECS answered and started no task, so the
 * record is deleted and a later delivery starts afresh. Otherwise (an error, the RunTask may have
 * applied) it stays in progress but expired at once, so the next delivery takes it over at once,
 * inside the clientToken window that `first_claimed_at` keeps counting. Conditional on this
 * attempt: a claim another attempt took over is theirs. A lost response needs no resolution
 * here: a retry that finds the item gone or already released leaves it as this attempt meant.
 */
export async function releaseIntent(
  db: DynamoDBDocumentClient,
  table: string,
  r: { originMessageId: string; attempt: string; definite: boolean },
): Promise<void> {
  const key = { [INTENT_KEY]: r.originMessageId };
  const mine = { ConditionExpression: "#attempt = :me AND #status = :in_progress", ExpressionAttributeNames: { "#attempt": "attempt", "#status": "status" } };
  const values = { ":me": r.attempt, ":in_progress": "in_progress" };
  await conditionalWrite(
    db,
    r.definite
      ? new DeleteCommand({ TableName: table, Key: key, ...mine, ExpressionAttributeValues: values })
      : new UpdateCommand({
          TableName: table,
          Key: key,
          UpdateExpression: "SET in_progress_until = :zero",
          ...mine,
          ExpressionAttributeValues: { ...values, ":zero": 0 },
        }),
  );
}

/**
 * The launched intents among `origins`, read with consistent BatchGetItem calls once per batch, so
 * a duplicate is acknowledged before the cap (even when it is full) without taking the lease.
 * Keys DynamoDB leaves unprocessed after the retries fail the call: better retried than launched blind.
 */
export async function launchedIntents(db: DynamoDBDocumentClient, table: string, origins: readonly string[]): Promise<Map<string, LaunchedIntent>> {
  const launched = new Map<string, LaunchedIntent>();
  const unique = [...new Set(origins)];
  for (let i = 0; i < unique.length; i += BATCH_GET_LIMIT) {
    let keys: Record<string, unknown>[] = unique.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ [INTENT_KEY]: id }));
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt > UNPROCESSED_RETRIES) throw new Error(`intent table left ${keys.length} key(s) unprocessed after ${UNPROCESSED_RETRIES} retries`);
      const out = await db.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
      for (const item of out.Responses?.[table] ?? []) {
        const intent = launchedIntentOf(item);
        if (intent) launched.set(intent.originMessageId, intent);
      }
      keys = out.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return launched;
}
