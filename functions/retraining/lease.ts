import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { conditionalWrite } from "../shared/conditional-write";

/**
 * The state-table key of the capacity lease. Model names must start with a letter or digit and
 * never contain `#` (functions/retraining/message.ts), so no state record can ever take this key.
 */
export const CAPACITY_LEASE_KEY = "#capacity-lease";

/**
 * The lease is asked for again after this pause while someone else holds it. Holders keep it
 * for one batch's ListTasks + RunTasks (about a second), so a short fixed pause suffices.
 */
export const LEASE_RETRY_DELAY_MS = 250;
/** The most a batch waits for the lease, whatever time the invocation has left. */
export const LEASE_MAX_WAIT_MS = 3_000;

export interface LeaseTiming {
  /** Epoch ms now. */
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Epoch ms after which this invocation gives up waiting for the lease. */
  waitUntil: number;
  /** Epoch ms the lease lapses at if this invocation dies holding it. */
  expiresAt: number;
}

/**
 * How long a batch may wait for the lease and how long it may hold it. It is held at most for
 * the invocation's remaining time (≈ the function timeout), so a crashed holder blocks the
 * others no longer than Lambda would have let it run; the wait ends well inside that time.
 */
export function leaseWindow(nowMs: number, remainingMs: number): { waitUntil: number; expiresAt: number } {
  return { waitUntil: nowMs + Math.min(LEASE_MAX_WAIT_MS, Math.floor(remainingMs / 4)), expiresAt: nowMs + remainingMs };
}

/**
 * Who holds the lease: a token made once per batch (never the request id, never reused), and the
 * origin message ids the batch is launching for, so an operator looking at the item sees whose
 * launches it serialises. Only `token` decides ownership.
 */
export interface LeaseHolder {
  token: string;
  origins: readonly string[];
}

/**
 * One conditional PutItem: true when `holder` now holds the lease (it was free or had lapsed).
 * A failed condition is resolved by the item it failed against: if that names this holder, an
 * earlier attempt of this same write applied and only its response was lost (the SDK retried),
 * so the lease is ours, not busy.
 */
export async function tryAcquireLease(db: DynamoDBDocumentClient, table: string, holder: LeaseHolder, nowMs: number, expiresAt: number): Promise<boolean> {
  const outcome = await conditionalWrite(
    db,
    new PutCommand({
      TableName: table,
      Item: { model_name: CAPACITY_LEASE_KEY, holder: holder.token, origin_message_ids: [...holder.origins], expires_at: expiresAt, acquired_at: nowMs },
      // Names go through placeholders so no attribute can collide with a DynamoDB reserved word.
      ConditionExpression: "attribute_not_exists(#key) OR #expires < :now",
      ExpressionAttributeNames: { "#key": "model_name", "#expires": "expires_at" },
      ExpressionAttributeValues: { ":now": nowMs },
    }),
  );
  return outcome.applied || outcome.old?.holder === holder.token;
}

/**
 * Asks for the lease until it is granted or `waitUntil` passes; resolves with the number of
 * attempts when granted, or false when it stayed busy. DynamoDB errors other than a lost
 * condition propagate (the SDK has already retried them).
 */
export async function acquireLease(db: DynamoDBDocumentClient, table: string, holder: LeaseHolder, t: LeaseTiming): Promise<number | false> {
  // Bounded by count as well as by clock, so a clock that does not move cannot make it spin.
  const maxAttempts = 1 + Math.max(0, Math.floor((t.waitUntil - t.now()) / LEASE_RETRY_DELAY_MS));
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (await tryAcquireLease(db, table, holder, t.now(), t.expiresAt)) return attempt;
    if (attempt === maxAttempts || t.now() + LEASE_RETRY_DELAY_MS > t.waitUntil) break;
    await t.sleep(LEASE_RETRY_DELAY_MS);
  }
  return false;
}

/**
 * Conditional DeleteItem by the holder's token. False only when someone else holds it now (the
 * lease had lapsed and was taken; theirs is left alone). A failed condition against no item at
 * all means an earlier attempt of this delete applied and its response was lost: released.
 */
export async function releaseLease(db: DynamoDBDocumentClient, table: string, holder: LeaseHolder): Promise<boolean> {
  const outcome = await conditionalWrite(
    db,
    new DeleteCommand({
      TableName: table,
      Key: { model_name: CAPACITY_LEASE_KEY },
      ConditionExpression: "#holder = :me",
      ExpressionAttributeNames: { "#holder": "holder" },
      ExpressionAttributeValues: { ":me": holder.token },
    }),
  );
  return outcome.applied || outcome.old === undefined || outcome.old.holder === holder.token;
}

/** Thrown when a batch could not get the lease; the handler defers its valid messages (re-sent with a delay, defer.ts). */
export class LeaseBusyError extends Error {
  constructor() {
    super("capacity lease busy: another launcher invocation is counting and launching");
    this.name = "LeaseBusyError";
  }
}
