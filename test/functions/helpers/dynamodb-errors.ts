import { type AttributeValue, DynamoDBServiceException } from "@aws-sdk/client-dynamodb";

/**
 * ConditionalCheckFailedException as DynamoDB raises it. `item` is the old item it returns when
 * the write asked for ReturnValuesOnConditionCheckFailure ALL_OLD and an item was there.
 */
export function conditionFailed(item?: Record<string, AttributeValue>): DynamoDBServiceException {
  const error = new DynamoDBServiceException({
    name: "ConditionalCheckFailedException",
    message: "The conditional request failed",
    $fault: "client",
    $metadata: { httpStatusCode: 400 },
  });
  return item ? Object.assign(error, { Item: item }) : error;
}
