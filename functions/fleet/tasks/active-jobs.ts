import { type DynamoDBClient, paginateQuery } from "@aws-sdk/client-dynamodb";
import { JOBS_TABLE } from "../../shared/tables";
import { ACTIVE_JOB_STATUSES } from "../jobs";

/** Whether any job on this instance is still queued or running (Query on the instance_id index). */
export async function hasActiveJob(dynamodb: DynamoDBClient, table: string, instanceId: string): Promise<boolean> {
  const statuses = Object.fromEntries(ACTIVE_JOB_STATUSES.map((s, i) => [`:s${i}`, { S: s }]));
  const pages = paginateQuery(
    { client: dynamodb },
    {
      TableName: table,
      IndexName: JOBS_TABLE.instanceIndex.name,
      KeyConditionExpression: "#instance_id = :instance_id",
      FilterExpression: `#status IN (${Object.keys(statuses).join(", ")})`,
      ExpressionAttributeNames: { "#instance_id": "instance_id", "#status": "status" },
      ExpressionAttributeValues: { ":instance_id": { S: instanceId }, ...statuses },
      Select: "COUNT",
    },
  );
  for await (const page of pages) if ((page.Count ?? 0) > 0) return true;
  return false;
}

/**
 * Every instance with a queued or running job, read in pages from the status/instance index: one
 * Query per active status (plus its pages), however many candidates there are. Throws when a page
 * cannot be read; the caller then falls back to asking per candidate.
 */
export async function instancesWithActiveJobs(dynamodb: DynamoDBClient, table: string): Promise<Set<string>> {
  const busy = new Set<string>();
  for (const status of ACTIVE_JOB_STATUSES) {
    const pages = paginateQuery(
      { client: dynamodb },
      {
        TableName: table,
        IndexName: JOBS_TABLE.activeIndex.name,
        KeyConditionExpression: "#status = :status",
        ExpressionAttributeNames: { "#status": "status", "#instance_id": "instance_id" },
        ExpressionAttributeValues: { ":status": { S: status } },
        ProjectionExpression: "#instance_id",
      },
    );
    for await (const page of pages) for (const item of page.Items ?? []) if (item.instance_id?.S) busy.add(item.instance_id.S);
  }
  return busy;
}
