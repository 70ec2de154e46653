import type { AttributeValue } from "@aws-sdk/client-dynamodb";

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
