import { DescribeInstancesCommand, EC2ServiceException, RunInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import type { PoolClassConfig, RefillConfig } from "../../../functions/pool/config";
import { parseRefillConfig } from "../../../functions/pool/config";
import { clientToken, leaseKey, refillClass } from "../../../functions/pool/refill-class";
import { runPoolInstancesStatements } from "../../../infra/iam/pool";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { FakeClaimTable, FakeClock, FakeEc2, type FakeEc2Instance, instanceId, POOL_TAG, poolTags, QUEUE_URL, TABLE, telemetry } from "../helpers/pool-fakes";

const REFILL_DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/pool-refill-dlq";
const CLS: PoolClassConfig = { name: "gpu-small", queueUrl: QUEUE_URL, launchTemplateId: "lt-0123", size: 3, instanceTypes: ["g5.xlarge"], cpu: 4, memoryMib: 16384, usageClass: "on-demand" };

function arrange(instances: FakeEc2Instance[] = [], size = 3) {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(instances);
  const table = new FakeClaimTable();
  const sqs = new SQSClient({ region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" } });
  const sqsMock = mockClient(sqs);
  sqsMock.on(SendMessageCommand).resolves({ MessageId: "x" });
  sqsMock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({ Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: "x", MD5OfMessageBody: "" })), Failed: [] }));
  const t = telemetry();
  const config: RefillConfig = { classes: [{ ...CLS, size }], claimTableName: TABLE, poolTag: POOL_TAG, leaseSeconds: 120, quarantineQueueUrl: REFILL_DLQ };
  const deps = { ec2: ec2.ec2, dynamodb: table.dynamodb, sqs, clock: clock.read, config, ...t };
  const adverts = () =>
    sqsMock
      .commandCalls(SendMessageBatchCommand)
      .filter((c) => c.args[0].input.QueueUrl === QUEUE_URL)
      .flatMap((c) => c.args[0].input.Entries ?? [])
      .map((e) => JSON.parse(e.MessageBody ?? "") as { instance_id: string });
  return { clock, ec2, table, sqsMock, deps, config, adverts, ...t };
}

const pooled = (state: string, cls = "gpu-small"): FakeEc2Instance => ({ id: instanceId(), state, tags: poolTags(cls) });

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

    t.table.items.delete(leaseKey("gpu-small"));
    await refillClass(t.deps, t.config.classes[0]!, "run-2");
    expect(t.table.items.has(leaseKey("gpu-small")), "lease released").to.equal(false);
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
    const grant = runPoolInstancesStatements({
      region: "us-east-1",
      poolTag: POOL_TAG,
      launchTemplateArns: ["arn:aws:ec2:us-east-1:123456789012:launch-template/lt-0123"],
      subnetId: "subnet-1",
      securityGroupArn: "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1",
      instanceRoleArn: "arn:aws:iam::123456789012:role/pool-instance",
    }).find((s) => s.Sid === "RunTaggedPoolInstances");
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

  describe("handler", () => {
    it("runs a class once per batch when several of its messages arrive together, and acknowledges them all", async () => {
      const t = arrange([], 2);
      const records = [sqsRecord({ resource_class: "gpu-small", scheduled_time: "a" }), sqsRecord({ resource_class: "gpu-small", scheduled_time: "b" })];

      const response = await createRefillHandler(t.deps)(sqsEvent(...records));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.ec2.calls("DescribeInstancesCommand")).to.equal(1);
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
      expect(t.adverts()).to.have.length(2);
      expect(t.logger.withStep("refill_shared_run")).to.have.length(1);
    });

    it("fails every message of a class whose shared run failed", async () => {
      const t = arrange([], 1);
      t.ec2.mock.on(RunInstancesCommand).rejects(new Error("boom"));
      const records = [sqsRecord({ resource_class: "gpu-small", scheduled_time: "a" }), sqsRecord({ resource_class: "gpu-small", scheduled_time: "b" })];

      const response = await createRefillHandler(t.deps)(sqsEvent(...records));

      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).to.have.members(records.map((r) => r.messageId));
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
    });

    it("refills the class the scheduled message names", async () => {
      const t = arrange([], 1);

      const response = await createRefillHandler(t.deps)(sqsEvent(sqsRecord({ resource_class: "gpu-small", scheduled_time: "2026-01-01T00:00:00Z" })));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.ec2.calls("RunInstancesCommand")).to.equal(1);
      expect(t.metrics.published).to.equal(1);
    });

    const quarantined: Array<[string, string | Record<string, unknown>, RegExp]> = [
      ["not JSON", "{", /not JSON/],
      ["missing resource_class", { scheduled_time: "x" }, /resource_class/],
      ["an unknown class", { resource_class: "tpu", scheduled_time: "x" }, /unknown resource_class tpu/],
    ];
    for (const [title, body, reason] of quarantined) {
      it(`quarantines ${title} to the refill DLQ with the reason`, async () => {
        const t = arrange();

        const response = await createRefillHandler(t.deps)(sqsEvent(sqsRecord(body)));

        expect(response.batchItemFailures).to.deep.equal([]);
        const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
        expect(sent?.QueueUrl).to.equal(REFILL_DLQ);
        expect(sent?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(reason);
        expect(t.ec2.mock.calls()).to.have.length(0);
      });
    }

    it("reports a failed run as a batch item failure", async () => {
      const t = arrange([], 1);
      t.ec2.mock.on(RunInstancesCommand).rejects(new Error("boom"));
      const record = sqsRecord({ resource_class: "gpu-small", scheduled_time: "x" });

      const response = await createRefillHandler(t.deps)(sqsEvent(record));

      expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    });
  });

  describe("environment", () => {
    const env = {
      POOL_CLASSES: JSON.stringify([CLS]),
      CLAIM_TABLE_NAME: TABLE,
      POOL_TAG,
      QUARANTINE_QUEUE_URL: REFILL_DLQ,
    };
    it("parses POOL_CLASSES and defaults the lease", () => {
      expect(parseRefillConfig(env)).to.deep.equal({ classes: [CLS], claimTableName: TABLE, poolTag: POOL_TAG, leaseSeconds: 300, quarantineQueueUrl: REFILL_DLQ });
    });
    const bad: Array<[string, Record<string, string>, RegExp]> = [
      ["POOL_CLASSES not JSON", { POOL_CLASSES: "[" }, /POOL_CLASSES is invalid/],
      ["an empty class list", { POOL_CLASSES: "[]" }, /POOL_CLASSES/],
      ["a missing table", { CLAIM_TABLE_NAME: "" }, /CLAIM_TABLE_NAME is required/],
      ["a lease over an hour", { REFILL_LEASE_SECONDS: "3601" }, /REFILL_LEASE_SECONDS/],
    ];
    for (const [title, override, message] of bad) {
      it(`rejects ${title}`, () => {
        expect(() => parseRefillConfig({ ...env, ...override })).to.throw(message);
      });
    }
  });
});
