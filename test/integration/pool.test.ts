import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  CreateLaunchTemplateCommand,
  DescribeInstancesCommand,
  RunInstancesCommand,
  StopInstancesCommand,
  TerminateInstancesCommand,
} from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { Advert, ResourceClassSpec } from "../../functions/pool/advert";
import { claimInstance, type ClaimRequest, releaseClaim } from "../../functions/pool/claim";
import type { PoolClassConfig } from "../../functions/pool/config";
import { pickup, type PickupRequest } from "../../functions/pool/pickup";
import { acquireLock } from "../../functions/pool/lock";
import { leaseKey, refillClass } from "../../functions/pool/refill-class";
import { RecordingLogger, RecordingMetrics } from "../functions/helpers/telemetry";
import { AwsWorld, type Queue } from "./helpers/aws-world";
import { loseResponses } from "./helpers/lost-response";
import { resetMoto } from "./helpers/moto";

const POOL_TAG = "encache-warm-pool-it";
const TABLE = "pool-claims";
const GPU_SMALL: ResourceClassSpec = { name: "gpu-small", instanceTypes: ["g5.xlarge", "g6.xlarge"], cpu: 4, memoryMib: 16384, usageClass: "on-demand" };

describe("warm pool against moto", () => {
  let world: AwsWorld;
  let dynamodb: DynamoDBClient;
  let pool: Queue;

  beforeEach(async () => {
    await resetMoto();
    world = new AwsWorld();
    dynamodb = new DynamoDBClient({});
    pool = await world.createQueue("pool-gpu-small");
    await dynamodb.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [{ AttributeName: "instance_id", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "instance_id", AttributeType: "S" }],
      }),
    );
  });

  const telemetry = () => ({ logger: new RecordingLogger(), metrics: new RecordingMetrics() });

  function pickupRequest(overrides: Partial<PickupRequest> = {}): PickupRequest {
    return {
      queueUrl: pool.url,
      resourceClass: GPU_SMALL,
      requirements: {},
      requeueDelaySeconds: 0,
      tolerance: 5,
      deadline: Date.now() + 20_000,
      ...overrides,
    };
  }

  async function poolInstance(state: "running" | "stopped" = "running"): Promise<string> {
    const out = await world.ec2.send(
      new RunInstancesCommand({
        ImageId: await world.anyAmi(),
        InstanceType: "g5.xlarge",
        MinCount: 1,
        MaxCount: 1,
        TagSpecifications: [
          {
            ResourceType: "instance",
            Tags: [
              { Key: "encache:pool", Value: POOL_TAG },
              { Key: "encache:pool-class", Value: "gpu-small" },
            ],
          },
        ],
      }),
    );
    const id = out.Instances?.[0]?.InstanceId ?? "";
    if (state === "stopped") await world.ec2.send(new StopInstancesCommand({ InstanceIds: [id] }));
    return id;
  }

  function advertFor(instanceId: string, overrides: Partial<Advert> = {}): Advert {
    return {
      instance_id: instanceId,
      resource_class: "gpu-small",
      instance_type: "g5.xlarge",
      usage_class: "on-demand",
      cpu: 4,
      memory_mib: 16384,
      advertised_at: new Date().toISOString(),
      ...overrides,
    };
  }

  async function delayedCount(): Promise<number> {
    const { Attributes } = await world.sqs.send(new GetQueueAttributesCommand({ QueueUrl: pool.url, AttributeNames: ["ApproximateNumberOfMessagesDelayed"] }));
    return Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0);
  }

  it("returns a suitable advert from a mixed pool and re-queues the unsuitable ones with the delay", async () => {
    const unsuitable = [advertFor("i-0000000000000aaa1", { instance_type: "g6.xlarge" }), advertFor("i-0000000000000aaa2", { instance_type: "g6.xlarge" })];
    const suitable = advertFor("i-0000000000000bbb1");
    for (const a of [...unsuitable, suitable]) await world.send(pool, JSON.stringify(a));

    const result = await pickup(
      { sqs: world.sqs, clock: Date.now, ...telemetry() },
      pickupRequest({ requirements: { allowedInstanceTypes: ["g5.xlarge"] }, requeueDelaySeconds: 30 }),
    );

    expect(result).to.deep.include({ kind: "suitable", advert: suitable, cycles: 3 });
    expect(await delayedCount(), "both unsuitable adverts are back, delayed").to.equal(2);
    expect(await world.depth(pool)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("an empty pool is globally exhausted", async () => {
    const result = await pickup({ sqs: world.sqs, clock: Date.now, ...telemetry() }, pickupRequest());
    expect(result).to.deep.equal({ kind: "exhausted", scope: "global", cycles: 1 });
  });

  it("one unsuitable instance alone is locally exhausted after 6 sightings, and its advert is still in the queue", async () => {
    const lone = advertFor("i-0000000000000ccc1");
    await world.send(pool, JSON.stringify(lone));

    const result = await pickup({ sqs: world.sqs, clock: Date.now, ...telemetry() }, pickupRequest({ requirements: { usageClass: "spot" } }));

    expect(result).to.deep.equal({ kind: "exhausted", scope: "local", cycles: 6, instanceId: lone.instance_id });
    const left = await world.receiveAll(pool);
    expect(left.map((m) => JSON.parse(m.Body ?? "") as Advert)).to.deep.equal([lone]);
  });

  it("two claim workers at once over one duplicated advert claim the instance once", async () => {
    const id = await poolInstance("running");
    for (let i = 0; i < 2; i += 1) await world.send(pool, JSON.stringify(advertFor(id)));
    const request = (workflowId: string): ClaimRequest => ({
      workflowId,
      queueUrl: pool.url,
      resourceClass: GPU_SMALL,
      requirements: {},
      claimTableName: TABLE,
      poolTag: POOL_TAG,
      lockTtlSeconds: 600,
      requeueDelaySeconds: 0,
      deadline: Date.now() + 20_000,
    });
    const deps = () => ({ sqs: world.sqs, ec2: world.ec2, dynamodb, clock: Date.now, ...telemetry() });

    const results = await Promise.all([claimInstance(deps(), request("wf-a")), claimInstance(deps(), request("wf-b"))]);

    const claimed = results.filter((r) => r.outcome === "claimed");
    expect(claimed, JSON.stringify(results)).to.have.length(1);
    expect(claimed[0]).to.deep.include({ instanceId: id, state: "running" });
    expect(results.find((r) => r.outcome === "exhausted")).to.deep.include({ scope: "global" });
  });

  function claimRequest(workflowId: string): ClaimRequest {
    return {
      workflowId,
      queueUrl: pool.url,
      resourceClass: GPU_SMALL,
      requirements: {},
      claimTableName: TABLE,
      poolTag: POOL_TAG,
      lockTtlSeconds: 600,
      requeueDelaySeconds: 0,
      deadline: Date.now() + 20_000,
    };
  }

  async function lockOwner(key: string): Promise<string | undefined> {
    const { Item } = await dynamodb.send(new GetItemCommand({ TableName: TABLE, Key: { instance_id: { S: key } }, ConsistentRead: true }));
    return Item?.owner?.S;
  }

  it("moto returns the old item on a failed lock condition (ALL_OLD): a lock write sent twice by one owner resolves as its own, by another as a lost race", async () => {
    const now = Math.floor(Date.now() / 1000);
    const key = "i-0000000000000ddd1";

    const first = await acquireLock({ dynamodb }, TABLE, key, "wf-a", now, now + 600);
    const again = await acquireLock({ dynamodb }, TABLE, key, "wf-a", now, now + 600);
    const other = await acquireLock({ dynamodb }, TABLE, key, "wf-b", now, now + 600);

    expect(first).to.deep.equal({ acquired: true, expiresAt: now + 600, recovered: false });
    expect(again).to.deep.equal({ acquired: true, expiresAt: now + 600, recovered: true });
    expect(other).to.deep.equal({ acquired: false, holder: "wf-a", expiresAt: now + 600 });
    let raw: unknown;
    try {
      await dynamodb.send(
        new PutItemCommand({
          TableName: TABLE,
          Item: { instance_id: { S: key }, owner: { S: "wf-c" } },
          ConditionExpression: "attribute_not_exists(instance_id)",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    } catch (e) {
      raw = e;
    }
    expect(raw).to.have.property("name", "ConditionalCheckFailedException");
    expect(raw).to.have.nested.property("Item.owner.S", "wf-a");
  });

  it("a claim whose lock write's response is lost (the SDK retries into its own lock) claims the instance and leaks no lock", async () => {
    const id = await poolInstance("running");
    await world.send(pool, JSON.stringify(advertFor(id)));
    const fault = loseResponses(dynamodb, "PutItemCommand");
    const t = telemetry();

    const result = await claimInstance({ sqs: world.sqs, ec2: world.ec2, dynamodb, clock: Date.now, ...t }, claimRequest("wf-a"));
    fault.remove();

    expect(fault.lost, "the fault fired").to.equal(1);
    expect(result).to.deep.include({ outcome: "claimed", instanceId: id, state: "running", attempts: 1 });
    expect(await lockOwner(id)).to.equal("wf-a");
    expect(t.metrics.count("ClaimsLostRace")).to.equal(0);
    expect(t.metrics.count("ClaimLocksRecovered")).to.equal(1);
    // The workflow's release gives it back, so the instance is not held for the lock's TTL.
    expect(await releaseClaim({ dynamodb }, TABLE, id, "wf-a")).to.equal(true);
    expect(await lockOwner(id)).to.equal(undefined);
  });

  it("a claim whose lock write loses every answer (the SDK's attempts and every re-send) fails and leaves no lock behind", async () => {
    // Prepare: the first send takes the lock in moto; its answer and every later one are connection resets.
    const id = await poolInstance("running");
    await world.send(pool, JSON.stringify(advertFor(id)));
    const fault = loseResponses(dynamodb, "PutItemCommand", 1000);
    const t = telemetry();
    // Act
    const error = await claimInstance({ sqs: world.sqs, ec2: world.ec2, dynamodb, clock: Date.now, ...t }, claimRequest("wf-a")).then(
      () => undefined,
      (e: unknown) => e,
    );
    fault.remove();
    // Assess
    expect(error)
      .to.be.instanceOf(Error)
      .with.property("message")
      .that.matches(/socket hang up/);
    expect(fault.lost, "every send was answered with a reset").to.be.greaterThan(4);
    expect(await lockOwner(id), "the lock the workflow could not know it took is released").to.equal(undefined);
  });

  it("a release whose response is lost (the SDK retries into nothing) resolves as released", async () => {
    const now = Math.floor(Date.now() / 1000);
    await acquireLock({ dynamodb }, TABLE, "i-0000000000000ddd2", "wf-a", now, now + 600);
    const fault = loseResponses(dynamodb, "DeleteItemCommand");

    const released = await releaseClaim({ dynamodb }, TABLE, "i-0000000000000ddd2", "wf-a");
    fault.remove();

    expect(fault.lost).to.equal(1);
    expect(released).to.equal(true);
    expect(await lockOwner("i-0000000000000ddd2")).to.equal(undefined);
  });

  it("a refill whose lease write's response is lost refills the class instead of skipping it, and releases the lease", async () => {
    const { LaunchTemplate } = await world.ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: "pool-gpu-small-lt",
        LaunchTemplateData: { ImageId: await world.anyAmi(), InstanceType: "g5.xlarge" },
      }),
    );
    const cls: PoolClassConfig = { ...GPU_SMALL, queueUrl: pool.url, launchTemplateId: LaunchTemplate?.LaunchTemplateId ?? "", size: 1 };
    const fault = loseResponses(dynamodb, "PutItemCommand");
    const t = telemetry();

    const out = await refillClass(
      {
        ec2: world.ec2,
        dynamodb,
        sqs: world.sqs,
        clock: Date.now,
        config: {
          classes: [cls],
          claimTableName: TABLE,
          poolTag: POOL_TAG,
          poolTagKey: "encache:pool",
          poolClassTagKey: "encache:pool-class",
          leaseSeconds: 60,
          quarantineQueueUrl: pool.url,
        },
        ...t,
      },
      cls,
      "msg-1",
    );
    fault.remove();

    expect(fault.lost).to.equal(1);
    expect(out).to.deep.include({ kind: "refilled", liveUnclaimed: 0 });
    expect(out.kind === "refilled" ? out.launched : []).to.have.length(1);
    expect(t.metrics.count("RefillSkipped")).to.equal(0);
    expect(await lockOwner(leaseKey("gpu-small")), "lease released").to.equal(undefined);
  });

  it("a claim starts a stopped warm instance and skips a terminated one", async () => {
    const gone = await poolInstance("running");
    await world.ec2.send(new TerminateInstancesCommand({ InstanceIds: [gone] }));
    const stopped = await poolInstance("stopped");
    await world.send(pool, JSON.stringify(advertFor(gone)));
    await world.send(pool, JSON.stringify(advertFor(stopped)));

    const result = await claimInstance(
      { sqs: world.sqs, ec2: world.ec2, dynamodb, clock: Date.now, ...telemetry() },
      {
        workflowId: "wf",
        queueUrl: pool.url,
        resourceClass: GPU_SMALL,
        requirements: {},
        claimTableName: TABLE,
        poolTag: POOL_TAG,
        lockTtlSeconds: 600,
        requeueDelaySeconds: 0,
        deadline: Date.now() + 20_000,
      },
    );

    expect(result).to.deep.include({ outcome: "claimed", instanceId: stopped, state: "stopped", started: true, attempts: 2 });
    expect(await world.instanceState(stopped)).to.equal("running");
  });

  it("refill tops a class up to its size, and no further, across two overlapping runs", async () => {
    const { LaunchTemplate } = await world.ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: "pool-gpu-small-lt",
        LaunchTemplateData: {
          ImageId: await world.anyAmi(),
          InstanceType: "g5.xlarge",
          MetadataOptions: { HttpTokens: "required" },
        },
      }),
    );
    await poolInstance("running"); // one idle instance already in the pool
    const cls: PoolClassConfig = { ...GPU_SMALL, queueUrl: pool.url, launchTemplateId: LaunchTemplate?.LaunchTemplateId ?? "", size: 3 };
    const deps = () => ({
      ec2: world.ec2,
      dynamodb,
      sqs: world.sqs,
      clock: Date.now,
      config: {
        classes: [cls],
        claimTableName: TABLE,
        poolTag: POOL_TAG,
        poolTagKey: "encache:pool",
        poolClassTagKey: "encache:pool-class",
        leaseSeconds: 60,
        quarantineQueueUrl: pool.url,
      },
      ...telemetry(),
    });

    const overlapping = await Promise.all([refillClass(deps(), cls, "run-a"), refillClass(deps(), cls, "run-b")]);
    // moto's RunInstances launches MinCount (1), not up to MaxCount as EC2 does, so a later run finishes the top-up.
    await refillClass(deps(), cls, "run-c");
    const after = await refillClass(deps(), cls, "run-d");

    const { Reservations } = await world.ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: "tag:encache:pool-class", Values: ["gpu-small"] },
          { Name: "instance-state-name", Values: ["pending", "running"] },
        ],
      }),
    );
    const live = (Reservations ?? []).flatMap((r) => r.Instances ?? []);
    expect(live, "exactly the size").to.have.length(3);
    expect(overlapping.map((o) => o.kind).sort()).to.deep.equal(["lease_held", "refilled"]);
    expect(after).to.deep.include({ kind: "refilled", liveUnclaimed: 3, launched: [], started: [] });
  });
});
