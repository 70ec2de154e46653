import { DeleteItemCommand, type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { conditionFailureItem, isConditionFailure } from "../shared/conditional-write";
import { type ResendPolicy, withResends } from "../shared/resend";

/** Claim-table attribute names (the table's hash key and its TTL attribute). */
export const LOCK_KEY = "instance_id";
export const LOCK_OWNER = "owner";
export const LOCK_EXPIRES_AT = "expires_at";

export interface LockDeps {
  dynamodb: DynamoDBClient;
  /**
   * How often a lock write is sent again after the SDK gave up on it (its attempts or its retry
   * quota spent): the same request again is resolved by its owner (a condition failed on the
   * caller's own item), so a write whose every answer was lost is not left unknown. Absent:
   * withResends' DEFAULT_RESEND. Tests pass an instant sleep.
   */
  resend?: ResendPolicy;
}

/**
 * Outcome of {@link acquireLock}. `recovered` means the condition failed on the caller's own
 * item: an earlier attempt of this write applied and its response was lost (the SDK retried),
 * or the same owner took the lock before. Either way the caller holds it until `expiresAt`.
 */
export type AcquireResult =
  | { acquired: true; expiresAt: number; recovered: boolean }
  | { acquired: false; holder: string | undefined; expiresAt: number | undefined };

/**
 * Takes the lock `key` for `owner` until `expiresAtSeconds`, if nobody holds an unexpired one.
 * DynamoDB's TTL deletes expired items only eventually, so the condition also accepts an item
 * whose `expires_at` has passed. `owner` must be stable across retries of the caller's work (a
 * workflow id, an origin message id), never an invocation id: a failed condition is resolved by
 * the owner recorded in the item it failed on (ALL_OLD), so a lost response is not a lost race.
 * Other errors propagate.
 */
export async function acquireLock(
  deps: LockDeps,
  table: string,
  key: string,
  owner: string,
  nowSeconds: number,
  expiresAtSeconds: number,
  extra: Record<string, string> = {},
): Promise<AcquireResult> {
  const put = new PutItemCommand({
    TableName: table,
    Item: {
      [LOCK_KEY]: { S: key },
      [LOCK_OWNER]: { S: owner },
      [LOCK_EXPIRES_AT]: { N: String(expiresAtSeconds) },
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { S: v }])),
    },
    ConditionExpression: "attribute_not_exists(#k) OR #e < :now",
    ExpressionAttributeNames: { "#k": LOCK_KEY, "#e": LOCK_EXPIRES_AT },
    ExpressionAttributeValues: { ":now": { N: String(nowSeconds) } },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
  try {
    await withResends(() => deps.dynamodb.send(put), deps.resend);
    return { acquired: true, expiresAt: expiresAtSeconds, recovered: false };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const item = conditionFailureItem(error);
    const holder = item?.[LOCK_OWNER]?.S;
    const heldUntil = item?.[LOCK_EXPIRES_AT]?.N === undefined ? undefined : Number(item[LOCK_EXPIRES_AT].N);
    // The condition failed on an unexpired item; if it names us, the lock is ours. Without the item
    // (a store that ignores ALL_OLD) nothing proves that, so it counts as someone else's.
    if (holder === owner) return { acquired: true, expiresAt: heldUntil ?? expiresAtSeconds, recovered: true };
    return { acquired: false, holder, expiresAt: heldUntil };
  }
}

/**
 * Releases the lock only if `owner` still holds it; someone else's lock is left alone.
 * Resolves true when the key is no longer held by `owner` and by nobody else either: deleted now,
 * or already absent, which is what an earlier attempt of this delete leaves when its response was
 * lost (or the TTL sweep). Resolves false only when another owner holds the key.
 */
export async function releaseLock(deps: LockDeps, table: string, key: string, owner: string): Promise<boolean> {
  const del = new DeleteItemCommand({
    TableName: table,
    Key: { [LOCK_KEY]: { S: key } },
    ConditionExpression: "#o = :owner",
    ExpressionAttributeNames: { "#o": LOCK_OWNER },
    ExpressionAttributeValues: { ":owner": { S: owner } },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
  try {
    await withResends(() => deps.dynamodb.send(del), deps.resend);
    return true;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    return conditionFailureItem(error) === undefined;
  }
}
