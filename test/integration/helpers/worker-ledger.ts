import { CreateTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { WORKER_JOBS_TABLE } from "../../../functions/shared/tables";

export const LEDGER_TABLE = "worker-jobs";

/** The worker's job ledger as the part declares it (its key; TTL and PITR do not change the calls). */
export async function createLedgerTable(dynamodb: DynamoDBClient, name = LEDGER_TABLE): Promise<void> {
  await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: "PAY_PER_REQUEST",
      KeySchema: [{ AttributeName: WORKER_JOBS_TABLE.hashKey, KeyType: "HASH" }],
      AttributeDefinitions: [{ AttributeName: WORKER_JOBS_TABLE.hashKey, AttributeType: "S" }],
    }),
  );
}
