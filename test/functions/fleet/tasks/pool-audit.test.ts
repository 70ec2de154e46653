import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { poolAudit, poolReport } from "../../../../functions/fleet/tasks/pool-audit";
import { ec2Fleet } from "../../helpers/fleet-fakes";
import { unlimited, budgetOf, harness, id, instance, activeJobs, FLEET_TAGS } from "../../helpers/fleet-tasks";

/** An instance of the stack's fleet in `pool`: the managed and environment tags come first, as EC2 may list them. */
const tag = (pool: string) => ({ Tags: [...FLEET_TAGS, { Key: "runs-fleet:pool", Value: pool }] });

describe("housekeeping task pool_audit", () => {
  const cases: Array<{ title: string; instances: Array<{ type: string; state: string; idle: boolean }>; expected: Record<string, number> }> = [
    {
      title: "no instances",
      instances: [],
      expected: { running: 0, stopped: 0, idle: 0, compute_cost_usd_per_hour: 0, idle_cost_usd_per_hour: 0, utilization_percent: 0 },
    },
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
    ec2Fleet(t.ec2Mock, [
      instance(1, 5, tag("default")),
      instance(2, 5, tag("default")),
      instance(3, 5, { ...tag("gpu"), InstanceType: "g5.xlarge", State: { Name: "stopped" } }),
      instance(4, 5, { ...tag("gpu"), InstanceType: "g5.xlarge" }),
    ]);
    activeJobs(t, [id(1)]);

    const result = await poolAudit(t.deps, {}, unlimited);

    expect(result).to.deep.equal({ complete: true, resumed: false, pools: 2 });
    // One listing per pool: the unit of work a run completes before its budget is checked.
    expect(
      t.ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.Filters?.find((f) => f.Name === "tag:runs-fleet:pool")?.Values),
    ).to.deep.equal([["default"], ["gpu"]]);
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters).to.deep.include({ Name: "tag:encache:environment", Values: ["dev"] });
    expect(t.logger.withStep("pool_audit_report").map((e) => e.fields)).to.deep.equal([
      {
        step: "pool_audit_report",
        pool: "default",
        running: 2,
        stopped: 0,
        idle: 1,
        compute_cost_usd_per_hour: 0.2,
        idle_cost_usd_per_hour: 0.1,
        utilization_percent: 50,
      },
      {
        step: "pool_audit_report",
        pool: "gpu",
        running: 1,
        stopped: 1,
        idle: 1,
        compute_cost_usd_per_hour: 1,
        idle_cost_usd_per_hour: 1,
        utilization_percent: 0,
      },
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
    ec2Fleet(t.ec2Mock, [instance(1, 5, tag("default"))]);
    activeJobs(t, []);

    await poolAudit(t.deps, {}, unlimited);

    expect(t.logger.withStep("pool_audit_price_missing")[0]?.fields).to.include({ pool: "default", instance_type: "c7g.large" });
  });

  it("with no pools configured, calls nothing", async () => {
    const t = harness({ pools: [] });

    const result = await poolAudit(t.deps, {}, unlimited);

    expect(result).to.deep.equal({ complete: true, resumed: false, pools: 0 });
    expect(t.ec2Mock.calls()).to.have.length(0);
  });

  it("out of time: reports the pools counted so far", async () => {
    const t = harness({ pools: ["a", "b"] });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });

    const result = await poolAudit(t.deps, {}, budgetOf(0));

    expect(result).to.deep.equal({ complete: false, resumed: false, pools: 1 });
  });

  it("a listing slower than the whole budget still reports a pool per run, each run the next, so N pools are reported within N runs", async () => {
    // Prepare: three pools; every run is out of time after its first pool; the cursor lives in the jobs table.
    const t = harness({ pools: ["a", "b", "c"], instancePrices: {} });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    const table = activeJobs(t, []);
    const spent = { exhausted: () => true };
    // Act: four scheduled runs
    const results = [];
    for (let run = 0; run < 4; run++) results.push(await poolAudit(t.deps, {}, spent));
    // Assess: a, b, c in turn, then from the top again
    expect(t.logger.withStep("pool_audit_report").map((e) => e.fields.pool)).to.deep.equal(["a", "b", "c", "a"]);
    expect(results.map((r) => [r.complete, r.resumed])).to.deep.equal([
      [false, false],
      [false, true],
      [true, true],
      [false, false],
    ]);
    expect([...table.cursors.keys()]).to.deep.equal(["housekeeping-cursor#pool_audit"]);
  });

  it("a cursor saved for another pool list is not used: the run starts with the first pool", async () => {
    // Prepare
    const t = harness({ pools: ["a", "b"], instancePrices: {} });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    const table = activeJobs(t, []);
    table.cursors.set("housekeeping-cursor#pool_audit", {
      query: { S: JSON.stringify(["x", "b"]) },
      position: { S: "b" },
      expires_at: { N: String(Math.floor(Date.now() / 1000) + 3600) },
    });
    // Act
    const result = await poolAudit(t.deps, {}, { exhausted: () => true });
    // Assess
    expect(result).to.deep.include({ resumed: false, pools: 1 });
    expect(t.logger.withStep("pool_audit_report").map((e) => e.fields.pool)).to.deep.equal(["a"]);
  });

  it("counts only the stack's managed instances of the configured pools, stopping ones as stopped", async () => {
    // Prepare: EC2 answers by the filters sent.
    const t = harness({ pools: ["default"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [
      instance(1, 5, tag("default")),
      instance(2, 5, { ...tag("default"), State: { Name: "stopping" } }),
      instance(3, 5, { ...tag("default"), State: { Name: "stopped" } }),
      instance(4, 5, { ...tag("default"), State: { Name: "pending" } }),
      instance(5, 5, { ...tag("default"), State: { Name: "terminated" } }),
      instance(6, 5, { ...tag("default"), State: { Name: "shutting-down" } }),
      instance(7, 5, tag("gpu")),
      instance(8, 5, {
        Tags: [
          { Key: "runs-fleet:pool", Value: "default" },
          { Key: "encache:environment", Value: "dev" },
        ],
      }),
      instance(9, 5, {
        Tags: [
          { Key: "runs-fleet:managed", Value: "true" },
          { Key: "encache:environment", Value: "prod" },
          { Key: "runs-fleet:pool", Value: "default" },
        ],
      }),
    ]);
    activeJobs(t, [id(1)]);
    // Act
    await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("pool_audit_report")[0]?.fields).to.deep.equal({
      step: "pool_audit_report",
      pool: "default",
      running: 2,
      stopped: 2,
      idle: 1,
      compute_cost_usd_per_hour: 0.2,
      idle_cost_usd_per_hour: 0.1,
      utilization_percent: 50,
    });
  });

  it("an instance whose jobs all completed is idle; one with a running job is busy", async () => {
    // Prepare
    const t = harness({ pools: ["default"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [instance(1, 5, tag("default")), instance(2, 5, tag("default"))]);
    activeJobs(t, [id(1)], [id(2)]);
    // Act
    await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("pool_audit_report")[0]?.fields).to.include({ running: 2, idle: 1, utilization_percent: 50 });
    const asked = t.dynamodbMock.commandCalls(QueryCommand).map((c) => c.args[0].input.ExpressionAttributeValues?.[":instance_id"]?.S);
    expect(asked).to.deep.equal([id(1), id(2)]);
  });

  it("warns about a missing price only for a running instance: a stopped unpriced one and a running priced one are not warned about", async () => {
    // Prepare
    const t = harness({ pools: ["default"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [
      instance(1, 5, tag("default")),
      instance(2, 5, { ...tag("default"), InstanceType: "m5.large", State: { Name: "stopped" } }),
      instance(3, 5, { ...tag("default"), InstanceType: "g5.xlarge", State: { Name: "pending" } }),
    ]);
    activeJobs(t, []);
    // Act
    await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("pool_audit_price_missing").map((e) => e.fields)).to.deep.equal([
      { step: "pool_audit_price_missing", pool: "default", instance_type: "g5.xlarge" },
    ]);
  });

  it("with no pools configured, logs pool_audit_no_pools", async () => {
    const t = harness({ pools: [] });

    await poolAudit(t.deps, {}, unlimited);

    expect(t.logger.steps()).to.deep.equal(["pool_audit_no_pools"]);
  });

  it("an answer without reservations reports each pool empty", async () => {
    // Prepare
    const t = harness({ pools: ["default"] });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({});
    // Act
    const result = await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(result).to.deep.equal({ complete: true, resumed: false, pools: 1 });
    expect(t.logger.withStep("pool_audit_report")[0]?.fields).to.include({ pool: "default", running: 0, stopped: 0, idle: 0 });
  });

  it("an instance counts only in the pool its pool tag names, even when another of its tags has a pool's name", async () => {
    // Prepare: a pool named like the environment ("dev"); the gpu instance's environment tag is dev too.
    const t = harness({ pools: ["dev", "gpu"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [instance(1, 5, tag("dev")), instance(2, 5, tag("gpu"))]);
    activeJobs(t, []);
    // Act
    await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("pool_audit_report").map((e) => [e.fields.pool, e.fields.running])).to.deep.equal([
      ["dev", 1],
      ["gpu", 1],
    ]);
  });

  it("a pool named twice in config is one pool: reported once, its instances counted once", async () => {
    // Prepare
    const t = harness({ pools: ["default", "default"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [instance(1, 5, tag("default"))]);
    activeJobs(t, []);
    // Act
    const result = await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(result).to.deep.equal({ complete: true, resumed: false, pools: 1 });
    expect(t.logger.withStep("pool_audit_report").map((e) => [e.fields.pool, e.fields.running])).to.deep.equal([["default", 1]]);
  });

  it('an instance listed without a type is reported as type "unknown" in the missing-price warning', async () => {
    // Prepare
    const t = harness({ pools: ["default"], instancePrices: { "c7g.large": 0.1 } });
    ec2Fleet(t.ec2Mock, [instance(1, 5, { ...tag("default"), InstanceType: undefined })]);
    activeJobs(t, []);
    // Act
    await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.withStep("pool_audit_price_missing").map((e) => e.fields.instance_type)).to.deep.equal(["unknown"]);
  });

  it("counts only instances tagged with this pool, whatever EC2 answers beyond its filter", async () => {
    // Prepare: an EC2 answer that ignores the filter: another pool's instance, this pool's name under another tag key, an untagged one.
    const t = harness({ pools: ["default"], instancePrices: { "c7g.large": 0.1 } });
    t.ec2Mock.on(DescribeInstancesCommand).resolves({
      Reservations: [
        {
          Instances: [
            instance(1, 5, tag("default")),
            instance(2, 5, tag("gpu")),
            instance(3, 5, { Tags: [...FLEET_TAGS, { Key: "Name", Value: "default" }] }),
            instance(4, 5, { Tags: undefined }),
          ],
        },
      ],
    });
    activeJobs(t, []);
    // Act
    const result = await poolAudit(t.deps, {}, unlimited);
    // Assess
    expect(result).to.deep.equal({ complete: true, resumed: false, pools: 1 });
    expect(t.logger.withStep("pool_audit_report").map((e) => e.fields)).to.deep.equal([
      {
        step: "pool_audit_report",
        pool: "default",
        running: 1,
        stopped: 0,
        idle: 1,
        compute_cost_usd_per_hour: 0.1,
        idle_cost_usd_per_hour: 0.1,
        utilization_percent: 0,
      },
    ]);
  });
});
