import { DeleteItemCommand, type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";

/** Claim-table attribute names (the table's hash key and its TTL attribute). */
export const LOCK_KEY = "instance_id";
export const LOCK_OWNER = "owner";
export const LOCK_EXPIRES_AT = "expires_at";

export interface LockDeps {
  dynamodb: DynamoDBClient;
}

function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/**
 * Takes the lock `key` for `owner` until `expiresAtSeconds`, if nobody holds an unexpired one.
 * DynamoDB's TTL deletes expired items only eventually, so the condition also accepts an item
 * whose `expires_at` has passed. Resolves false on a lost race; other errors propagate.
 */
export async function acquireLock(
  deps: LockDeps,
  table: string,
  key: string,
  owner: string,
  nowSeconds: number,
  expiresAtSeconds: number,
  extra: Record<string, string> = {},
): Promise<boolean> {
  try {
    await deps.dynamodb.send(
      new PutItemCommand({
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
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Releases the lock only if `owner` still holds it; someone else's lock is left alone. */
export async function releaseLock(deps: LockDeps, table: string, key: string, owner: string): Promise<boolean> {
  try {
    await deps.dynamodb.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { [LOCK_KEY]: { S: key } },
        ConditionExpression: "#o = :owner",
        ExpressionAttributeNames: { "#o": LOCK_OWNER },
        ExpressionAttributeValues: { ":owner": { S: owner } },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
