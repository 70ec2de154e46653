import { DescribeInstancesCommand, type DescribeInstancesResult, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { expect } from "chai";
import { claimInstance, type ClaimRequest, releaseClaim } from "../../../functions/pool/claim";
import {
  advert,
  ec2Error,
  FakeClaimTable,
  FakeClock,
  FakeEc2,
  type FakeEc2Instance,
  FakePoolQueue,
  GPU_SMALL,
  POOL_TAG,
  poolTags,
  QUEUE_URL,
  TABLE,
  telemetry,
} from "../helpers/pool-fakes";

function arrange(instances: FakeEc2Instance[] = []) {
  const clock = new FakeClock();
  const queue = new FakePoolQueue(clock);
  const ec2 = new FakeEc2(instances);
  const table = new FakeClaimTable();
  const t = telemetry();
  const deps = { sqs: queue.sqs, ec2: ec2.ec2, dynamodb: table.dynamodb, clock: clock.read, ...t };
  const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
    workflowId: "wf-1",
    queueUrl: QUEUE_URL,
    resourceClass: GPU_SMALL,
    requirements: {},
    claimTableName: TABLE,
    poolTag: POOL_TAG,
    lockTtlSeconds: 600,
    requeueDelaySeconds: 5,
    deadline: clock.now + 60_000,
    ...overrides,
  });
  return { clock, queue, ec2, table, deps, request, ...t };
}

const tagList = () => Object.entries(poolTags()).map(([Key, Value]) => ({ Key, Value }));

