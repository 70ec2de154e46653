import { BatchWriteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, type Instance, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { DeleteParametersCommand, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import type { TimeBudget } from "../../../functions/fleet/budget";
import { oldJobs, oldJobsCutoff } from "../../../functions/fleet/tasks/old-jobs";
import { orphanCutoff, orphanedInstances } from "../../../functions/fleet/tasks/orphaned-instances";
import { poolAudit, poolReport } from "../../../functions/fleet/tasks/pool-audit";
import { staleSsm } from "../../../functions/fleet/tasks/stale-ssm";
import type { TaskDeps } from "../../../functions/fleet/tasks/types";
import type { HousekeepingConfig } from "../../../functions/fleet/config";
import { awsError, housekeepingConfig, mockedClients, TABLE } from "../helpers/fleet-deps";

const NOW = new Date("2025-11-25T12:00:00Z");
const unlimited: TimeBudget = { exhausted: () => false };
/** A budget that runs out after `n` checks. */
const budgetOf = (n: number): TimeBudget => {
  let left = n;
  return { exhausted: () => left-- <= 0 };
};

function harness(config: Partial<HousekeepingConfig> = {}) {
  const t = mockedClients();
  const deps: TaskDeps = { ...t.clients, logger: t.logger, metrics: t.metrics, config: housekeepingConfig(config), now: () => NOW };
  return { ...t, deps };
}

const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);
const hex = (n: number) => n.toString(16).padStart(17, "0");
const id = (n: number) => `i-${hex(n)}`;

function instance(n: number, launchedMinutesAgo: number, extra: Partial<Instance> = {}): Instance {
  return { InstanceId: id(n), LaunchTime: minutesAgo(launchedMinutesAgo), State: { Name: "running", Code: 16 }, InstanceType: "c7g.large", ...extra };
}

/** Active jobs by instance id, answered by Query on the instance index. */
function activeJobs(t: ReturnType<typeof harness>, active: string[]): void {
  t.dynamodbMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, { S: string }> }) => ({
    Count: active.includes(input.ExpressionAttributeValues[":instance_id"]!.S) ? 1 : 0,
    Items: [],
  }));
}

describe("housekeeping task orphaned_instances", () => {
  it("cutoff is now − (max runtime + 10 min)", () => {
    expect(orphanCutoff(NOW, 60).toISOString()).to.equal("2025-11-25T10:50:00.000Z");
  });

  const cases: Array<{ title: string; launched: number; active: boolean; terminated: boolean }> = [
    { title: "an old instance without an active job is terminated", launched: 71, active: false, terminated: true },
    { title: "an old instance with an active job is kept", launched: 71, active: true, terminated: false },
    { title: "an instance younger than max runtime + 10 min is kept", launched: 69, active: false, terminated: false },
  ];
  for (const c of cases) {
    it(c.title, async () => {
      const t = harness({ maxRuntimeMinutes: 60 });
      t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, c.launched)] }] });
      t.ec2Mock.on(TerminateInstancesCommand).resolves({});
      activeJobs(t, c.active ? [id(1)] : []);

      const result = await orphanedInstances(t.deps, {}, unlimited);

      const terminated = t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((x) => x.args[0].input.InstanceIds ?? []);
      expect(terminated).to.deep.equal(c.terminated ? [id(1)] : []);
      expect(result).to.deep.include({ complete: true, terminated: c.terminated ? 1 : 0 });
      expect(t.metrics.named("OrphanedInstancesTerminated")[0]?.value).to.equal(c.terminated ? 1 : 0);
    });
  }

  it("asks EC2 only for managed running/pending instances and checks the jobs table by instance_id", async () => {
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 600)] }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    await orphanedInstances(t.deps, {}, unlimited);

    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters).to.deep.equal([
      { Name: "tag:runs-fleet:managed", Values: ["true"] },
      { Name: "instance-state-name", Values: ["running", "pending"] },
    ]);
    const query = t.dynamodbMock.commandCalls(QueryCommand)[0]!.args[0].input;
    expect(query).to.deep.include({ TableName: TABLE, IndexName: "instance_id-index", Select: "COUNT" });
    expect(query.FilterExpression).to.equal("#status IN (:s0, :s1)");
  });

  it("terminates in batches of 50", async () => {
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)) }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, {}, unlimited);

    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).map((c) => c.args[0].input.InstanceIds?.length)).to.deep.equal([50, 50, 20]);
    expect(result.terminated).to.equal(120);
  });

  it("params.max_runtime_minutes overrides the configured max runtime", async () => {
    const t = harness({ maxRuntimeMinutes: 600 });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 40)] }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, { max_runtime_minutes: 20 }, unlimited);

    expect(result.terminated).to.equal(1);
  });

  it("out of time: terminates the orphans it confirmed and leaves the rest for the next run", async () => {
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 600), instance(2, 600), instance(3, 600)] }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, {}, budgetOf(2));

    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(1), id(2)]);
    expect(result.complete).to.equal(false);
  });
});

