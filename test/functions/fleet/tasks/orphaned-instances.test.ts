import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { orphanCutoff, orphanedInstances } from "../../../../functions/fleet/tasks/orphaned-instances";
import { TABLE } from "../../helpers/fleet-deps";
import { NOW, unlimited, budgetOf, harness, id, instance, activeJobs } from "../../helpers/fleet-tasks";

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

  it("asks EC2 only for managed running/pending instances and reads the active jobs in pages, one Query per active status", async () => {
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 600)] }] });
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

  it("120 candidates cost two Queries, not 120", async () => {
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)) }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, [id(7)]);

    const result = await orphanedInstances(t.deps, {}, unlimited);

    expect(t.dynamodbMock.commandCalls(QueryCommand)).to.have.length(2);
    expect(result).to.deep.include({ skipped_active_job: 1, terminated: 119 });
  });

  it("when the paged read fails, asks per candidate by instance_id", async () => {
    // Prepare: the status index is unreadable; the per-instance index answers.
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 600), instance(2, 600)] }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    t.dynamodbMock.on(QueryCommand).callsFake((input: { IndexName?: string; ExpressionAttributeValues: Record<string, { S: string }> }) => {
      if (input.IndexName === "status-instance_id-index") throw Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" });
      return { Count: input.ExpressionAttributeValues[":instance_id"]!.S === id(2) ? 1 : 0, Items: [] };
    });
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.logger.steps()).to.include("active_jobs_read_failed");
    const perInstance = t.dynamodbMock.commandCalls(QueryCommand).filter((c) => c.args[0].input.IndexName === "instance_id-index").map((c) => c.args[0].input);
    expect(perInstance[0]).to.deep.include({ TableName: TABLE, Select: "COUNT" });
    expect(perInstance[0]?.FilterExpression).to.equal("#status IN (:s0, :s1)");
    expect(result).to.deep.include({ complete: true, skipped_active_job: 1, terminated: 1 });
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

  it("a failed active-job lookup keeps only its own candidate: the confirmed orphans are terminated, the run is incomplete", async () => {
    // Prepare: the paged read fails, and so does instance 2's own lookup (throttled past the SDK's retries); 1 and 3 are idle.
    const t = harness();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [instance(1, 600), instance(2, 600), instance(3, 600)] }] });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    t.dynamodbMock.on(QueryCommand).callsFake((input: { IndexName?: string; ExpressionAttributeValues: Record<string, { S: string }> }) => {
      if (input.IndexName === "status-instance_id-index" || input.ExpressionAttributeValues[":instance_id"]!.S === id(2)) throw Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" });
      return { Count: 0, Items: [] };
    });
    // Act
    const result = await orphanedInstances(t.deps, {}, unlimited);
    // Assess
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(1), id(3)]);
    expect(result).to.deep.include({ complete: false, lookup_failed: 1, terminated: 2 });
    expect(t.logger.withStep("orphan_check_failed")[0]?.fields).to.include({ instance_id: id(2) });
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