describe("claim API", () => {
  it("claims a running pool instance: conditional lock with TTL and owner, EC2 check, no start", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
    t.queue.push(a);

    const result = await claimInstance(t.deps, t.request());

    const expiresAt = Math.floor(t.clock.now / 1000) + 600;
    expect(result).to.deep.equal({
      outcome: "claimed",
      instanceId: a.instance_id,
      advert: a,
      state: "running",
      started: false,
      lockExpiresAt: expiresAt,
      attempts: 1,
    });
    expect(t.table.items.get(a.instance_id)).to.deep.equal({ owner: "wf-1", expiresAt });
    const put = t.table.mock.commandCalls(PutItemCommand)[0]?.args[0].input;
    expect(put?.ConditionExpression).to.equal("attribute_not_exists(#k) OR #e < :now");
    expect(t.ec2.started).to.deep.equal([]);
    expect(t.metrics.count("InstancesClaimed")).to.equal(1);
    expect(t.logger.withStep("instance_claimed")[0]?.fields).to.include({ workflow_id: "wf-1", instance_id: a.instance_id, state: "running" });
    expect(t.metrics.count("ClaimLocksRecovered"), "a fresh lock is not a recovered one").to.equal(0);
    expect(t.logger.withStep("claim_lock_recovered")).to.have.length(0);
  });

  it("claims a pending pool instance as it is, without starting it", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "pending", tags: poolTags() }]);
    t.queue.push(a);

    const result = await claimInstance(t.deps, t.request());

    expect(result).to.deep.include({ outcome: "claimed", instanceId: a.instance_id, state: "pending", started: false });
    expect(t.ec2.started).to.deep.equal([]);
  });

  it("starts a stopped warm instance", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "stopped", tags: poolTags() }]);
    t.queue.push(a);

    const result = await claimInstance(t.deps, t.request());

    expect(result).to.deep.include({ outcome: "claimed", state: "stopped", started: true });
    expect(t.ec2.mock.commandCalls(StartInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: [a.instance_id] });
    expect(t.logger.withStep("claim_instance_started").map((e) => e.fields)).to.deep.equal([{ step: "claim_instance_started", instance_id: a.instance_id }]);
  });

  const gone: Array<{ title: string; instance: (id: string) => FakeEc2Instance[]; reason: string }> = [
    { title: "terminated", instance: (id) => [{ id, state: "terminated", tags: poolTags() }], reason: "terminated" },
    { title: "missing", instance: () => [], reason: "not_found" },
    { title: "shutting down", instance: (id) => [{ id, state: "shutting-down", tags: poolTags() }], reason: "shutting-down" },
    { title: "stopping", instance: (id) => [{ id, state: "stopping", tags: poolTags() }], reason: "stopping" },
    { title: "not tagged for the pool", instance: (id) => [{ id, state: "running", tags: { Name: "someone-else" } }], reason: "not_a_pool_member" },
    { title: "tagged for another class", instance: (id) => [{ id, state: "running", tags: poolTags("cpu-small") }], reason: "not_a_pool_member" },
    // The class tag is right: only the pool's own tag tells it apart.
    {
      title: "tagged for the class but in another pool",
      instance: (id) => [{ id, state: "running", tags: { ...poolTags(), "encache:pool": "encache-warm-pool-other" } }],
      reason: "not_a_pool_member",
    },
    {
      title: "tagged for the class but with no pool tag",
      instance: (id) => [{ id, state: "running", tags: { "encache:pool-class": "gpu-small" } }],
      reason: "not_a_pool_member",
    },
    { title: "not tagged at all", instance: (id) => [{ id, state: "running" }], reason: "not_a_pool_member" },
  ];
  for (const g of gone) {
    it(`an instance that is ${g.title} releases the lock and asks the pool again`, async () => {
      const bad = advert();
      const good = advert();
      const t = arrange([...g.instance(bad.instance_id), { id: good.instance_id, state: "running", tags: poolTags() }]);
      t.queue.push(bad);
      t.queue.push(good);

      const result = await claimInstance(t.deps, t.request());

      expect(result).to.deep.include({ outcome: "claimed", instanceId: good.instance_id, attempts: 2 });
      expect(t.table.items.has(bad.instance_id), "lock released").to.equal(false);
      expect(t.logger.withStep("claim_instance_unavailable")[0]?.fields).to.include({ instance_id: bad.instance_id, reason: g.reason });
      expect(t.metrics.count("ClaimsInstanceUnavailable")).to.equal(1);
      expect(t.ec2.started).to.deep.equal([]);
    });
  }

  it("an unavailable instance whose lock release fails is logged, and the claim still asks the pool again", async () => {
    // Prepare: the first advert's instance is gone; every release is refused.
    const bad = advert();
    const good = advert();
    const t = arrange([{ id: good.instance_id, state: "running", tags: poolTags() }]);
    t.queue.push(bad);
    t.queue.push(good);
    t.table.mock
      .on(DeleteItemCommand)
      .rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } }));

    // Act
    const result = await claimInstance(t.deps, t.request());

    // Assess
    expect(result).to.deep.include({ outcome: "claimed", instanceId: good.instance_id, attempts: 2 });
    expect(t.logger.withStep("claim_lock_release_failed").map((e) => e.fields)).to.deep.equal([
      {
        step: "claim_lock_release_failed",
        workflow_id: "wf-1",
        instance_id: bad.instance_id,
        reason: "instance_unavailable",
        error: "AccessDeniedException: denied",
      },
    ]);
    expect(t.metrics.count("ClaimLockReleaseFailed")).to.equal(1);
    expect(t.metrics.count("ClaimsInstanceUnavailable")).to.equal(1);
  });

  it("a lost race (lock held by another workflow) asks the pool again and leaves the other lock alone", async () => {
    const a = advert();
    const b = advert();
    const t = arrange([a, b].map((x) => ({ id: x.instance_id, state: "running", tags: poolTags() })));
    t.table.items.set(a.instance_id, { owner: "wf-other", expiresAt: Math.floor(t.clock.now / 1000) + 100 });
    t.queue.push(a);
    t.queue.push(b);

    const result = await claimInstance(t.deps, t.request());

    expect(result).to.deep.include({ outcome: "claimed", instanceId: b.instance_id, attempts: 2 });
    expect(t.table.items.get(a.instance_id)?.owner).to.equal("wf-other");
    expect(t.metrics.count("ClaimsLostRace")).to.equal(1);
    expect(t.ec2.calls("DescribeInstancesCommand"), "no EC2 call for a lost race").to.equal(1);
  });

  describe("a lock write whose response was lost (the first attempt applied, the SDK's retry failed the condition)", () => {
    it("is a claim, not a lost race: the workflow gets the instance and keeps the lock, nothing leaks", async () => {
      const a = advert();
      const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
      t.queue.push(a);
      t.table.loseResponses("PutItemCommand");

      const result = await claimInstance(t.deps, t.request());

      const expiresAt = Math.floor(t.clock.now / 1000) + 600;
      expect(result).to.deep.equal({
        outcome: "claimed",
        instanceId: a.instance_id,
        advert: a,
        state: "running",
        started: false,
        lockExpiresAt: expiresAt,
        attempts: 1,
      });
      expect(t.table.items.get(a.instance_id)).to.deep.equal({ owner: "wf-1", expiresAt });
      expect(t.metrics.count("ClaimsLostRace")).to.equal(0);
      expect(t.metrics.count("PoolExhausted")).to.equal(0);
      expect(t.metrics.count("ClaimLocksRecovered")).to.equal(1);
      expect(t.logger.withStep("claim_lock_recovered")[0]?.fields).to.include({ workflow_id: "wf-1", instance_id: a.instance_id, lock_expires_at: expiresAt });
    });

    it("that names another workflow as owner is still a lost race, and that lock is left alone", async () => {
      const a = advert();
      const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
      t.table.items.set(a.instance_id, { owner: "wf-other", expiresAt: Math.floor(t.clock.now / 1000) + 100 });
      t.queue.push(a);

      const result = await claimInstance(t.deps, t.request());

      expect(result).to.deep.equal({ outcome: "exhausted", scope: "global", attempts: 2 });
      expect(t.table.items.get(a.instance_id)?.owner).to.equal("wf-other");
      expect(t.logger.withStep("claim_lost_race")[0]?.fields).to.include({ workflow_id: "wf-1", instance_id: a.instance_id, holder: "wf-other" });
      expect(t.metrics.count("ClaimLocksRecovered")).to.equal(0);
    });

    it("on the release of an unavailable instance's lock still counts as released, and the claim goes on", async () => {
      const gone = advert();
      const good = advert();
      const t = arrange([{ id: good.instance_id, state: "running", tags: poolTags() }]);
      t.queue.push(gone);
      t.queue.push(good);
      t.table.loseResponses("DeleteItemCommand");

      const result = await claimInstance(t.deps, t.request());

      expect(result).to.deep.include({ outcome: "claimed", instanceId: good.instance_id, attempts: 2 });
      expect(t.table.items.has(gone.instance_id)).to.equal(false);
    });
  });

  it("an expired lock (TTL not yet swept) can be taken over", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
    t.table.items.set(a.instance_id, { owner: "wf-old", expiresAt: Math.floor(t.clock.now / 1000) - 1 });
    t.queue.push(a);

    expect(await claimInstance(t.deps, t.request())).to.deep.include({ outcome: "claimed", instanceId: a.instance_id });
    expect(t.table.items.get(a.instance_id)?.owner).to.equal("wf-1");
  });

  const exhausted: Array<{ title: string; scope: string; arrangeQueue: (t: ReturnType<typeof arrange>) => Partial<ClaimRequest> }> = [
    { title: "an empty pool", scope: "global", arrangeQueue: () => ({}) },
    { title: "only an unsuitable instance", scope: "local", arrangeQueue: (t) => (t.queue.push(advert()), { requirements: { minCpu: 64 } }) },
    { title: "a deadline already past", scope: "deadline", arrangeQueue: (t) => ({ deadline: t.clock.now - 1 }) },
  ];
  for (const e of exhausted) {
    it(`reports exhaustion (${e.scope}) for ${e.title} as a result, with a metric`, async () => {
      const t = arrange();
      const overrides = e.arrangeQueue(t);

      const result = await claimInstance(t.deps, t.request(overrides));

      expect(result).to.deep.equal({ outcome: "exhausted", scope: e.scope, attempts: 1 });
      expect(t.metrics.count("PoolExhausted")).to.equal(1);
      expect(t.logger.withStep("claim_exhausted")[0]?.fields).to.include({ scope: e.scope, workflow_id: "wf-1" });
    });
  }

  it("releases its lock when the EC2 check fails, and propagates the error", async () => {
    const a = advert();
    const t = arrange();
    t.ec2.mock.on(DescribeInstancesCommand).rejects(new Error("RequestLimitExceeded"));
    t.queue.push(a);

    let error: unknown;
    try {
      await claimInstance(t.deps, t.request());
    } catch (e) {
      error = e;
    }

    expect((error as Error).message).to.equal("RequestLimitExceeded");
    expect(t.table.items.has(a.instance_id)).to.equal(false);
  });

  describe("a lock write that fails through every re-send (its answers lost: it may have applied)", () => {
    const reset = () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} });
    const cases: Array<{ title: string; applied: boolean; releaseFails: boolean; leftOwner: string | undefined; releaseLogged: boolean }> = [
      {
        title: "the write applied: the claim fails and releases the lock it cannot know it took, nothing leaks",
        applied: true,
        releaseFails: false,
        leftOwner: undefined,
        releaseLogged: false,
      },
      {
        title: "the write never applied: the release finds nothing, the claim fails",
        applied: false,
        releaseFails: false,
        leftOwner: undefined,
        releaseLogged: false,
      },
      {
        title: "the release fails too: logged and counted, the lock write's error is the one that goes up",
        applied: true,
        releaseFails: true,
        leftOwner: "wf-1",
        releaseLogged: true,
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const a = advert();
        const t = arrange();
        t.queue.push(a);
        const instant = { rounds: 4, baseDelayMs: 0, sleep: async () => undefined };
        t.table.mock.on(PutItemCommand).callsFake(() => {
          if (c.applied) t.table.items.set(a.instance_id, { owner: "wf-1", expiresAt: t.clock.now / 1000 + 600 });
          throw reset();
        });
        if (c.releaseFails)
          t.table.mock
            .on(DeleteItemCommand)
            .rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } }));
        // Act
        const error = await claimInstance({ ...t.deps, resend: instant }, t.request()).then(
          () => undefined,
          (e: unknown) => e,
        );
        // Assess
        expect(error).to.be.instanceOf(Error).with.property("message", "socket hang up");
        expect(t.table.mock.commandCalls(PutItemCommand)).to.have.length(4);
        expect(t.table.mock.commandCalls(DeleteItemCommand)).to.have.length(1);
        expect(t.table.items.get(a.instance_id)?.owner).to.equal(c.leftOwner);
        expect(t.logger.withStep("claim_lock_release_failed").map((e) => e.fields)).to.deep.equal(
          c.releaseLogged
            ? [
                {
                  step: "claim_lock_release_failed",
                  workflow_id: "wf-1",
                  instance_id: a.instance_id,
                  reason: "acquire_failed",
                  error: "AccessDeniedException: denied",
                },
              ]
            : [],
        );
        expect(t.metrics.count("ClaimLockReleaseFailed")).to.equal(c.releaseLogged ? 1 : 0);
      });
    }
  });

  it("a check of the instance that fails, and a release that fails too: logged with the reason, the check's error goes up", async () => {
    // Prepare: EC2 fails the description of the locked instance; the lock's release is refused.
    const a = advert();
    const t = arrange();
    t.queue.push(a);
    t.ec2.mock
      .on(DescribeInstancesCommand)
      .rejects(Object.assign(new Error("EC2 is failing"), { name: "InternalError", $fault: "server", $metadata: { httpStatusCode: 500 } }));
    t.table.mock
      .on(DeleteItemCommand)
      .rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } }));
    // Act
    const error = await claimInstance(t.deps, t.request()).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Assess
    expect(error).to.be.instanceOf(Error).with.property("message", "EC2 is failing");
    expect(t.logger.withStep("claim_lock_release_failed").map((e) => e.fields)).to.deep.equal([
      { step: "claim_lock_release_failed", workflow_id: "wf-1", instance_id: a.instance_id, reason: "check_failed", error: "AccessDeniedException: denied" },
    ]);
    expect(t.metrics.count("ClaimLockReleaseFailed")).to.equal(1);
  });

  it("writes the claim lock under the instance id, owned by the workflow, with its class and TTL, only if no unexpired lock is there", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
    t.queue.push(a);

    await claimInstance(t.deps, t.request());

    const nowSeconds = Math.floor(t.clock.now / 1000);
    expect(t.table.mock.commandCalls(PutItemCommand).map((c) => c.args[0].input)).to.deep.equal([
      {
        TableName: TABLE,
        Item: { instance_id: { S: a.instance_id }, owner: { S: "wf-1" }, expires_at: { N: String(nowSeconds + 600) }, resource_class: { S: "gpu-small" } },
        ConditionExpression: "attribute_not_exists(#k) OR #e < :now",
        ExpressionAttributeNames: { "#k": "instance_id", "#e": "expires_at" },
        ExpressionAttributeValues: { ":now": { N: String(nowSeconds) } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    ]);
  });

  it("asks EC2 about the advertised instance only", async () => {
    const a = advert();
    const t = arrange([{ id: a.instance_id, state: "running", tags: poolTags() }]);
    t.queue.push(a);

    await claimInstance(t.deps, t.request());

    expect(t.ec2.mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([{ InstanceIds: [a.instance_id] }]);
  });

  describe("never hands out an instance EC2 did not describe, or one without a known state", () => {
    const answers: Array<{ title: string; answer: (id: string) => DescribeInstancesResult; reason: string }> = [
      { title: "an answer without reservations", answer: () => ({}), reason: "not_found" },
      { title: "a reservation without instances", answer: () => ({ Reservations: [{}] }), reason: "not_found" },
      {
        title: "an answer about another instance",
        answer: () => ({ Reservations: [{ Instances: [{ InstanceId: "i-0fffffffffffffff0", State: { Name: "running" }, Tags: tagList() }] }] }),
        reason: "not_found",
      },
      { title: "the instance without a state", answer: (id) => ({ Reservations: [{ Instances: [{ InstanceId: id, Tags: tagList() }] }] }), reason: "unknown" },
    ];
    for (const a of answers) {
      it(`${a.title}: releases the lock and asks the pool again (${a.reason})`, async () => {
        const bad = advert();
        const good = advert();
        const t = arrange([{ id: good.instance_id, state: "running", tags: poolTags() }]);
        t.ec2.mock.on(DescribeInstancesCommand, { InstanceIds: [bad.instance_id] }).resolves(a.answer(bad.instance_id));
        t.queue.push(bad);
        t.queue.push(good);

        const result = await claimInstance(t.deps, t.request());

        expect(result).to.deep.include({ outcome: "claimed", instanceId: good.instance_id, attempts: 2 });
        expect(t.table.items.has(bad.instance_id), "lock released").to.equal(false);
        expect(t.logger.withStep("claim_instance_unavailable")[0]?.fields).to.include({ instance_id: bad.instance_id, reason: a.reason });
      });
    }
  });

  describe("only the expected EC2 errors mean the instance is gone", () => {
    const errors: Array<{ name: string; harmless: boolean }> = [
      { name: "InvalidInstanceID.NotFound", harmless: true },
      { name: "InvalidInstanceID.Malformed", harmless: true },
      { name: "UnauthorizedOperation", harmless: false },
      { name: "RequestLimitExceeded", harmless: false },
    ];
    for (const e of errors) {
      it(`${e.name} ${e.harmless ? "releases the lock and asks the pool again" : "releases the lock and propagates"}`, async () => {
        const bad = advert();
        const good = advert();
        const t = arrange([{ id: good.instance_id, state: "running", tags: poolTags() }]);
        t.ec2.mock.on(DescribeInstancesCommand, { InstanceIds: [bad.instance_id] }).rejects(ec2Error(e.name));
        t.queue.push(bad);
        t.queue.push(good);

        let result: unknown;
        let error: unknown;
        try {
          result = await claimInstance(t.deps, t.request());
        } catch (caught) {
          error = caught;
        }

        expect(t.table.items.has(bad.instance_id), "lock released").to.equal(false);
        if (e.harmless) {
          expect(error).to.equal(undefined);
          expect(result).to.deep.include({ outcome: "claimed", instanceId: good.instance_id, attempts: 2 });
          expect(t.logger.withStep("claim_instance_unavailable")[0]?.fields).to.include({ instance_id: bad.instance_id, reason: "not_found" });
        } else {
          expect((error as Error).name).to.equal(e.name);
          expect(t.queue.depth(), "no further pickup").to.equal(1);
        }
      });
    }
  });

  it("releaseClaim deletes only the caller's own lock", async () => {
    const t = arrange();
    t.table.items.set("i-00000000000000abc", { owner: "wf-1", expiresAt: 9e9 });
    t.table.items.set("i-00000000000000def", { owner: "wf-2", expiresAt: 9e9 });

    expect(await releaseClaim(t.deps, TABLE, "i-00000000000000abc", "wf-1")).to.equal(true);
    expect(await releaseClaim(t.deps, TABLE, "i-00000000000000def", "wf-1")).to.equal(false);
    expect([...t.table.items.keys()]).to.deep.equal(["i-00000000000000def"]);
  });

  it("releaseClaim whose delete response was lost (the first attempt deleted the lock) resolves as released", async () => {
    const t = arrange();
    t.table.items.set("i-00000000000000abc", { owner: "wf-1", expiresAt: 9e9 });
    t.table.loseResponses("DeleteItemCommand");

    expect(await releaseClaim(t.deps, TABLE, "i-00000000000000abc", "wf-1")).to.equal(true);
    expect(t.table.items.size).to.equal(0);
  });
});