describe("housekeeping task stale_ssm", () => {
  const param = (n: number, ageMinutes = 60) => ({ Name: `/runs-fleet/runners/${id(n)}/config`, LastModifiedDate: minutesAgo(ageMinutes) });
  const names = (ns: number[]) => ns.map((n) => param(n).Name);
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  /**
   * The runner path as SSM serves it: GetParametersByPath pages `size` at a time chained by a
   * NextToken that is either a cursor after the last name returned (`key`) or an index into the
   * current listing (`offset`, as moto's, which deletions shift); DeleteParameters removes.
   */
  function ssmPath(t: ReturnType<typeof harness>, params: Array<{ Name: string; LastModifiedDate: Date }>, token: "key" | "offset" = "key", size = 10) {
    const store = [...params].sort((x, y) => (x.Name < y.Name ? -1 : 1));
    t.ssmMock.on(GetParametersByPathCommand).callsFake((input: { NextToken?: string }) => {
      const after = input.NextToken;
      let start = after === undefined ? 0 : token === "offset" ? Number(after) : store.findIndex((p) => p.Name > after);
      if (start < 0) start = store.length;
      const page = store.slice(start, start + size);
      const more = start + size < store.length;
      return { Parameters: page, NextToken: more ? (token === "offset" ? String(start + size) : page.at(-1)!.Name) : undefined };
    });
    t.ssmMock.on(DeleteParametersCommand).callsFake((input: { Names: string[] }) => {
      const hit = input.Names.filter((n) => store.some((p) => p.Name === n));
      for (const n of hit) store.splice(store.findIndex((p) => p.Name === n), 1);
      return { DeletedParameters: hit, InvalidParameters: input.Names.filter((n) => !hit.includes(n)) };
    });
    return store;
  }

  function liveEc2(t: ReturnType<typeof harness>, live: Array<{ n: number; state?: string }>): void {
    t.ec2Mock.on(DescribeInstancesCommand).callsFake((input: { Filters: Array<{ Values: string[] }> }) => ({
      Reservations: [
        {
          Instances: live
            .filter((l) => input.Filters[0]!.Values.includes(id(l.n)))
            .map((l) => ({ InstanceId: id(l.n), State: { Name: l.state ?? "running" } })),
        },
      ],
    }));
  }

  const deletedNames = (t: ReturnType<typeof harness>) => t.ssmMock.commandCalls(DeleteParametersCommand).map((c) => c.args[0].input.Names ?? []);

  it("pages through the path 10 at a time, deleting each page's parameters of gone or terminated instances, then confirms with a pass that deletes nothing", async () => {
    const t = harness();
    const store = ssmPath(t, range(1, 25).map((n) => param(n)));
    liveEc2(t, [{ n: 1 }, { n: 2, state: "terminated" }, { n: 3, state: "stopped" }]);

    const result = await staleSsm(t.deps, {}, unlimited);

    const listCalls = t.ssmMock.commandCalls(GetParametersByPathCommand).map((c) => c.args[0].input);
    expect(listCalls).to.have.length(4);
    expect(listCalls[0]).to.deep.include({ Path: "/runs-fleet/runners", Recursive: true, MaxResults: 10, WithDecryption: false });
    // Page 1 keeps the running (1) and stopped (3) instances' parameters.
    expect(deletedNames(t).map((d) => d.length)).to.deep.equal([8, 10, 5]);
    expect(store.map((p) => p.Name)).to.deep.equal(names([1, 3]));
    // The confirming pass re-lists but does not re-describe instances already found live.
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(3);
    expect(result).to.deep.include({ complete: true, listed: 27, stale: 23, deleted: 23, passes: 2 });
    expect(t.metrics.named("SSMParametersDeleted")[0]?.value).to.equal(23);
  });

  it("with an offset NextToken that deletions shift (moto's), later passes pick up what a pass skipped", async () => {
    const t = harness();
    const store = ssmPath(t, range(1, 30).map((n) => param(n)), "offset");
    liveEc2(t, []);

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(store).to.deep.equal([]);
    expect(deletedNames(t)).to.deep.equal([names(range(1, 10)), names(range(21, 30)), names(range(11, 20))]);
    expect(result).to.deep.include({ complete: true, deleted: 30, passes: 3 });
  });

  it("leaves parameters younger than the minimum age, and names that are not runner configs", async () => {
    const t = harness({ ssmMinAgeMinutes: 15 });
    ssmPath(t, [param(1, 5), { Name: "/runs-fleet/runners/README", LastModifiedDate: minutesAgo(600) }, param(2, 16)]);
    liveEc2(t, []);

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(deletedNames(t).flat()).to.deep.equal([param(2).Name]);
    expect(result).to.deep.include({ complete: true, deleted: 1 });
  });

  it("a DescribeInstances batch that fails keeps its parameters and does not abort the task", async () => {
    const t = harness();
    const store = ssmPath(t, range(1, 150).map((n) => param(n)));
    t.ec2Mock
      .on(DescribeInstancesCommand)
      .rejectsOnce(awsError("InvalidInstanceID.NotFound"))
      .resolves({ Reservations: [] });

    const result = await staleSsm(t.deps, {}, unlimited);

    // One DescribeInstances per listed page; the failed one keeps its page's 10 parameters.
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(15);
    expect(store.map((p) => p.Name)).to.deep.equal(names(range(1, 10)));
    expect(result).to.deep.include({ complete: true, deleted: 140 });
    expect(t.logger.steps()).to.include("stale_ssm_describe_failed");
  });

  it("counts only what SSM reports deleted (InvalidParameters were already gone)", async () => {
    const t = harness();
    const store = ssmPath(t, [param(1), param(2)]);
    liveEc2(t, []);
    t.ssmMock.on(DeleteParametersCommand).callsFake(() => {
      store.splice(0, store.length);
      return { DeletedParameters: [param(1).Name], InvalidParameters: [param(2).Name] };
    });

    const result = await staleSsm(t.deps, {}, unlimited);

    expect(result).to.deep.include({ complete: true, deleted: 1 });
  });

  it("a budget that allows only one page still deletes that page's stale parameters, then stops incomplete", async () => {
    const t = harness();
    const store = ssmPath(t, range(1, 30).map((n) => param(n)));
    liveEc2(t, [{ n: 4 }]);

    const result = await staleSsm(t.deps, {}, budgetOf(0));

    expect(t.ssmMock.commandCalls(GetParametersByPathCommand)).to.have.length(1);
    expect(deletedNames(t).flat()).to.deep.equal(names(range(1, 10).filter((n) => n !== 4)));
    expect(store).to.have.length(21);
    expect(result).to.deep.include({ complete: false, listed: 10, stale: 9, deleted: 9 });
    expect(t.metrics.named("SSMParametersDeleted")[0]?.value).to.equal(9);
  });
});

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

