import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { DeleteCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";

/**
 * A DynamoDB conditional write whose condition failed. With `ReturnValuesOnConditionCheckFailure:
 * "ALL_OLD"` the error carries the item that failed it, so the writer can tell its own earlier
 * attempt (a lost response the SDK retried) from someone else's item without a second read.
 * Matched by name, not by class: tests and other runtimes raise plain errors with that name.
 */
export interface ConditionFailure extends Error {
  name: "ConditionalCheckFailedException";
  /** The item as it was when the condition failed; absent when there was none (or ALL_OLD was not asked for). */
  Item?: Record<string, AttributeValue>;
}

export function isConditionFailure(error: unknown): error is ConditionFailure {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/** The item a failed condition saw, or undefined if there was none. */
export function conditionFailureItem(error: ConditionFailure): Record<string, AttributeValue> | undefined {
  const item = error.Item;
  return item && typeof item === "object" ? item : undefined;
}

/* The DocumentClient flavour, for callers that read and write plain JS items. */

/** What a conditional write found: it applied, or its condition failed against `old` (undefined: no item). */
export type ConditionalOutcome =
  | { applied: true; attributes: Record<string, unknown> | undefined }
  | { applied: false; old: Record<string, unknown> | undefined };

type ConditionalCommand = PutCommand | UpdateCommand | DeleteCommand;

/**
 * The item a failed condition was checked against. The DocumentClient translates requests and
 * responses but not errors, so the item DynamoDB returns with ReturnValuesOnConditionCheckFailure
 * arrives in its wire form (`{S: …}`, `{N: …}`) and is unmarshalled here.
 */
export function itemOfConditionFailure(error: unknown): Record<string, unknown> | undefined {
  const item = (error as { Item?: Record<string, AttributeValue> } | undefined)?.Item;
  if (item === undefined || Object.keys(item).length === 0) return undefined;
  return unmarshall(item);
}

/**
 * Sends a conditional write asking DynamoDB for the item it was checked against when the
 * condition fails, and answers with it instead of throwing.
 *
 * Why: a write whose response is lost (a timeout, a dropped connection) has applied, and the SDK
 * retries it. The retry then fails its condition against the caller's own item. Treating every
 * ConditionalCheckFailed as "someone else's" turns the platform's conditional writes against
 * their own writers, so each caller decides from `old`, whose identity attribute names the writer,
 * whether it is looking at its own earlier attempt. Other errors propagate.
 */
export async function conditionalWrite(db: DynamoDBDocumentClient, command: ConditionalCommand): Promise<ConditionalOutcome> {
  command.input.ReturnValuesOnConditionCheckFailure = "ALL_OLD";
  try {
    // The union of three command types has no single `send` overload; each is a valid DocumentClient command.
    const out = await db.send(command as PutCommand);
    return { applied: true, attributes: out?.Attributes };
  } catch (error) {
    if (isConditionFailure(error)) return { applied: false, old: itemOfConditionFailure(error) };
    throw error;
  }
}
