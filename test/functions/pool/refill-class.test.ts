import { BatchGetItemCommand, DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, EC2ServiceException, RunInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageBatchCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { clientToken, leaseKey, refillClass } from "../../../functions/pool/refill-class";
import { poolStatements } from "../../../infra/parts/pool";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { POOL_TAG, poolTags, TABLE } from "../helpers/pool-fakes";
import { arrange, pooled } from "../helpers/pool-refill";

describe("pool refill", () => {
  it("launches the whole deficit from the class's launch template, tagged, with an idempotency token, and advertises each", async () => {
    const t = arrange([], 3);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 0, started: [] });
    const run = t.ec2.mock.commandCalls(RunInstancesCommand)[0]?.args[0].input;
    expect(run).to.deep.include({
      LaunchTemplate: { LaunchTemplateId: "lt-0123", Version: "$Default" },
      MinCount: 1,
      MaxCount: 3,
      ClientToken: clientToken("run-1", "gpu-small"),
    });
    expect(run?.TagSpecifications?.map((s) => s.ResourceType)).to.deep.equal(["instance", "volume", "network-interface"]);
    expect(run?.TagSpecifications?.[0]?.Tags).to.deep.equal([
      { Key: "encache:pool", Value: POOL_TAG },
      { Key: "encache:pool-class", Value: "gpu-small" },
    ]);
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

  it("a failed run whose lease release also fails throws the run's error, and logs the release's", async () => {
    // Prepare
    const t = arrange([], 2);
    t.ec2.mock.on(RunInstancesCommand).rejects(new Error("InsufficientInstanceCapacity"));
    t.table.mock
      .on(DeleteItemCommand)
      .rejects(Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: { httpStatusCode: 400 } }));

    // Act
    const error = await refillClass({ ...t.deps, resend: { rounds: 1, baseDelayMs: 0, sleep: async () => undefined } }, t.config.classes[0]!, "run-1").then(
      () => undefined,
      (e: unknown) => e,
    );

    // Assess
    expect(error).to.be.instanceOf(Error).with.property("message", "InsufficientInstanceCapacity");
    expect(t.logger.withStep("refill_lease_release_failed").map((e) => e.fields)).to.deep.equal([
      { step: "refill_lease_release_failed", lease: leaseKey("gpu-small"), run_id: "run-1", error: "ProvisionedThroughputExceededException: throttled" },
    ]);
    expect(t.metrics.count("RefillLeaseReleaseFailed")).to.equal(1);
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
    const t = arrange(
      Array.from({ length: 12 }, () => pooled("running")),
      12,
    );

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input.Entries?.length)).to.deep.equal([10, 2]);
    expect(t.sqsMock.commandCalls(SendMessageCommand)).to.have.length(0);
    expect(t.adverts()).to.have.length(12);
    expect(t.metrics.count("AdvertsPublished")).to.equal(12);
  });

  it("fails the run, after releasing the lease, when SQS rejects an advert in the batch", async () => {
    const t = arrange([pooled("running"), pooled("running")], 2);
    t.sqsMock
      .on(SendMessageBatchCommand)
      .resolves({ Successful: [{ Id: "0", MessageId: "x", MD5OfMessageBody: "" }], Failed: [{ Id: "1", Code: "InternalError", SenderFault: false }] });

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

  it("starts only as many stopped instances as the shortfall needs, and launches none", async () => {
    const running = pooled("running");
    const stopped = [pooled("stopped"), pooled("stopped"), pooled("stopped")];
    const t = arrange([running, ...stopped], 2);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.equal({ kind: "refilled", liveUnclaimed: 1, started: [stopped[0]!.id], launched: [], advertised: 2 });
    expect(t.ec2.started).to.deep.equal([stopped[0]!.id]);
    expect(t.ec2.calls("RunInstancesCommand")).to.equal(0);
    expect(t.adverts().map((a) => a.instance_id)).to.deep.equal([running.id, stopped[0]!.id]);
    expect(t.metrics.count("PoolInstancesStarted")).to.equal(1);
    expect(t.logger.withStep("pool_instances_started")[0]?.fields).to.deep.include({ resource_class: "gpu-small", instance_ids: [stopped[0]!.id] });
  });

  it("holds its class's own lease (lease#refill#<class>, owned by the run, for the lease time) and releases it only as its owner", async () => {
    const t = arrange([pooled("running")], 1);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    const nowSeconds = Math.floor(t.clock.now / 1000);
    expect(t.table.mock.commandCalls(PutItemCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        TableName: TABLE,
        Item: { instance_id: { S: "lease#refill#gpu-small" }, owner: { S: "run-1" }, expires_at: { N: String(nowSeconds + 120) } },
        ConditionExpression: "attribute_not_exists(#k) OR #e < :now",
        ExpressionAttributeNames: { "#k": "instance_id", "#e": "expires_at" },
        ExpressionAttributeValues: { ":now": { N: String(nowSeconds) } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    ]);
    expect(t.table.mock.commandCalls(DeleteItemCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        TableName: TABLE,
        Key: { instance_id: { S: "lease#refill#gpu-small" } },
        ConditionExpression: "#o = :owner",
        ExpressionAttributeNames: { "#o": "owner" },
        ExpressionAttributeValues: { ":owner": { S: "run-1" } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    ]);
  });

  it("is not held back by another class's lease, and leaves that lease alone", async () => {
    const t = arrange([], 1);
    const otherLease = { owner: "run-0", expiresAt: Math.floor(t.clock.now / 1000) + 60 };
    t.table.items.set(leaseKey("cpu-small"), otherLease);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out.kind).to.equal("refilled");
    expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
    expect(t.table.items.get(leaseKey("cpu-small"))).to.deep.equal(otherLease);
  });

  it("asks EC2 for this pool's instances of this class in every state that is or will be usable", async () => {
    const t = arrange([], 0);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    const describes = t.ec2.mock.commandCalls(DescribeInstancesCommand);
    expect(describes).to.have.length(1);
    expect(describes[0]?.args[0].input.Filters).to.deep.equal([
      { Name: "tag:encache:pool", Values: [POOL_TAG] },
      { Name: "tag:encache:pool-class", Values: ["gpu-small"] },
      { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped"] },
    ]);
  });

  it("counts neither another pool's instances of the class nor stopping ones as live, nor starts them", async () => {
    const foreign = { ...pooled("running"), tags: { ...poolTags(), "encache:pool": "encache-warm-pool-other" } };
    const foreignStopped = { ...pooled("stopped"), tags: { ...poolTags(), "encache:pool": "encache-warm-pool-other" } };
    const stopping = pooled("stopping");
    const t = arrange([foreign, foreignStopped, stopping], 1);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ liveUnclaimed: 0, started: [] });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([1]);
    expect(t.logger.withStep("pool_counted")[0]?.fields).to.include({ live_unclaimed: 0, stopped_unclaimed: 0, deficit: 1 });
  });

  it("looks claims up in chunks of at most 100 keys, and honours a claim in every chunk", async () => {
    const instances = Array.from({ length: 105 }, () => pooled("running"));
    const ids = instances.map((i) => i.id);
    const t = arrange(instances, 105);
    const lockedUntil = Math.floor(t.clock.now / 1000) + 60;
    t.table.items.set(ids[0]!, { owner: "wf-1", expiresAt: lockedUntil });
    t.table.items.set(ids[104]!, { owner: "wf-2", expiresAt: lockedUntil });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    const gets = t.table.mock.commandCalls(BatchGetItemCommand).map((c) => c.args[0].input.RequestItems?.[TABLE]);
    expect(gets.map((g) => g?.Keys?.map((k) => k["instance_id"]?.S))).to.deep.equal([ids.slice(0, 100), ids.slice(100)]);
    expect(gets[0]).to.deep.include({ ProjectionExpression: "#k, #e", ExpressionAttributeNames: { "#k": "instance_id", "#e": "expires_at" } });
    expect(out).to.deep.include({ liveUnclaimed: 103 });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([2]);
    const advertised = t.adverts().map((a) => a.instance_id);
    expect(advertised).to.include.members(ids.slice(1, 104));
    expect(advertised, "claimed in the first chunk").to.not.include(ids[0]);
    expect(advertised, "claimed in the second chunk").to.not.include(ids[104]);
  });

  it("a claim lock that expires this very second still counts as claimed (the lock can only be taken over after it)", async () => {
    const i = pooled("running");
    const t = arrange([i], 1);
    t.table.items.set(i.id, { owner: "wf-1", expiresAt: Math.floor(t.clock.now / 1000) });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ liveUnclaimed: 0 });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([1]);
  });

  it("the idempotency token is the hex SHA-256 of the run id and the class, NUL-separated (fixed vector)", () => {
    // sha256("run-1\0gpu-small"), computed once; 64 hex characters, EC2's ClientToken limit.
    expect(clientToken("run-1", "gpu-small")).to.equal("d899308e4abc1d4996a1c75448ac30ff5b417cec1146224e0aad6c1fa9c2398a");
    expect(clientToken("run-2", "gpu-small")).to.not.equal(clientToken("run-1", "gpu-small"));
    expect(clientToken("run-1", "gpu-large")).to.not.equal(clientToken("run-1", "gpu-small"));
  });

  it("counts a DescribeInstances page without reservations, or a reservation without instances, as no instances, and reads every page", async () => {
    const running = pooled("running");
    const t = arrange([], 2);
    const described = {
      InstanceId: running.id,
      InstanceType: "g5.xlarge" as const,
      State: { Name: "running" as const },
      Tags: Object.entries(poolTags()).map(([Key, Value]) => ({ Key, Value })),
    };
    t.ec2.mock
      .on(DescribeInstancesCommand)
      .resolvesOnce({ NextToken: "page-2" })
      .resolves({ Reservations: [{}, { Instances: [described] }] });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 1, advertised: 2 });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([1]);
  });

  it("counts an instance EC2 describes without a state as neither live nor stopped", async () => {
    const t = arrange([], 1);
    t.ec2.mock.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [{ InstanceId: pooled("running").id, InstanceType: "g5.xlarge" }] }] });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 0, started: [] });
    expect(t.ec2.runs.map((r) => r.MaxCount)).to.deep.equal([1]);
  });

  describe("keys DynamoDB leaves unprocessed count as unclaimed (the run can only launch fewer)", () => {
    const answers: Array<[string, Record<string, unknown>]> = [
      ["no responses for the table", { Responses: {} }],
      ["no responses at all", {}],
    ];
    for (const [title, answer] of answers) {
      it(title, async () => {
        const claimedRunning = pooled("running");
        const t = arrange([claimedRunning], 1);
        t.table.items.set(claimedRunning.id, { owner: "wf-1", expiresAt: Math.floor(t.clock.now / 1000) + 60 });
        t.table.mock.on(BatchGetItemCommand).resolves({ ...answer, UnprocessedKeys: { [TABLE]: { Keys: [{ instance_id: { S: claimedRunning.id } }] } } });

        const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

        expect(out).to.deep.include({ liveUnclaimed: 1, launched: [] });
        expect(t.ec2.calls("RunInstancesCommand")).to.equal(0);
      });
    }
  });

  it("a claim-table item without an expiry (not a lock this code wrote) counts as unclaimed", async () => {
    const i = pooled("running");
    const t = arrange([i], 1);
    t.table.mock.on(BatchGetItemCommand).resolves({ Responses: { [TABLE]: [{ instance_id: { S: i.id } }] } });

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 1, launched: [] });
  });

  it("a RunInstances answer that names no instances advertises none as launched, and the run still succeeds", async () => {
    const t = arrange([pooled("running")], 2);
    t.ec2.mock.on(RunInstancesCommand).resolves({});

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(out).to.deep.include({ kind: "refilled", launched: [], advertised: 1 });
    expect(t.metrics.count("PoolInstancesLaunched")).to.equal(0);
  });

  it("advertises each instance with the type EC2 reports and the class's shape, stamped with the run's time", async () => {
    const g6 = { ...pooled("running"), type: "g6.xlarge" };
    const t = arrange([g6], 1);
    const cls = { ...t.config.classes[0]!, instanceTypes: ["g5.xlarge", "g6.xlarge"] };

    await refillClass(t.deps, cls, "run-1");

    expect(t.adverts()).to.deep.equal([
      {
        instance_id: g6.id,
        resource_class: "gpu-small",
        instance_type: "g6.xlarge",
        usage_class: "on-demand",
        cpu: 4,
        memory_mib: 16384,
        advertised_at: new Date(t.clock.now).toISOString(),
      },
    ]);
  });

  it("a lease taken fresh is neither logged nor counted as recovered", async () => {
    const t = arrange([pooled("running")], 1);

    await refillClass(t.deps, t.config.classes[0]!, "run-1");

    expect(t.metrics.count("RefillLeasesRecovered")).to.equal(0);
    expect(t.logger.withStep("refill_lease_recovered")).to.have.length(0);
  });

  it("logs what it launched and a summary of the run", async () => {
    const running = pooled("running");
    const stopped = pooled("stopped");
    const t = arrange([running, stopped], 4);

    const out = await refillClass(t.deps, t.config.classes[0]!, "run-1");

    const launched = out.kind === "refilled" ? out.launched : [];
    expect(launched).to.have.length(2);
    expect(t.logger.withStep("pool_instances_launched").map((e) => e.fields)).to.deep.equal([
      { step: "pool_instances_launched", resource_class: "gpu-small", instance_ids: launched, requested: 2 },
    ]);
    expect(t.logger.withStep("refill_completed").map((e) => e.fields)).to.deep.equal([
      { step: "refill_completed", resource_class: "gpu-small", run_id: "run-1", started: 1, launched: 2, advertised: 4 },
    ]);
  });

  it("names every advert SQS rejected, with its code and message, in the run's error", async () => {
    const t = arrange([pooled("running"), pooled("running"), pooled("running")], 3);
    t.sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: "0", MessageId: "x", MD5OfMessageBody: "" }],
      Failed: [
        { Id: "1", Code: "InternalError", SenderFault: false },
        { Id: "2", Code: "InvalidParameterValue", Message: "body too long", SenderFault: true },
      ],
    });

    let error: unknown;
    try {
      await refillClass(t.deps, t.config.classes[0]!, "run-1");
    } catch (e) {
      error = e;
    }

    expect((error as Error).message).to.equal("SendMessageBatch rejected 2 advert(s) of gpu-small: InternalError; InvalidParameterValue body too long");
    expect(t.metrics.count("AdvertsPublished")).to.equal(1);
  });
});
