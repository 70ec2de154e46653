import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";

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

function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/**
 * How long a batch may wait for the lease and how long it may hold it. It is held at most for
 * the invocation's remaining time (≈ the function timeout), so a crashed holder blocks the
 * others no longer than Lambda would have let it run; the wait ends well inside that time.
 */
export function leaseWindow(nowMs: number, remainingMs: number): { waitUntil: number; expiresAt: number } {
  return { waitUntil: nowMs + Math.min(LEASE_MAX_WAIT_MS, Math.floor(remainingMs / 4)), expiresAt: nowMs + remainingMs };
}

/** One conditional PutItem: true when `holder` now holds the lease (it was free or had lapsed). */
export async function tryAcquireLease(db: DynamoDBDocumentClient, table: string, holder: string, nowMs: number, expiresAt: number): Promise<boolean> {
  try {
    await db.send(
      new PutCommand({
        TableName: table,
        Item: { model_name: CAPACITY_LEASE_KEY, holder, expires_at: expiresAt, acquired_at: nowMs },
        // Names go through placeholders so no attribute can collide with a DynamoDB reserved word.
        ConditionExpression: "attribute_not_exists(#key) OR #expires < :now",
        ExpressionAttributeNames: { "#key": "model_name", "#expires": "expires_at" },
        ExpressionAttributeValues: { ":now": nowMs },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * Asks for the lease until it is granted or `waitUntil` passes; resolves with the number of
 * attempts when granted, or false when it stayed busy. DynamoDB errors other than a lost
 * condition propagate (the SDK has already retried them).
 */
export async function acquireLease(db: DynamoDBDocumentClient, table: string, holder: string, t: LeaseTiming): Promise<number | false> {
  // Bounded by count as well as by clock, so a clock that does not move cannot make it spin.
  const maxAttempts = 1 + Math.max(0, Math.floor((t.waitUntil - t.now()) / LEASE_RETRY_DELAY_MS));
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (await tryAcquireLease(db, table, holder, t.now(), t.expiresAt)) return attempt;
    if (attempt === maxAttempts || t.now() + LEASE_RETRY_DELAY_MS > t.waitUntil) break;
    await t.sleep(LEASE_RETRY_DELAY_MS);
  }
  return false;
}

/** Conditional DeleteItem: false when the lease had lapsed and someone else holds it now (theirs is left alone). */
export async function releaseLease(db: DynamoDBDocumentClient, table: string, holder: string): Promise<boolean> {
  try {
    await db.send(
      new DeleteCommand({
        TableName: table,
        Key: { model_name: CAPACITY_LEASE_KEY },
        ConditionExpression: "#holder = :me",
        ExpressionAttributeNames: { "#holder": "holder" },
        ExpressionAttributeValues: { ":me": holder },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Thrown when a batch could not get the lease; the handler defers its valid messages (re-sent with a delay, defer.ts). */
export class LeaseBusyError extends Error {
  constructor() {
    super("capacity lease busy: another launcher invocation is counting and launching");
    this.name = "LeaseBusyError";
  }
}
