import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { poolAudit, poolReport } from "../../../../functions/fleet/tasks/pool-audit";
import { unlimited, budgetOf, harness, id, instance, activeJobs } from "../../helpers/fleet-tasks";

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
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)[0]!.args[0].input.Filters).to.deep.include({ Name: "tag:encache:environment", Values: ["dev"] });
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
