import { BatchWriteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { oldJobs, oldJobsCutoff } from "../../../../functions/fleet/tasks/old-jobs";
import { TABLE } from "../../helpers/fleet-deps";
import { NOW, unlimited, budgetOf, harness } from "../../helpers/fleet-tasks";

describe("housekeeping task old_jobs", () => {
  it("cutoff is now − retention, as RFC 3339", () => {
    expect(oldJobsCutoff(NOW, 7)).to.equal("2025-11-18T12:00:00Z");
  });

  function jobsByStatus(t: ReturnType<typeof harness>, counts: Record<string, number>, pageSize = 100): void {
    t.dynamodbMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, { S: string }>; ExclusiveStartKey?: { n: { N: string } } }) => {
      const status = input.ExpressionAttributeValues[":status"]!.S;
      const all = Array.from({ length: counts[status] ?? 0 }, (_, i) => ({ job_id: { S: `${status}-${i}` } }));
      const start = Number(input.ExclusiveStartKey?.n.N ?? 0);
      const next = start + pageSize;
      return { Items: all.slice(start, next), LastEvaluatedKey: next < all.length ? { n: { N: String(next) } } : undefined };
    });
  }

  it("queries the status/completed_at index once per terminal status and deletes 25 per BatchWriteItem", async () => {
    const t = harness();
    jobsByStatus(t, { completed: 60, failed: 3 }, 40);
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({ UnprocessedItems: {} });

    const result = await oldJobs(t.deps, {}, unlimited);

    const queries = t.dynamodbMock.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries.map((q) => q.ExpressionAttributeValues?.[":status"]?.S)).to.deep.equal(["completed", "completed", "failed", "timeout", "interrupted"]);
    expect(queries[0]).to.deep.include({ IndexName: "status-completed_at-index", KeyConditionExpression: "#status = :status AND #completed_at < :cutoff" });
    expect(queries[0]!.ExpressionAttributeValues?.[":cutoff"]).to.deep.equal({ S: "2025-11-18T12:00:00Z" });
    const sizes = t.dynamodbMock.commandCalls(BatchWriteItemCommand).map((c) => c.args[0].input.RequestItems?.[TABLE]?.length);
    expect(sizes).to.deep.equal([25, 15, 20, 3]);
    expect(result).to.deep.include({ complete: true, deleteRequests: 63 });
    expect(t.metrics.named("JobRecordsArchived")[0]?.value).to.equal(63);
  });

  it("re-submits UnprocessedItems until they are done", async () => {
    const t = harness();
    jobsByStatus(t, { completed: 3 });
    const leftover = { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "completed-2" } } } }] };
    t.dynamodbMock.on(BatchWriteItemCommand).resolvesOnce({ UnprocessedItems: leftover }).resolves({ UnprocessedItems: {} });

    const result = await oldJobs(t.deps, {}, unlimited);

    const calls = t.dynamodbMock.commandCalls(BatchWriteItemCommand).map((c) => c.args[0].input.RequestItems?.[TABLE]);
    expect(calls.map((c) => c?.length)).to.deep.equal([3, 1]);
    expect(calls[1]).to.deep.equal(leftover[TABLE]);
    expect(result).to.deep.include({ complete: true, deleteRequests: 3, unprocessed: 0 });
  });

  it("gives up on items still unprocessed after 5 attempts, logs them, and reports incomplete", async () => {
    const t = harness();
    jobsByStatus(t, { completed: 1 });
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({ UnprocessedItems: { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "completed-0" } } } }] } });

    const result = await oldJobs(t.deps, {}, unlimited);

    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand)).to.have.length(5);
    expect(result).to.deep.include({ complete: false, deleteRequests: 0, unprocessed: 1 });
    expect(t.logger.steps()).to.include("old_jobs_unprocessed");
  });

  it("JobRecordsArchived counts delete requests issued: a listed record TTL already removed is counted too (documented)", async () => {
    const t = harness();
    // The index still lists completed-1, which TTL removed; BatchWriteItem accepts its delete silently.
    jobsByStatus(t, { completed: 2 });
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({ UnprocessedItems: {} });

    const result = await oldJobs(t.deps, {}, unlimited);

    expect(result).to.deep.include({ complete: true, deleteRequests: 2, unprocessed: 0 });
    expect(t.logger.withStep("old_jobs_deleted")[0]?.fields).to.include({ delete_requests: 2 });
    expect(t.metrics.named("JobRecordsArchived")[0]?.value).to.equal(2);
  });

  it("params.retention_days overrides the configured retention", async () => {
    const t = harness({ retentionDays: 7 });
    jobsByStatus(t, {});

    await oldJobs(t.deps, { retention_days: 30 }, unlimited);

    expect(t.dynamodbMock.commandCalls(QueryCommand)[0]!.args[0].input.ExpressionAttributeValues?.[":cutoff"]).to.deep.equal({ S: "2025-10-26T12:00:00Z" });
  });

  it("out of time: stops between batches and reports incomplete", async () => {
    const t = harness();
    jobsByStatus(t, { completed: 60 });
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({});

    const result = await oldJobs(t.deps, {}, budgetOf(1));

    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand)).to.have.length(1);
    expect(result).to.deep.include({ complete: false, deleteRequests: 25 });
  });
});
