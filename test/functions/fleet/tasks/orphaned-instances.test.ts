import { type AttributeValue, GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import * as sinon from "sinon";
import { budgetFrom } from "../../../../functions/fleet/budget";
import { CURSOR_TTL_SECONDS } from "../../../../functions/fleet/tasks/cursor";
import { ORPHAN_PAGE_SIZE, orphanCutoff, orphanedInstances } from "../../../../functions/fleet/tasks/orphaned-instances";
import type { TaskDeps, TaskResult } from "../../../../functions/fleet/tasks/types";
import { awsError, TABLE } from "../../helpers/fleet-deps";
import { ec2Fleet } from "../../helpers/fleet-fakes";
import { NOW, unlimited, budgetOf, harness, id, instance, activeJobs } from "../../helpers/fleet-tasks";

/** The filters the sweep sends (the cursor's query). */
const FILTERS = [
  { Name: "tag:runs-fleet:managed", Values: ["true"] },
  { Name: "tag:encache:environment", Values: ["dev"] },
  { Name: "instance-state-name", Values: ["running", "pending"] },
];

describe("housekeeping task orphaned_instances", () => {
  it("cutoff is now − (max runtime + 10 min)", () => {
    expect(orphanCutoff(NOW, 60).toISOString()).to.equal("2025-11-25T10:50:00.000Z");
  });

  const cases: Array<{ title: string; launched: number; active: boolean; terminated: boolean }> = [
    { title: "an old instance without an active job is terminated", launched: 71, active: false, terminated: true },
    { title: "an old instance with an active job is kept", launched: 71, active: true, terminated: false },
    { title: "an instance younger than max runtime + 10 min is kept", launched: 69, active: false, terminated: false },
    { title: "an instance launched exactly max runtime + 10 min ago is kept (only older ones are orphans)", launched: 70, active: false, terminated: false },
  ];
  for (const c of cases) {
    it(c.title, async () => {
      const t = harness({ maxRuntimeMinutes: 60 });
      ec2Fleet(t.ec2Mock, [instance(1, c.launched)]);
      t.ec2Mock.on(TerminateInstancesCommand).resolves({});
      activeJobs(t, c.active ? [id(1)] : []);

      const result = await orphanedInstances(t.deps, {}, unlimited);

      const terminated = t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((x) => x.args[0].input.InstanceIds ?? []);
      expect(terminated).to.deep.equal(c.terminated ? [id(1)] : []);
      expect(result).to.deep.include({ complete: true, terminated: c.terminated ? 1 : 0 });
      expect(t.metrics.named("OrphanedInstancesTerminated")[0]?.value).to.equal(c.terminated ? 1 : 0);
    });
  }

  it("asks EC2 only for managed running/pending instances and reads the active jobs in pages, one Query per active status", async () => {
    const t = harness();
    ec2Fleet(t.ec2Mock, [instance(1, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    await orphanedInstances(t.deps, {}, unlimited);

    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters).to.deep.equal([
      { Name: "tag:runs-fleet:managed", Values: ["true"] },
      // The stack's own fleet only: another stack's managed instances have no job in this table.
      { Name: "tag:encache:environment", Values: ["dev"] },
      { Name: "instance-state-name", Values: ["running", "pending"] },
    ]);
    const queries = t.dynamodbMock.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries.map((q) => [q.TableName, q.IndexName, q.ExpressionAttributeValues?.[":status"]?.S])).to.deep.equal([
      [TABLE, "status-instance_id-index", "queued"],
      [TABLE, "status-instance_id-index", "running"],
    ]);
  });

  it("120 candidates on two pages cost two Queries a page, not one per candidate", async () => {
    const t = harness();
    ec2Fleet(
      t.ec2Mock,
      Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)),
    );
    activeJobs(t, [id(7)]);

    const result = await orphanedInstances(t.deps, {}, unlimited);

    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.MaxResults)).to.deep.equal([ORPHAN_PAGE_SIZE, ORPHAN_PAGE_SIZE]);
    expect(t.dynamodbMock.commandCalls(QueryCommand)).to.have.length(4);
    expect(result).to.deep.include({ complete: true, pages: 2, skipped_active_job: 1, terminated: 119 });
  });

  it("when the paged read fails, asks per candidate by instance_id", async () => {
    // Prepare: the status index is unreadable; the per-instance index answers.
    const t = harness();
    ec2Fleet(t.ec2Mock, [instance(1, 600), instance(2, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    t.dynamodbMock.on(QueryCommand).callsFake((input: { IndexName?: string; ExpressionAttributeValues: Record<string, { S: string }> }) => {
      if (input.IndexName === "status-instance_id-index") throw Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" });
      return { Count: input.ExpressionAttributeValues[":instance_id"]!.S === id(2) ? 1 : 0, Items: [] };
    });
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.steps()).to.include("active_jobs_read_failed");
    expect(t.logger.withStep("active_jobs_read_failed")[0]?.fields).to.include({
      error: "ProvisionedThroughputExceededException: Rate exceeded",
      fallback: "per_candidate",
    });
    const perInstance = t.dynamodbMock
      .commandCalls(QueryCommand)
      .filter((c) => c.args[0].input.IndexName === "instance_id-index")
      .map((c) => c.args[0].input);
    expect(perInstance[0]).to.deep.include({ TableName: TABLE, Select: "COUNT" });
    expect(perInstance[0]?.FilterExpression).to.equal("#status IN (:s0, :s1)");
    expect(result).to.deep.include({ complete: true, skipped_active_job: 1, terminated: 1 });
  });

  it("terminates in batches of 50", async () => {
    const t = harness();
    ec2Fleet(
      t.ec2Mock,
      Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)),
    );
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, {}, unlimited);

    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).map((c) => c.args[0].input.InstanceIds?.length)).to.deep.equal([50, 50, 20]);
    expect(result.terminated).to.equal(120);
  });

  it("params.max_runtime_minutes overrides the configured max runtime", async () => {
    const t = harness({ maxRuntimeMinutes: 600 });
    ec2Fleet(t.ec2Mock, [instance(1, 40)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, { max_runtime_minutes: 20 }, unlimited);

    expect(result.terminated).to.equal(1);
  });

  it("a failed active-job lookup keeps only its own candidate: the confirmed orphans are terminated, the run is incomplete", async () => {
    // Prepare: the paged read fails, and so does instance 2's own lookup (throttled past the SDK's retries); 1 and 3 are idle.
    const t = harness();
    ec2Fleet(t.ec2Mock, [instance(1, 600), instance(2, 600), instance(3, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    t.dynamodbMock.on(QueryCommand).callsFake((input: { IndexName?: string; ExpressionAttributeValues: Record<string, { S: string }> }) => {
      if (input.IndexName === "status-instance_id-index" || input.ExpressionAttributeValues[":instance_id"]!.S === id(2))
        throw Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" });
      return { Count: 0, Items: [] };
    });
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(1), id(3)]);
    expect(result).to.deep.include({ complete: false, lookup_failed: 1, terminated: 2 });
    expect(t.logger.withStep("orphan_check_failed")[0]?.fields).to.include({ instance_id: id(2) });
  });

  it("out of time from the start: still judges and acts on one page, saves where the next starts, and the next run resumes there", async () => {
    // Prepare: 250 old idle instances, three pages; the budget is spent before the first check.
    const t = harness();
    const fleet = Array.from({ length: 250 }, (_, i) => instance(i + 1, 600));
    ec2Fleet(t.ec2Mock, fleet);
    activeJobs(t, []);
    // Act
    const first = await orphanedInstances(t.deps, {}, budgetOf(0));
    const second = await orphanedInstances(t.deps, {}, budgetOf(0));
    // Assess
    const tokens = t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.NextToken);
    expect(tokens).to.deep.equal([undefined, `after:${id(100)}`]);
    expect(first).to.deep.include({ complete: false, resumed: false, pages: 1, terminated: 100 });
    expect(second).to.deep.include({ complete: false, resumed: true, pages: 1, terminated: 100 });
    expect(t.metrics.named("OrphanedInstancesTerminated").map((m) => m.value)).to.deep.equal([100, 100]);
  });

  describe("the cursor (a jobs-table item)", () => {
    it("is saved after each page with the query it belongs to and a TTL, and cleared when the pass ends", async () => {
      // Prepare
      const t = harness();
      ec2Fleet(
        t.ec2Mock,
        Array.from({ length: 150 }, (_, i) => instance(i + 1, 600)),
      );
      activeJobs(t, []);
      // Act
      await orphanedInstances(t.deps, {}, unlimited);
      // Assess
      const puts = t.dynamodbMock.commandCalls(PutItemCommand).map((c) => c.args[0].input);
      expect(puts.map((p) => p.Item?.["position"]?.S)).to.deep.equal([`after:${id(100)}`, undefined]);
      expect(puts[0]).to.deep.include({ TableName: TABLE });
      expect(puts[0]?.Item).to.deep.include({
        job_id: { S: "housekeeping-cursor#orphaned_instances" },
        query: { S: JSON.stringify(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters) },
        expires_at: { N: String(NOW.getTime() / 1000 + CURSOR_TTL_SECONDS) },
      });
      expect(t.dynamodbMock.commandCalls(GetItemCommand)[0]!.args[0].input).to.deep.equal({
        TableName: TABLE,
        Key: { job_id: { S: "housekeeping-cursor#orphaned_instances" } },
        ConsistentRead: true,
      });
    });

    const ignored: Array<{ title: string; item: (query: string) => Record<string, AttributeValue> }> = [
      {
        title: "saved for another query (the filters changed)",
        item: () => ({ query: { S: "[]" }, position: { S: `after:${id(100)}` }, expires_at: { N: String(NOW.getTime() / 1000 + 60) } }),
      },
      {
        title: "past its TTL (DynamoDB has not deleted it yet)",
        item: (query) => ({ query: { S: query }, position: { S: `after:${id(100)}` }, expires_at: { N: String(NOW.getTime() / 1000) } }),
      },
      { title: "saved at the end of a pass (no position)", item: (query) => ({ query: { S: query }, expires_at: { N: String(NOW.getTime() / 1000 + 60) } }) },
    ];
    for (const c of ignored) {
      it(`a cursor ${c.title} is not used: the run starts from the top`, async () => {
        // Prepare
        const t = harness();
        ec2Fleet(
          t.ec2Mock,
          Array.from({ length: 150 }, (_, i) => instance(i + 1, 600)),
        );
        const table = activeJobs(t, []);
        table.cursors.set("housekeeping-cursor#orphaned_instances", {
          job_id: { S: "housekeeping-cursor#orphaned_instances" },
          ...c.item(JSON.stringify(FILTERS)),
        });
        // Act
        const result = await orphanedInstances(t.deps, {}, budgetOf(0));
        // Assess
        expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.NextToken).to.equal(undefined);
        expect(result).to.deep.include({ resumed: false, terminated: 100 });
      });
    }

    it("an unreadable cursor is logged and the run starts from the top", async () => {
      // Prepare
      const t = harness();
      ec2Fleet(t.ec2Mock, [instance(1, 600)]);
      activeJobs(t, []);
      t.dynamodbMock.on(GetItemCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" }));
      // Act
      const result = await orphanedInstances(t.deps, {}, unlimited);
      // Assess
      expect(result).to.deep.include({ complete: true, resumed: false, terminated: 1 });
      expect(t.logger.withStep("sweep_cursor_read_failed")[0]?.fields).to.include({ task_type: "orphaned_instances", fallback: "from_the_top" });
    });

    it("a cursor that cannot be saved is logged and the run goes on: the page's orphans are terminated", async () => {
      // Prepare
      const t = harness();
      ec2Fleet(
        t.ec2Mock,
        Array.from({ length: 150 }, (_, i) => instance(i + 1, 600)),
      );
      activeJobs(t, []);
      t.dynamodbMock.on(PutItemCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" }));
      // Act
      const result = await orphanedInstances(t.deps, {}, unlimited);
      // Assess
      expect(result).to.deep.include({ complete: true, pages: 2, terminated: 150 });
      expect(t.logger.withStep("sweep_cursor_write_failed")).to.have.length(2);
    });

    it("a saved token EC2 refuses (expired) is dropped once: the run starts from the top", async () => {
      // Prepare
      const t = harness();
      ec2Fleet(t.ec2Mock, [instance(1, 600)]);
      const table = activeJobs(t, []);
      table.cursors.set("housekeeping-cursor#orphaned_instances", {
        query: { S: JSON.stringify(FILTERS) },
        position: { S: "expired-token" },
        expires_at: { N: String(NOW.getTime() / 1000 + 60) },
      });
      // Act
      const result = await orphanedInstances(t.deps, {}, unlimited);
      // Assess
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.NextToken)).to.deep.equal(["expired-token", undefined]);
      expect(result).to.deep.include({ complete: true, terminated: 1 });
      expect(t.logger.withStep("sweep_cursor_rejected").map((e) => e.fields)).to.deep.equal([
        { step: "sweep_cursor_rejected", task_type: "orphaned_instances", error: "InvalidParameterValue: Invalid NextToken" },
      ]);
    });

    it("a resumed run whose later page fails fails the run: the token that failed was not the saved one", async () => {
      // Prepare: a live cursor at the second page; EC2 fails the third.
      const t = harness();
      ec2Fleet(
        t.ec2Mock,
        Array.from({ length: 250 }, (_, i) => instance(i + 1, 600)),
      );
      t.ec2Mock.on(DescribeInstancesCommand, { NextToken: `after:${id(200)}` }).rejects(awsError("InternalError", "EC2 is failing"));
      const table = activeJobs(t, []);
      table.cursors.set("housekeeping-cursor#orphaned_instances", {
        query: { S: JSON.stringify(FILTERS) },
        position: { S: `after:${id(100)}` },
        expires_at: { N: String(NOW.getTime() / 1000 + 60) },
      });
      // Act
      const failure = await orphanedInstances(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "EC2 is failing");
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.NextToken)).to.deep.equal([`after:${id(100)}`, `after:${id(200)}`]);
      expect(t.logger.withStep("sweep_cursor_rejected")).to.deep.equal([]);
      expect(table.cursors.get("housekeeping-cursor#orphaned_instances")?.["position"]).to.deep.equal({ S: `after:${id(200)}` });
    });

    it("a saved token refused and EC2 failing from the top too fails the run after one restart", async () => {
      // Prepare
      const t = harness();
      t.ec2Mock.on(DescribeInstancesCommand).rejects(awsError("InternalError", "EC2 is failing"));
      const table = activeJobs(t, []);
      table.cursors.set("housekeeping-cursor#orphaned_instances", {
        query: { S: JSON.stringify(FILTERS) },
        position: { S: "expired-token" },
        expires_at: { N: String(NOW.getTime() / 1000 + 60) },
      });
      // Act
      const failure = await orphanedInstances(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "EC2 is failing");
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.NextToken)).to.deep.equal(["expired-token", undefined]);
      expect(t.logger.withStep("sweep_cursor_rejected")).to.have.length(1);
    });

    it("a DescribeInstances that fails from the top fails the run (the message is retried): nothing to fall back to", async () => {
      // Prepare
      const t = harness();
      activeJobs(t, []);
      t.ec2Mock
        .on(DescribeInstancesCommand)
        .rejects(Object.assign(new Error("denied"), { name: "UnauthorizedOperation", $fault: "client", $metadata: { httpStatusCode: 403 } }));
      // Act
      const failure = await orphanedInstances(t.deps, {}, unlimited).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(failure).to.be.instanceOf(Error).with.property("message", "denied");
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(1);
    });
  });

  describe("a DescribeInstances slower than the whole budget", () => {
    /** Each run's budget, as the housekeeping Lambda has it: 60 s of invocation, a 10 s margin. */
    const TIMEOUT_MS = 60_000;
    const MARGIN_MS = 10_000;
    let clock: sinon.SinonFakeTimers;
    beforeEach(() => {
      clock = sinon.useFakeTimers({ now: NOW, toFake: ["setTimeout", "clearTimeout", "Date"] });
    });
    afterEach(() => clock.restore());

    /** One scheduled run on the fake clock: advances time until the task settles. */
    async function scheduledRun(deps: TaskDeps): Promise<TaskResult> {
      const deadline = Date.now() + TIMEOUT_MS;
      const budget = budgetFrom({ getRemainingTimeInMillis: () => deadline - Date.now() }, MARGIN_MS);
      let settled: TaskResult | undefined;
      let failed: unknown;
      orphanedInstances(deps, {}, budget).then(
        (r) => (settled = r),
        (e: unknown) => (failed = e),
      );
      while (settled === undefined && failed === undefined) await clock.tickAsync(1_000);
      if (failed !== undefined) throw failed;
      return settled!;
    }

    const cases: Array<{ title: string; latencyMs: number; pages: number }> = [
      { title: "(90 s a page, 50 s of budget)", latencyMs: 90 * 1000, pages: 4 },
      { title: "(55 s a page, just past the budget)", latencyMs: 55 * 1000, pages: 3 },
    ];
    for (const c of cases) {
      it(`sweeps the whole fleet within one run per page ${c.title}, though its first page never changes`, async () => {
        // Prepare: the first page holds only busy instances (kept on every pass); the orphans are on the pages after it.
        const t = harness();
        const busy = Array.from({ length: ORPHAN_PAGE_SIZE }, (_, i) => instance(i + 1, 600));
        const orphans = Array.from({ length: ORPHAN_PAGE_SIZE * (c.pages - 1) - 20 }, (_, i) => instance(1000 + i, 600));
        ec2Fleet(t.ec2Mock, [...busy, ...orphans], { latencyMs: c.latencyMs });
        activeJobs(
          t,
          busy.map((i) => i.InstanceId!),
        );
        // Act: as many scheduled runs as the fleet has pages, and no more.
        const results: TaskResult[] = [];
        for (let run = 0; run < c.pages; run++) results.push(await scheduledRun(t.deps));
        // Assess
        const terminated = t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((x) => x.args[0].input.InstanceIds ?? []);
        expect(new Set(terminated)).to.deep.equal(new Set(orphans.map((i) => i.InstanceId)));
        expect(results.map((r) => r.pages)).to.deep.equal(Array.from({ length: c.pages }, () => 1));
        expect(results.map((r) => r.complete)).to.deep.equal([...Array.from({ length: c.pages - 1 }, () => false), true]);
      });
    }
  });

  it("sweeps only this stack's managed instances: unmanaged, another environment's and stopped ones are never terminated", async () => {
    // Prepare: EC2 answers by the filters sent; all five are old and have no active job.
    const t = harness();
    const otherEnv = [
      { Key: "runs-fleet:managed", Value: "true" },
      { Key: "encache:environment", Value: "prod" },
    ];
    const notManaged = [
      { Key: "runs-fleet:managed", Value: "false" },
      { Key: "encache:environment", Value: "dev" },
    ];
    ec2Fleet(t.ec2Mock, [
      instance(1, 600),
      instance(2, 600, { Tags: [{ Key: "encache:environment", Value: "dev" }] }),
      instance(3, 600, { Tags: otherEnv }),
      instance(4, 600, { Tags: notManaged }),
      instance(5, 600, { State: { Name: "stopped", Code: 80 } }),
      instance(6, 600, { State: { Name: "pending", Code: 0 } }),
    ]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(1), id(6)]);
    expect(result).to.deep.include({ complete: true, candidates: 2, terminated: 2 });
  });

  it("an instance whose only job is completed is an orphan; one with a running job is kept, by the paged read and by the per-candidate fallback alike", async () => {
    for (const unreadable of [[], ["status-instance_id-index"]]) {
      // Prepare: instance 1 ran a job that completed, instance 2 runs one.
      const t = harness();
      ec2Fleet(t.ec2Mock, [instance(1, 600), instance(2, 600)]);
      t.ec2Mock.on(TerminateInstancesCommand).resolves({});
      activeJobs(t, [id(2)], [id(1)], unreadable);
      // Act
      const result = await orphanedInstances(t.deps, {}, unlimited);
      // Assess
      expect(
        t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds),
        `unreadable: ${unreadable.join()}`,
      ).to.deep.equal([id(1)]);
      expect(result).to.deep.include({ complete: true, skipped_active_job: 1, lookup_failed: 0, terminated: 1 });
    }
  });

  it("never judges an instance EC2 reports without a launch time: its age is unknown, so it is not a candidate", async () => {
    // Prepare
    const t = harness();
    ec2Fleet(t.ec2Mock, [instance(1, 600, { LaunchTime: undefined }), instance(2, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(2)]);
    expect(result).to.deep.include({ candidates: 1, terminated: 1 });
  });

  it("with no candidates (EC2's answer carries no reservations), reads no jobs and terminates nothing", async () => {
    // Prepare
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({});
    activeJobs(t, []);
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.dynamodbMock.commandCalls(QueryCommand)).to.have.length(0);
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand)).to.have.length(0);
    expect(result).to.deep.equal({ complete: true, resumed: false, pages: 1, candidates: 0, skipped_active_job: 0, lookup_failed: 0, terminated: 0 });
    expect(t.metrics.named("OrphanedInstancesTerminated")[0]?.value).to.equal(0);
  });

  it("logs each busy instance it keeps and each batch it terminates, with the cutoff and max runtime", async () => {
    // Prepare
    const t = harness({ maxRuntimeMinutes: 60 });
    ec2Fleet(t.ec2Mock, [instance(1, 600), instance(2, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, [id(1)]);
    // Act
    await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("orphan_skipped_active_job").map((e) => e.fields)).to.deep.equal([{ step: "orphan_skipped_active_job", instance_id: id(1) }]);
    expect(t.logger.withStep("orphaned_instances_terminated").map((e) => e.fields)).to.deep.equal([
      { step: "orphaned_instances_terminated", instance_ids: [id(2)], cutoff: "2025-11-25T10:50:00.000Z", max_runtime_minutes: 60 },
    ]);
  });
});
