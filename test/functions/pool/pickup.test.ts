import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { pickup, type PickupRequest, PickupArgumentError } from "../../../functions/pool/pickup";
import { advert, FakeClock, FakePoolQueue, GPU_SMALL, QUEUE_URL, telemetry } from "../helpers/pool-fakes";

function arrange(options: { clock?: FakeClock } = {}) {
  const clock = options.clock ?? new FakeClock();
  const queue = new FakePoolQueue(clock);
  const t = telemetry();
  const deps = { sqs: queue.sqs, clock: clock.read, ...t };
  const request = (overrides: Partial<PickupRequest> = {}): PickupRequest => ({
    queueUrl: QUEUE_URL,
    resourceClass: GPU_SMALL,
    requirements: {},
    requeueDelaySeconds: 7,
    tolerance: 5,
    deadline: clock.now + 60_000,
    ...overrides,
  });
  return { clock, queue, deps, request, ...t };
}

describe("pickup manager (seed 004)", () => {
  describe("valid message: dequeue, delete, check frequency, compare, return", () => {
    it("returns the first suitable advert after deleting it, with one receive and one delete", async () => {
      const t = arrange();
      const a = advert();
      t.queue.push(a);

      const result = await pickup(
        t.deps,
        t.request({ requirements: { allowedInstanceTypes: ["g5.xlarge"], usageClass: "on-demand", minCpu: 4, minMemoryMib: 16384 } }),
      );

      expect(result).to.deep.equal({ kind: "suitable", advert: a, cycles: 1 });
      expect(t.queue.calls("ReceiveMessageCommand")).to.equal(1);
      expect(t.queue.calls("DeleteMessageCommand")).to.equal(1);
      expect(t.queue.calls("SendMessageCommand")).to.equal(0);
      expect(t.queue.depth()).to.equal(0);
      expect(t.logger.withStep("advert_suitable")[0]?.fields).to.include({ instance_id: a.instance_id });
      expect(t.metrics.count("AdvertsPickedUp")).to.equal(1);
    });

    it("long-polls one message at a time from the class's queue (a short poll samples servers: an empty answer would not mean an empty pool)", async () => {
      const t = arrange();
      t.queue.push(advert());
      await pickup(t.deps, t.request());
      expect(t.queue.mock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input).to.deep.equal({
        QueueUrl: QUEUE_URL,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
      });
    });
  });

  describe("unsuitable adverts are re-queued with the delay and the loop goes on", () => {
    const mismatches: Array<{ field: string; requirements: PickupRequest["requirements"]; advert: Parameters<typeof advert>[0] }> = [
      { field: "instance_type", requirements: { allowedInstanceTypes: ["g5.xlarge"] }, advert: { instance_type: "g6.xlarge" } },
      { field: "usage_class", requirements: { usageClass: "spot" }, advert: {} },
      { field: "cpu", requirements: { minCpu: 8 }, advert: {} },
      { field: "memory_mib", requirements: { minMemoryMib: 20000 }, advert: {} },
    ];
    for (const m of mismatches) {
      it(`re-queues on a ${m.field} mismatch`, async () => {
        const t = arrange();
        const unsuitable = advert(m.advert);
        t.queue.push(unsuitable);

        const result = await pickup(t.deps, t.request({ requirements: m.requirements }));

        expect(result).to.deep.include({ kind: "exhausted", scope: "local" });
        expect(t.logger.withStep("advert_requeued")[0]?.fields).to.include({ instance_id: unsuitable.instance_id, reason: m.field, delay_seconds: 7 });
      });
    }

    it("sends the unchanged body back with DelaySeconds = requeueDelaySeconds, then takes the next advert", async () => {
      const t = arrange();
      const wrongType = advert({ instance_type: "g6.xlarge" });
      const good = advert();
      t.queue.push(wrongType);
      t.queue.push(good);

      const result = await pickup(t.deps, t.request({ requirements: { allowedInstanceTypes: ["g5.xlarge"] }, requeueDelaySeconds: 42 }));

      expect(result).to.deep.include({ kind: "suitable", advert: good, cycles: 2 });
      const sent = t.queue.mock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
      expect(sent).to.deep.equal([{ QueueUrl: QUEUE_URL, MessageBody: JSON.stringify(wrongType), DelaySeconds: 42 }]);
      expect(t.queue.bodies()).to.deep.equal([JSON.stringify(wrongType)]);
      expect(t.metrics.count("AdvertsRequeued")).to.equal(1);
    });
  });

  describe("malformed or class-contradicting adverts are discarded (logged + counted), not re-queued", () => {
    const bad: Array<{ title: string; body: string | object; reason: RegExp }> = [
      { title: "not JSON", body: "{nope", reason: /not JSON/ },
      { title: "missing instance_id", body: { ...advert(), instance_id: undefined }, reason: /instance_id/ },
      { title: "bad instance id", body: advert({ instance_id: "gpu-1" }), reason: /instance_id: must be an EC2 instance id/ },
      { title: "negative cpu", body: advert({ cpu: -1 }), reason: /cpu/ },
      { title: "unknown usage class", body: { ...advert(), usage_class: "reserved" }, reason: /usage_class/ },
      { title: "bad timestamp", body: advert({ advertised_at: "yesterday" }), reason: /advertised_at/ },
      { title: "another class's advert", body: advert({ resource_class: "cpu-small" }), reason: /resource_class cpu-small on the gpu-small pool/ },
      { title: "a type outside the class", body: advert({ instance_type: "m7i.large" }), reason: /not in class gpu-small/ },
      { title: "cpu that contradicts the class", body: advert({ cpu: 8 }), reason: /cpu 8 differs/ },
      { title: "memory that contradicts the class", body: advert({ memory_mib: 1024 }), reason: /memory_mib 1024 differs/ },
      { title: "usage class that contradicts the class", body: advert({ usage_class: "spot" }), reason: /usage_class spot differs/ },
    ];
    for (const b of bad) {
      it(`discards ${b.title}`, async () => {
        const t = arrange();
        t.queue.push(b.body);

        const result = await pickup(t.deps, t.request());

        expect(result).to.deep.equal({ kind: "exhausted", scope: "global", cycles: 2 });
        expect(t.queue.calls("DeleteMessageCommand")).to.equal(1);
        expect(t.queue.calls("SendMessageCommand")).to.equal(0);
        const discarded = t.logger.withStep("advert_discarded");
        expect(discarded).to.have.length(1);
        expect(String(discarded[0]?.fields.reason)).to.match(b.reason);
        expect(t.metrics.count("AdvertsDiscarded")).to.equal(1);
      });
    }
  });

  it("discards a message without a body as not JSON, after deleting it by its receipt handle", async () => {
    const t = arrange();
    t.queue.mock
      .on(ReceiveMessageCommand)
      .resolvesOnce({ Messages: [{ MessageId: "m-empty", ReceiptHandle: "rh-empty" }] })
      .resolves({});
    t.queue.inFlight.add("rh-empty");

    expect(await pickup(t.deps, t.request())).to.deep.equal({ kind: "exhausted", scope: "global", cycles: 2 });

    expect(t.queue.mock.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input)).to.deep.equal([{ QueueUrl: QUEUE_URL, ReceiptHandle: "rh-empty" }]);
    expect(t.logger.withStep("advert_discarded")[0]?.fields).to.deep.include({ message_id: "m-empty", resource_class: "gpu-small" });
    expect(String(t.logger.withStep("advert_discarded")[0]?.fields.reason)).to.match(/^body is not JSON: .*end of JSON input/);
  });

  describe("exhaustion", () => {
    it("global: an empty receive returns exhausted/global at once", async () => {
      const t = arrange();

      const result = await pickup(t.deps, t.request());

      expect(result).to.deep.equal({ kind: "exhausted", scope: "global", cycles: 1 });
      expect(t.queue.calls("DeleteMessageCommand")).to.equal(0);
      expect(t.logger.withStep("pool_exhausted")[0]?.fields).to.include({ scope: "global", resource_class: "gpu-small" });
      expect(t.metrics.count("PoolExhaustedGlobal")).to.equal(1);
    });

    const boundary: Array<{ tolerance: number; copies: number; expected: "local" | "global" }> = [
      { tolerance: 5, copies: 5, expected: "global" }, // 5 sightings then empty: not local
      { tolerance: 5, copies: 6, expected: "local" }, // the 6th sighting crosses 5
      { tolerance: 1, copies: 2, expected: "local" },
    ];
    for (const b of boundary) {
      it(`tolerance ${b.tolerance}: ${b.copies} sightings of one unsuitable instance → ${b.expected}`, async () => {
        const t = arrange();
        const a = advert({ instance_type: "g6.xlarge" });
        // Copies that re-queueing does not add: the fake re-appends requeued messages, so drop them.
        t.queue.mock.on(SendMessageCommand).resolves({ MessageId: "dropped" });
        for (let i = 0; i < b.copies; i += 1) t.queue.push(a);

        const result = await pickup(t.deps, t.request({ tolerance: b.tolerance, requirements: { allowedInstanceTypes: ["g5.xlarge"] } }));

        expect(result.kind).to.equal("exhausted");
        expect(result).to.deep.include({ scope: b.expected });
        const requeues = t.logger.withStep("advert_requeued");
        expect(requeues, "every sighting, including the one crossing the tolerance, is re-queued").to.have.length(Math.min(b.copies, b.tolerance + 1));
        if (b.expected === "local") {
          expect(requeues.at(-1)?.fields).to.include({ reason: "tolerance_exceeded", sightings: b.tolerance + 1 });
          expect(t.metrics.count("PoolExhaustedLocal")).to.equal(1);
        }
      });
    }

    it("local: one unsuitable instance alone is seen 6 times, then exhausted, and its advert stays in the queue", async () => {
      const t = arrange();
      const a = advert({ usage_class: "on-demand" });
      t.queue.push(a);

      const result = await pickup(t.deps, t.request({ requirements: { usageClass: "spot" } }));

      expect(result).to.deep.equal({ kind: "exhausted", scope: "local", cycles: 6, instanceId: a.instance_id });
      expect(t.queue.bodies()).to.deep.equal([JSON.stringify(a)]);
      expect(t.queue.calls("SendMessageCommand")).to.equal(6);
    });

    it("local: logs the instance, its sightings and the tolerance it crossed", async () => {
      const t = arrange();
      const a = advert({ usage_class: "on-demand" });
      t.queue.push(a);

      await pickup(t.deps, t.request({ tolerance: 2, requirements: { usageClass: "spot" } }));

      expect(t.logger.withStep("pool_exhausted").map((e) => e.fields)).to.deep.equal([
        { step: "pool_exhausted", scope: "local", resource_class: "gpu-small", instance_id: a.instance_id, sightings: 3, tolerance: 2, cycles: 3 },
      ]);
    });

    it("frequency is checked before suitability: a suitable advert past the tolerance is re-queued, not returned", async () => {
      const t = arrange();
      const first = advert({ instance_type: "g6.xlarge" });
      const again = { ...first, instance_type: "g5.xlarge" }; // same instance, re-advertised with a suitable type
      t.queue.mock.on(SendMessageCommand).resolves({ MessageId: "dropped" });
      t.queue.push(first);
      t.queue.push(again);

      const result = await pickup(t.deps, t.request({ tolerance: 1, requirements: { allowedInstanceTypes: ["g5.xlarge"] } }));

      expect(result).to.deep.equal({ kind: "exhausted", scope: "local", cycles: 2, instanceId: first.instance_id });
      expect(t.queue.mock.commandCalls(SendMessageCommand).map((c) => c.args[0].input.MessageBody)).to.deep.equal([
        JSON.stringify(first),
        JSON.stringify(again),
      ]);
    });
  });

  describe("bounds", () => {
    it("stops at the deadline with a typed result, and starts no cycle after it", async () => {
      const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"), 1000);
      const t = arrange({ clock });
      for (let i = 0; i < 20; i += 1) t.queue.push(advert({ instance_type: "g6.xlarge" }));

      const result = await pickup(t.deps, t.request({ deadline: clock.now + 3000, requirements: { allowedInstanceTypes: ["g5.xlarge"] } }));

      expect(result).to.deep.equal({ kind: "deadline", cycles: 3 });
      expect(t.logger.withStep("pickup_deadline_reached").map((e) => e.fields)).to.deep.equal([
        { step: "pickup_deadline_reached", resource_class: "gpu-small", cycles: 3 },
      ]);
      expect(t.metrics.count("PickupDeadlineReached")).to.equal(1);
    });

    it("a deadline already past makes no AWS call", async () => {
      const t = arrange();
      t.queue.push(advert());

      const result = await pickup(t.deps, t.request({ deadline: t.clock.now }));

      expect(result).to.deep.equal({ kind: "deadline", cycles: 0 });
      expect(t.queue.mock.calls()).to.have.length(0);
    });

    const invalid: Array<[string, Partial<PickupRequest>, RegExp]> = [
      ["a delay over SQS's 900 s", { requeueDelaySeconds: 901 }, /requeueDelaySeconds/],
      ["a negative delay", { requeueDelaySeconds: -1 }, /requeueDelaySeconds/],
      ["a fractional delay", { requeueDelaySeconds: 1.5 }, /requeueDelaySeconds/],
      ["tolerance 0", { tolerance: 0 }, /tolerance/],
      ["a NaN deadline", { deadline: Number.NaN }, /deadline/],
    ];
    for (const [title, overrides, message] of invalid) {
      it(`rejects ${title} before any call`, async () => {
        const t = arrange();
        let error: unknown;
        try {
          await pickup(t.deps, t.request(overrides));
        } catch (e) {
          error = e;
        }
        expect(error).to.be.instanceOf(PickupArgumentError);
        expect((error as Error).name).to.equal("PickupArgumentError");
        expect((error as Error).message).to.match(message);
        expect(t.queue.mock.calls()).to.have.length(0);
      });
    }

    it("names every invalid argument in one error", async () => {
      const t = arrange();
      let error: unknown;
      try {
        await pickup(t.deps, t.request({ requeueDelaySeconds: 901, tolerance: 0, deadline: Number.NaN }));
      } catch (e) {
        error = e;
      }
      expect((error as Error).message).to.equal(
        "requeueDelaySeconds must be an integer in 0..900 (got 901); tolerance must be an integer ≥ 1 (got 0); deadline must be an epoch-ms number",
      );
    });

    const limits: Array<[string, Partial<PickupRequest>]> = [
      ["no delay", { requeueDelaySeconds: 0 }],
      ["SQS's longest delay, 900 s", { requeueDelaySeconds: 900 }],
      ["tolerance 1", { tolerance: 1 }],
    ];
    for (const [title, overrides] of limits) {
      it(`accepts ${title}`, async () => {
        const t = arrange();
        t.queue.push(advert());
        expect(await pickup(t.deps, t.request(overrides))).to.deep.include({ kind: "suitable" });
      });
    }

    it("a delete on receipt whose answer was lost is re-sent, so a malformed advert is still discarded and counted, not dropped unjudged", async () => {
      // Prepare: a malformed advert; its delete applies and its answer is lost (the SDK gave up)
      const t = arrange();
      const deps = { ...t.deps, resend: { rounds: 4, baseDelayMs: 0, sleep: async () => undefined } };
      t.queue.push("not json");
      t.queue.deleteAnswersLost = 1;
      // Act
      const result = await pickup(deps, t.request());
      // Assess: the re-send learned the delete had applied; the advert was judged
      expect(result).to.deep.include({ kind: "exhausted", scope: "global" });
      expect(t.queue.calls("DeleteMessageCommand")).to.equal(2);
      expect(t.logger.steps()).to.include("advert_discarded");
    });

    it("propagates an SQS error (after the SDK's retries) instead of looping", async () => {
      const t = arrange();
      t.queue.mock.on(ReceiveMessageCommand).rejects(new Error("AWS.SimpleQueueService.NonExistentQueue"));
      let error: unknown;
      try {
        await pickup(t.deps, t.request());
      } catch (e) {
        error = e;
      }
      expect((error as Error).message).to.contain("NonExistentQueue");
      expect(t.queue.calls("ReceiveMessageCommand")).to.equal(1);
    });
  });
});
