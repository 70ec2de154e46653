import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { orphanCutoff, orphanedInstances } from "../../../../functions/fleet/tasks/orphaned-instances";
import { TABLE } from "../../helpers/fleet-deps";
import { ec2Fleet } from "../../helpers/fleet-fakes";
import { NOW, unlimited, budgetOf, harness, id, instance, activeJobs } from "../../helpers/fleet-tasks";

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

  it("120 candidates cost two Queries, not 120", async () => {
    const t = harness();
    ec2Fleet(t.ec2Mock, Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)));
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, [id(7)]);

    const result = await orphanedInstances(t.deps, {}, unlimited);

    expect(t.dynamodbMock.commandCalls(QueryCommand)).to.have.length(2);
    expect(result).to.deep.include({ skipped_active_job: 1, terminated: 119 });
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
    expect(t.logger.withStep("active_jobs_read_failed")[0]?.fields).to.include({ error: "ProvisionedThroughputExceededException: Rate exceeded", fallback: "per_candidate" });
    const perInstance = t.dynamodbMock.commandCalls(QueryCommand).filter((c) => c.args[0].input.IndexName === "instance_id-index").map((c) => c.args[0].input);
    expect(perInstance[0]).to.deep.include({ TableName: TABLE, Select: "COUNT" });
    expect(perInstance[0]?.FilterExpression).to.equal("#status IN (:s0, :s1)");
    expect(result).to.deep.include({ complete: true, skipped_active_job: 1, terminated: 1 });
  });

  it("terminates in batches of 50", async () => {
    const t = harness();
    ec2Fleet(t.ec2Mock, Array.from({ length: 120 }, (_, i) => instance(i + 1, 600)));
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
    ec2Fleet(t.ec2Mock, [instance(1, 600), instance(2, 600), instance(3, 600)]);
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    activeJobs(t, []);

    const result = await orphanedInstances(t.deps, {}, budgetOf(2));

    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds)).to.deep.equal([id(1), id(2)]);
    expect(result.complete).to.equal(false);
  });

  it("sweeps only this stack's managed instances: unmanaged, another environment's and stopped ones are never terminated", async () => {
    // Prepare: EC2 answers by the filters sent; all five are old and have no active job.
    const t = harness();
    const otherEnv = [{ Key: "runs-fleet:managed", Value: "true" }, { Key: "encache:environment", Value: "prod" }];
    const notManaged = [{ Key: "runs-fleet:managed", Value: "false" }, { Key: "encache:environment", Value: "dev" }];
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
      expect(t.ec2Mock.commandCalls(TerminateInstancesCommand).flatMap((c) => c.args[0].input.InstanceIds), `unreadable: ${unreadable.join()}`).to.deep.equal([id(1)]);
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
    expect(t.dynamodbMock.calls()).to.have.length(0);
    expect(t.ec2Mock.commandCalls(TerminateInstancesCommand)).to.have.length(0);
    expect(result).to.deep.equal({ complete: true, candidates: 0, skipped_active_job: 0, lookup_failed: 0, terminated: 0 });
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
