import { BatchWriteItemCommand, QueryCommand, type QueryCommandInput } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { oldJobs, oldJobsCutoff } from "../../../../functions/fleet/tasks/old-jobs";
import { TABLE } from "../../helpers/fleet-deps";
import { FakeJobsTable } from "../../helpers/fleet-fakes";
import { NOW, unlimited, budgetOf, harness } from "../../helpers/fleet-tasks";

describe("housekeeping task old_jobs", () => {
  it("cutoff is now − retention, as RFC 3339", () => {
    expect(oldJobsCutoff(NOW, 7)).to.equal("2025-11-18T12:00:00Z");
  });

  /** The jobs table (its Queries answered by index, key condition and cutoff), `counts` old jobs per status, served `pageSize` per page. */
  function jobsByStatus(t: ReturnType<typeof harness>, counts: Record<string, number>, pageSize = 100): FakeJobsTable {
    const rows = Object.entries(counts).flatMap(([status, n]) =>
      Array.from({ length: n }, (_, i) => ({ job_id: `${status}-${i}`, status, completed_at: "2025-11-01T00:00:00Z" })),
    );
    return new FakeJobsTable(rows, pageSize).install(t.dynamodbMock);
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

    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand)).to.have.length(2);
    expect(result).to.deep.include({ complete: false, deleteRequests: 50 });
  });

  it("a Query slower than the whole budget still deletes a batch per run, so the backlog is gone within one run per batch", async () => {
    // Prepare: 60 old records; the budget is spent before the first delete of every run (the Query took it all).
    const t = harness();
    const table = jobsByStatus(t, { completed: 60 });
    const spent = { exhausted: () => true };
    // Act: four scheduled runs (60 records, 25 a batch)
    const results = [];
    for (let run = 0; run < 4; run++) results.push(await oldJobs(t.deps, {}, spent));
    // Assess: each run deleted one batch and said it was not done; the run that finds nothing left
    // queries every status and is complete.
    expect(results.map((r) => r.deleteRequests)).to.deep.equal([25, 25, 10, 0]);
    expect(results.map((r) => r.complete)).to.deep.equal([false, false, false, true]);
    expect(table.rows.filter((r) => r.status === "completed")).to.deep.equal([]);
  });

  it("deletes exactly the keys of the jobs completed before the cutoff: recent, running and queued jobs stay", async () => {
    // Prepare: the table answers the index Query by status and cutoff, and deletes the keys it is sent.
    const t = harness({ retentionDays: 7 });
    const table = new FakeJobsTable([
      { job_id: "old-done", status: "completed", instance_id: "i-1", completed_at: "2025-11-18T11:59:59Z" },
      { job_id: "old-failed", status: "failed", completed_at: "2025-11-01T00:00:00Z" },
      { job_id: "old-interrupted", status: "interrupted", completed_at: "2025-10-01T00:00:00Z" },
      { job_id: "at-cutoff", status: "timeout", completed_at: "2025-11-18T12:00:00Z" },
      { job_id: "recent", status: "completed", completed_at: "2025-11-25T11:00:00Z" },
      { job_id: "running", status: "running", instance_id: "i-2" },
      { job_id: "queued", status: "queued" },
    ]).install(t.dynamodbMock);
    // Act
    const result = await oldJobs(t.deps, {}, unlimited);
    // Assess
    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand).map((c) => c.args[0].input.RequestItems)).to.deep.equal([
      { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "old-done" } } } }] },
      { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "old-failed" } } } }] },
      { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "old-interrupted" } } } }] },
    ]);
    expect(table.rows.map((r) => r.job_id)).to.deep.equal(["at-cutoff", "recent", "running", "queued"]);
    expect(result).to.deep.equal({ complete: true, deleteRequests: 3, unprocessed: 0 });
  });

  it("a run with nothing left unprocessed logs only old_jobs_deleted, with the count, cutoff and retention", async () => {
    // Prepare
    const t = harness();
    jobsByStatus(t, { failed: 2 });
    // Act
    await oldJobs(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.entries.map((e) => e.fields)).to.deep.equal([
      { step: "old_jobs_deleted", delete_requests: 2, cutoff: "2025-11-18T12:00:00Z", retention_days: 7 },
    ]);
  });

  it("logs what it left unprocessed with the cutoff", async () => {
    // Prepare
    const t = harness();
    jobsByStatus(t, { completed: 1 });
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({ UnprocessedItems: { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "completed-0" } } } }] } });
    // Act
    await oldJobs(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("old_jobs_unprocessed").map((e) => e.fields)).to.deep.equal([
      { step: "old_jobs_unprocessed", unprocessed: 1, cutoff: "2025-11-18T12:00:00Z" },
    ]);
  });

  describe("the budget between pages", () => {
    it("out of time after a page with more to come: stops before asking for the next page, incomplete", async () => {
      // Prepare: 60 old completed jobs served 30 a page; the budget holds for one check.
      const t = harness();
      const table = jobsByStatus(t, { completed: 60 }, 30);
      // Act
      const result = await oldJobs(t.deps, {}, budgetOf(1));
      // Assess
      expect(t.dynamodbMock.commandCalls(QueryCommand)).to.have.length(1);
      expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand).map((c) => c.args[0].input.RequestItems?.[TABLE]?.length)).to.deep.equal([25, 5]);
      expect(table.rows).to.have.length(30);
      expect(result).to.deep.equal({ complete: false, deleteRequests: 30, unprocessed: 0 });
    });

    it("out of time after the last page of the last status: the run is complete", async () => {
      // Prepare: old jobs only in the last terminal status, one page; the budget is spent from the start.
      const t = harness();
      const table = jobsByStatus(t, { interrupted: 3 });
      // Act
      const result = await oldJobs(t.deps, {}, budgetOf(0));
      // Assess
      expect(t.dynamodbMock.commandCalls(QueryCommand).map((c) => c.args[0].input.ExpressionAttributeValues?.[":status"]?.S)).to.deep.equal([
        "completed",
        "failed",
        "timeout",
        "interrupted",
      ]);
      expect(table.rows).to.deep.equal([]);
      expect(result).to.deep.equal({ complete: true, deleteRequests: 3, unprocessed: 0 });
    });
  });

  it("a page without Items deletes nothing, and an item without its key is skipped, never sent as a key", async () => {
    // Prepare: "completed" answers one item lacking job_id beside one with it; the other statuses answer no Items at all.
    const t = harness();
    t.dynamodbMock
      .on(QueryCommand)
      .callsFake((input: QueryCommandInput) =>
        input.ExpressionAttributeValues?.[":status"]?.S === "completed"
          ? { Items: [{ status: { S: "completed" } }, { job_id: { S: "j-1" } }], Count: 2 }
          : { Count: 0 },
      );
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({ UnprocessedItems: {} });
    // Act
    const result = await oldJobs(t.deps, {}, unlimited);
    // Assess
    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand).map((c) => c.args[0].input.RequestItems)).to.deep.equal([
      { [TABLE]: [{ DeleteRequest: { Key: { job_id: { S: "j-1" } } } }] },
    ]);
    expect(result).to.deep.equal({ complete: true, deleteRequests: 1, unprocessed: 0 });
  });
});
