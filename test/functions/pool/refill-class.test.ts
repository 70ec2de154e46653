import { DescribeInstancesCommand, EC2ServiceException, RunInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageBatchCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { clientToken, leaseKey, refillClass } from "../../../functions/pool/refill-class";
import { poolStatements } from "../../../infra/parts/pool";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { POOL_TAG } from "../helpers/pool-fakes";
import { arrange, pooled } from "../helpers/pool-refill";

describe("pool refill", () => {
  it("launches the whole deficit from the class's launch template, tagged, with an idempotency token, and advertises each", async () => {
    const t = arrange([], 3);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 0, started: [] });
    const run = t.ec2.mock.commandCalls(RunInstancesCommand)[0]?.args[0].input;
    expect(run).to.deep.include({ LaunchTemplate: { LaunchTemplateId: "lt-0123", Version: "$Default" }, MinCount: 1, MaxCount: 3, ClientToken: clientToken("run-1", "gpu-small") });
    expect(run?.TagSpecifications?.map((s) => s.ResourceType)).to.deep.equal(["instance", "volume", "network-interface"]);
    expect(run?.TagSpecifications?.[0]?.Tags).to.deep.equal([{ Key: "encache:pool", Value: POOL_TAG }, { Key: "encache:pool-class", Value: "gpu-small" }]);
    const adverts = t.adverts();
    expect(adverts.map((a) => a.instance_id)).to.deep.equal(out.kind === "refilled" ? out.launched : []);
    expect(adverts[0]).to.deep.include({ resource_class: "gpu-small", instance_type: "g5.xlarge", usage_class: "on-demand", cpu: 4, memory_mib: 16384 });
    expect(t.metrics.count("PoolInstancesLaunched")).to.equal(3);
  });

  it("starts stopped unclaimed instances before launching, and counts only live unclaimed ones", async () => {
    const running = pooled("running");
    const claimedRunning = pooled("running");
    const stopped = [pooled("stopped"), pooled("stopped")];
    const otherClass = pooled("running", "cpu-small");
    const t = arrange([running, claimedRunning, ...stopped, otherClass], 4);
    t.table.items.set(claimedRunning.id, { owner: "wf-1", expiresAt: Math.floor(t.clock.now / 1000) + 60 });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ liveUnclaimed: 1, started: stopped.map((s) => s.id) });
    expect(t.ec2.mock.commandCalls(StartInstancesCommand)[0]?.args[0].input.InstanceIds).to.deep.equal(stopped.map((s) => s.id));
    expect(t.ec2.runs[0]?.MaxCount).to.equal(1);
    expect(t.logger.withStep("pool_counted")[0]?.fields).to.include({ size: 4, live_unclaimed: 1, stopped_unclaimed: 2, claimed: 1, deficit: 3 });
    // Re-advertises the idle running one (adverts expire) plus the 2 started and 1 launched.
    expect(t.adverts()).to.have.length(4);
    expect(t.adverts().map((a) => a.instance_id)).to.not.include(claimedRunning.id);
  });

  it("does nothing but re-advertise when the class is full", async () => {
    const t = arrange([pooled("running"), pooled("pending"), pooled("running")], 3);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.ec2.calls("RunInstancesCommand")).to.equal(0);
    expect(t.ec2.calls("StartInstancesCommand")).to.equal(0);
    expect(t.adverts()).to.have.length(3);
  });

  it("an expired claim lock counts as unclaimed", async () => {
    const i = pooled("running");
    const t = arrange([i], 1);
    t.table.items.set(i.id, { owner: "wf-1", expiresAt: Math.floor(t.clock.now / 1000) - 1 });

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.ec2.calls("RunInstancesCommand")).to.equal(0);
  });

  it("skips when another run holds the class's lease, and releases its own lease when done", async () => {
    const t = arrange([], 2);
    t.table.items.set(leaseKey("gpu-small"), { owner: "run-0", expiresAt: Math.floor(t.clock.now / 1000) + 60 });

    expect(await refillClass(t.deps, t.config.classes[0]!, "run-1")).to.deep.equal({ kind: "lease_held" });
    expect(t.ec2.mock.calls()).to.have.length(0);
    expect(t.metrics.count("RefillSkipped")).to.equal(1);
    expect(t.logger.withStep("refill_lease_held")[0]?.fields).to.include({ run_id: "run-1", holder: "run-0" });

    t.table.items.delete(leaseKey("gpu-small"));
    await refillClass(t.deps, t.config.classes[0]!, "run-2");
    expect(t.table.items.has(leaseKey("gpu-small")), "lease released").to.equal(false);
  });

  it("a lease write whose response was lost (the retry failed the condition on its own lease) refills instead of skipping, then releases the lease", async () => {
    const t = arrange([], 2);
    t.table.loseResponses("PutItemCommand");

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 0 });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([2]);
    expect(t.metrics.count("RefillSkipped")).to.equal(0);
    expect(t.metrics.count("RefillLeasesRecovered")).to.equal(1);
    expect(t.logger.withStep("refill_lease_recovered")[0]?.fields).to.include({ resource_class: "gpu-small", run_id: "run-1" });
    expect(t.table.items.has(leaseKey("gpu-small")), "lease released").to.equal(false);
  });

  it("a redelivered refill message whose earlier delivery died holding the lease goes on (the lease's owner is the message id)", async () => {
    const t = arrange([], 1);
    t.table.items.set(leaseKey("gpu-small"), { owner: "run-1", expiresAt: Math.floor(t.clock.now / 1000) + 60 });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out.kind).to.equal("refilled");
    expect(t.logger.withStep("refill_lease_held")).to.have.length(0);
  });

  it("a lease release whose response was lost does not fail the run", async () => {
    const t = arrange([pooled("running")], 1);
    t.table.loseResponses("DeleteItemCommand");

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", advertised: 1 });
    expect(t.table.items.has(leaseKey("gpu-small"))).to.equal(false);
  });

  it("releases the lease when EC2 fails, and propagates the error", async () => {
    const t = arrange([], 2);
    t.ec2.mock.on(RunInstancesCommand).rejects(new Error("InsufficientInstanceCapacity"));

    let error: unknown;
    try {
      await refillClass(t.deps, t.config.classes[0]!, "run-1");
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).to.equal("InsufficientInstanceCapacity");
    expect(t.table.items.has(leaseKey("gpu-small"))).to.equal(false);
  });

  it("two overlapping runs never exceed the size: the second sees the lease, or the first run's instances", async () => {
    const t = arrange([], 2);
    const [a, b] = await Promise.all([refillClass(t.deps, t.config.classes[0]!, "run-a"), refillClass(t.deps, t.config.classes[0]!, "run-b")]);
    await refillClass(t.deps, t.config.classes[0]!, "run-c");

    expect([a.kind, b.kind].sort()).to.deep.equal(["lease_held", "refilled"]);
    expect(t.ec2.instances.filter((i) => i.tags?.["encache:pool-class"] === "gpu-small")).to.have.length(2);
  });

  it("request-tags every resource type the tag-conditioned RunInstances grant covers, with the grant's tag value", async () => {
    const t = arrange([], 2);
    const grant = poolStatements({
      tableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/pool-claims",
      poolQueueArns: [],
      refillDlqArn: "arn:aws:sqs:us-east-1:123456789012:pool-refill-dlq",
      region: "us-east-1",
      accountId: "123456789012",
      instanceTypes: ["g5.xlarge"],
      poolTag: POOL_TAG,
      launchTemplateArns: ["arn:aws:ec2:us-east-1:123456789012:launch-template/lt-0123"],
      subnetId: "subnet-1",
      securityGroupArn: "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1",
      instanceRoleArn: "arn:aws:iam::123456789012:role/pool-instance",
      hasSpotClass: false,
      amiParameters: [],
    }).refill.find((s) => s.Sid === "RunTaggedPoolInstances");
    const conditioned = Object.entries((grant?.Condition?.["StringEquals"] ?? {}) as Record<string, string>).filter(([k]) => k.startsWith("aws:RequestTag/"));
    const resources = ([] as unknown[]).concat(grant?.Resource).map((arn) => /:([a-z-]+)\/\*$/.exec(String(arn))?.[1]);
    expect(conditioned, "the grant conditions on a request tag").to.have.length.greaterThan(0);
    expect(resources).to.not.include(undefined);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    const specs = t.ec2.runs[0]?.TagSpecifications ?? [];
    for (const type of resources) {
      const tags = Object.fromEntries((specs.find((s) => s.ResourceType === type)?.Tags ?? []).map((tag) => [tag.Key, tag.Value]));
      for (const [key, value] of conditioned) expect(tags[key.slice("aws:RequestTag/".length)], `${type} carries ${key}`).to.equal(value);
    }
  });

  it("the idempotency token depends on the run and class only, not on how many are launched", async () => {
    const t = arrange([], 3);
    await refillClass(t.deps, t.config.classes[0]!, "run-1");
    t.ec2.instances.splice(0, 1); // the retry sees a different deficit
    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([3, 1]);
    expect(t.ec2.runs.map((r) => r.ClientToken)).to.deep.equal([clientToken("run-1", "gpu-small"), clientToken("run-1", "gpu-small")]);
  });

  it("treats IdempotentParameterMismatch (a redelivered run after a partial launch) as already launched", async () => {
    const t = arrange([pooled("running")], 3);
    t.ec2.mock
      .on(RunInstancesCommand)
      .rejects(new EC2ServiceException({ name: "IdempotentParameterMismatch", message: "token reused", $fault: "client", $metadata: { httpStatusCode: 400 } }));

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 1, launched: [], advertised: 1 });
    expect(t.logger.withStep("pool_launch_already_requested")[0]?.fields).to.include({ resource_class: "gpu-small", run_id: "run-1", requested: 2 });
    expect(t.metrics.count("RefillLaunchTokenReused")).to.equal(1);
    expect(t.table.items.has(leaseKey("gpu-small")), "lease released").to.equal(false);
  });

  it("a redelivered refill message that meets IdempotentParameterMismatch is acknowledged, not retried into the DLQ", async () => {
    const t = arrange([], 2);
    t.ec2.mock
      .on(RunInstancesCommand)
      .rejects(new EC2ServiceException({ name: "IdempotentParameterMismatch", message: "token reused", $fault: "client", $metadata: { httpStatusCode: 400 } }));

    const response = await createRefillHandler(t.deps)(sqsEvent(sqsRecord({ resource_class: "gpu-small", scheduled_time: "x" })));

    expect(response.batchItemFailures).to.deep.equal([]);
  });

  it("advertises with one SendMessageBatch per 10 instances, never one SendMessage each", async () => {
    const t = arrange(Array.from({ length: 12 }, () => pooled("running")), 12);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input.Entries?.length)).to.deep.equal([10, 2]);
    expect(t.sqsMock.commandCalls(SendMessageCommand)).to.have.length(0);
    expect(t.adverts()).to.have.length(12);
    expect(t.metrics.count("AdvertsPublished")).to.equal(12);
  });

  it("fails the run, after releasing the lease, when SQS rejects an advert in the batch", async () => {
    const t = arrange([pooled("running"), pooled("running")], 2);
    t.sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [{ Id: "0", MessageId: "x", MD5OfMessageBody: "" }], Failed: [{ Id: "1", Code: "InternalError", SenderFault: false }] });

    let error: unknown;
    try {
      await refillClass(t.deps, t.config.classes[0]!, "run-1");
    } catch (e) {
      error = e;
    }

    expect((error as Error).message).to.match(/rejected 1 advert.*InternalError/);
    expect(t.metrics.count("AdvertsPublished")).to.equal(1);
    expect(t.table.items.has(leaseKey("gpu-small"))).to.equal(false);
  });

  it("stops paging DescribeInstances when EC2 repeats the page token", async () => {
    const t = arrange([], 0);
    let pages = 0;
    // Bounded here so the test fails instead of hanging if the loop were unbounded.
    t.ec2.mock.on(DescribeInstancesCommand).callsFake(() => ({ Reservations: [], ...(++pages < 50 ? { NextToken: "same" } : {}) }));

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(pages).to.equal(2);
  });
});