describe("housekeeping task pool_audit", () => {
  const cases: Array<{ title: string; instances: Array<{ type: string; state: string; idle: boolean }>; expected: Record<string, number> }> = [
    { title: "no instances", instances: [], expected: { running: 0, stopped: 0, idle: 0, compute_cost_usd_per_hour: 0, idle_cost_usd_per_hour: 0, utilization_percent: 0 } },
    {
      title: "two busy, one idle, one stopped",
      instances: [
        { type: "c7g.large", state: "running", idle: false },
        { type: "c7g.xlarge", state: "pending", idle: false },
        { type: "c7g.large", state: "running", idle: true },
        { type: "c7g.xlarge", state: "stopped", idle: false },
      ],
      expected: { running: 3, stopped: 1, idle: 1, compute_cost_usd_per_hour: 0.29, idle_cost_usd_per_hour: 0.0725, utilization_percent: 66.67 },
    },
    {
      title: "an unpriced type costs nothing",
      instances: [{ type: "x9.huge", state: "running", idle: true }],
      expected: { running: 1, stopped: 0, idle: 1, compute_cost_usd_per_hour: 0, idle_cost_usd_per_hour: 0, utilization_percent: 0 },
    },
  ];
  for (const c of cases) {
    it(`poolReport: ${c.title}`, () => {
      expect(poolReport("p", c.instances, { "c7g.large": 0.0725, "c7g.xlarge": 0.145 })).to.deep.equal({ pool: "p", ...c.expected });
    });
  }

  it("counts each configured pool, logs the report and emits the three metrics with PoolName", async () => {
    const t = harness({ pools: ["default", "gpu"], instancePrices: { "c7g.large": 0.1, "g5.xlarge": 1 } });
    const tag = (pool: string) => ({ Tags: [{ Key: "runs-fleet:pool", Value: pool }] });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({
      Reservations: [
        {
          Instances: [
            instance(1, 5, tag("default")),
            instance(2, 5, tag("default")),
            instance(3, 5, { ...tag("gpu"), InstanceType: "g5.xlarge", State: { Name: "stopped" } }),
            instance(4, 5, { ...tag("gpu"), InstanceType: "g5.xlarge" }),
          ],
        },
      ],
    });
    activeJobs(t, [id(1)]);

    const result = await poolAudit(t.deps, {}, unlimited);

    expect(result).to.deep.equal({ complete: true, pools: 2 });
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters).to.deep.include({ Name: "tag:runs-fleet:pool", Values: ["default", "gpu"] });
    expect(t.logger.withStep("pool_audit_report").map((e) => e.fields)).to.deep.equal([
      { step: "pool_audit_report", pool: "default", running: 2, stopped: 0, idle: 1, compute_cost_usd_per_hour: 0.2, idle_cost_usd_per_hour: 0.1, utilization_percent: 50 },
      { step: "pool_audit_report", pool: "gpu", running: 1, stopped: 1, idle: 1, compute_cost_usd_per_hour: 1, idle_cost_usd_per_hour: 1, utilization_percent: 0 },
    ]);
    expect(t.metrics.emitted.map((m) => `${m.name}{${m.dimensions.PoolName}}=${m.value}${m.unit === "Percent" ? "%" : ""}`)).to.deep.equal([
      "PoolIdleCost{default}=0.1",
      "PoolComputeCost{default}=0.2",
      "PoolUtilization{default}=50%",
      "PoolIdleCost{gpu}=1",
      "PoolComputeCost{gpu}=1",
      "PoolUtilization{gpu}=0%",
    ]);
  });

  it("warns about a running type missing from the price table", async () => {
    const t = harness({ pools: ["default"], instancePrices: {} });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 5, { Tags: [{ Key: "runs-fleet:pool", Value: "default" }] })] }] });
    activeJobs(t, []);

    await poolAudit(t.deps, {}, unlimited);

    expect(t.logger.withStep("pool_audit_price_missing")[0]?.fields).to.include({ pool: "default", instance_type: "c7g.large" });
  });

  it("with no pools configured, calls nothing", async () => {
    const t = harness({ pools: [] });

    const result = await poolAudit(t.deps, {}, unlimited);

    expect(result).to.deep.equal({ complete: true, pools: 0 });
    expect(t.ec2Mock.calls()).to.have.length(0);
  });

  it("out of time: reports the pools counted so far", async () => {
    const t = harness({ pools: ["a", "b"] });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });

    const result = await poolAudit(t.deps, {}, budgetOf(1));

    expect(result).to.deep.equal({ complete: false, pools: 1 });
  });
});
