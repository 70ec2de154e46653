import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SendMessageCommandInput } from "@aws-sdk/client-sqs";
import { RunInstancesCommand } from "@aws-sdk/client-ec2";
import type { SQSEvent } from "aws-lambda";
import { expect } from "chai";
import fc from "fast-check";
// aws-sdk-client-mock stubs on sinon's default sandbox, which keeps every fake it made: the
// per-event pools and queues below would pile up (4 GB at 10,000 events) without sinon.restore().
import sinon from "sinon";
import { type Advert, USAGE_CLASSES } from "../../functions/pool/advert";
import { pickup } from "../../functions/pool/pickup";
import { leaseKey } from "../../functions/pool/refill-class";
import { createRefillHandler } from "../../functions/pool/refill-handler";
import { FakeClock, FakePoolQueue, GPU_SMALL, QUEUE_URL, telemetry } from "../functions/helpers/pool-fakes";
import { arrange, CLS, pooled, REFILL_DLQ } from "../functions/helpers/pool-refill";
import {
  anyText,
  batchOf,
  type BodyCase,
  type FieldEdit,
  type FuzzRecord,
  INVALID_INT_TOKENS,
  INVALID_STRING_TOKENS,
  oddBody,
  partBody,
  rawFrom,
  recordCase,
  withField,
} from "./helpers/arbitraries";
import {
  assertMalformedQuarantined,
  assertPartialBatchResponse,
  assertValidNotQuarantined,
  injected,
  quarantinedOn,
  quarantineSendMessage,
} from "./helpers/contract";
import { checkProperty, PROPERTY_TIMEOUT_MS } from "./helpers/settings";

const eventOf = (records: readonly FuzzRecord[]): SQSEvent => ({ Records: records.map((r) => r.record) });
const positions = fc.array(fc.nat(), { maxLength: 3 });
const idsAt = (records: readonly FuzzRecord[], at: readonly number[]): Set<string> => new Set(at.map((i) => records[i % records.length]!.record.messageId));

// ---- Refill bodies from functions/pool/refill-message.ts; a class this stack does not have is quarantined too.

const refillObject = fc.record({
  resource_class: fc.constant(CLS.name),
  scheduled_time: fc.oneof(
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    fc.string({ minLength: 1, maxLength: 20 }),
  ),
});
const nearMissRefill: fc.Arbitrary<BodyCase> = fc.oneof(
  fc
    .tuple(
      refillObject,
      fc.constantFrom("resource_class", "scheduled_time"),
      fc.oneof(rawFrom([...INVALID_STRING_TOKENS, '""']), fc.constant<FieldEdit>({ kind: "drop" })),
    )
    .map(([o, field, edit]) => ({
      body: withField(o, field, edit),
      verdict: "malformed" as const,
      how: `${field} ${edit.kind === "drop" ? "missing" : edit.token}`,
    })),
  fc
    .tuple(
      refillObject,
      fc.oneof(
        fc.constantFrom("gpu-large", "GPU-SMALL", "gpu-small ", "x".repeat(100_000)),
        anyText(12).filter((s) => s.length > 0 && s !== CLS.name),
      ),
    )
    .map(([o, cls]) => ({ body: JSON.stringify({ ...o, resource_class: cls }), verdict: "malformed" as const, how: "unknown resource_class" })),
);

// ---- Adverts from functions/pool/advert.ts (AdvertSchema), for the gpu-small pool (GPU_SMALL).

const advertObject = fc
  .record({
    instance_id: fc.stringMatching(/^i-[0-9a-f]{8,17}$/),
    resource_class: fc.constant(GPU_SMALL.name),
    instance_type: fc.constantFrom(...GPU_SMALL.instanceTypes),
    usage_class: fc.constant(GPU_SMALL.usageClass),
    cpu: fc.constant(GPU_SMALL.cpu),
    memory_mib: fc.constant(GPU_SMALL.memoryMib),
    advertised_at: fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString()),
  })
  .map((a) => a as Advert & Record<string, unknown>);

type AdvertKind = "consistent" | "contradicting" | "malformed";
interface AdvertCase {
  body: string;
  kind: AdvertKind;
  how: string;
}

/** Well-formed adverts that contradict the gpu-small class: another class, type, size or purchase option. Discarded, like malformed ones. */
const contradicting: fc.Arbitrary<AdvertCase> = fc
  .tuple(
    advertObject,
    fc.constantFrom<[string, unknown]>(
      ["resource_class", "gpu-large"],
      ["instance_type", "c7g.large"],
      ["cpu", 8],
      ["memory_mib", 1024],
      ["usage_class", USAGE_CLASSES[1]],
    ),
  )
  .map(([a, [field, value]]) => ({ body: JSON.stringify({ ...a, [field]: value }), kind: "contradicting" as const, how: `${field} ${String(value)}` }));

const nearMissAdvert: fc.Arbitrary<AdvertCase> = fc
  .tuple(
    advertObject,
    fc.oneof(
      fc.tuple(fc.constantFrom("cpu", "memory_mib"), fc.oneof(rawFrom([...INVALID_INT_TOKENS, "0"]), fc.constant<FieldEdit>({ kind: "drop" }))),
      fc.tuple(
        fc.constantFrom("instance_id", "resource_class", "instance_type", "usage_class", "advertised_at"),
        fc.oneof(rawFrom([...INVALID_STRING_TOKENS, '""', '"i-XYZ"', '"SPOT"', '"yesterday"']), fc.constant<FieldEdit>({ kind: "drop" })),
      ),
    ),
  )
  .map(([a, [field, edit]]) => ({
    body: withField(a, field, edit),
    kind: "malformed" as const,
    how: `${field} ${edit.kind === "drop" ? "missing" : edit.token}`,
  }));

const advertCase: fc.Arbitrary<AdvertCase> = fc.oneof(
  { arbitrary: advertObject.map((a) => ({ body: JSON.stringify(a), kind: "consistent" as const, how: "well-formed" })), weight: 3 },
  // `cpu: 4.0` and `1e0`-style spellings are the same numbers: still consistent.
  {
    arbitrary: fc
      .tuple(advertObject, fc.constantFrom("4.0", "4e0", "0.4e1"))
      .map(([a, token]) => ({ body: withField(a, "cpu", { kind: "raw", token }), kind: "consistent" as const, how: `cpu ${token}` })),
    weight: 1,
  },
  { arbitrary: contradicting, weight: 2 },
  { arbitrary: nearMissAdvert, weight: 2 },
  {
    arbitrary: oddBody(advertObject.map((a) => JSON.stringify(a))).map((c: BodyCase) => ({ body: c.body, kind: "malformed" as const, how: c.how })),
    weight: 2,
  },
);

describe("fuzz: pool", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("refill consumer: malformed or unknown-class messages are quarantined with a reason; each class's well-formed messages share one refill run, failing only by injected faults", async () => {
    const record = recordCase(
      partBody(
        refillObject.map((o) => JSON.stringify(o)),
        nearMissRefill,
      ),
    );
    // A fresh pool per event; its stubs are given back after each run, or sinon's sandboxes pile up.
    const pools: Array<ReturnType<typeof arrange>> = [];
    const restorePools = () => {
      for (const p of pools.splice(0)) for (const m of [p.sqsMock, p.ec2.mock, p.table.mock]) m.restore();
      sinon.restore();
    };
    await checkProperty(
      "pool-refill",
      fc
        .asyncProperty(
          batchOf(record, { maxLength: 10 }),
          positions,
          fc.boolean(),
          fc.integer({ min: 0, max: 4 }),
          async (records, quarantineAt, runFails, existing) => {
            // Prepare: a fresh pool per event (its instances and leases are state), some instances already there.
            const t = arrange(
              Array.from({ length: existing }, (_, i) => pooled(i % 2 === 0 ? "running" : "stopped")),
              3,
            );
            pools.push(t);
            const failQuarantine = idsAt(records, quarantineAt);
            const launchFails = runFails && quarantineAt.length > 1;
            t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => failQuarantine));
            if (launchFails) t.ec2.mock.on(RunInstancesCommand).rejects(injected("RunInstances"));
            const handler = createRefillHandler(t.deps);
            // Act
            const response = await handler(eventOf(records));
            // Assess
            const failed = assertPartialBatchResponse(response, records);
            const quarantined = quarantinedOn(t.sqsMock, REFILL_DLQ);
            assertMalformedQuarantined(records, quarantined, failed, failQuarantine);
            assertValidNotQuarantined(records, quarantined);
            const valid = records.filter((r) => r.verdict === "valid");
            const runs = t.logger.entries.filter((e) => e.fields.step === "pool_counted" && e.fields.resource_class === CLS.name);
            expect(runs.length, "one refill run per class per batch").to.equal(valid.length > 0 ? 1 : 0);
            // A run needs launches only when fewer than 3 live instances exist; only then can RunInstances (injected) fail it.
            const runFailed = launchFails && t.ec2.calls("RunInstancesCommand") > 0;
            for (const r of valid)
              expect(failed.has(r.record.messageId), `refill message ${r.record.messageId} fails only when its run hit the injected fault`).to.equal(runFailed);
            expect(t.table.items.has(leaseKey(CLS.name)), "the run's lease is given back").to.equal(false);
          },
        )
        .afterEach(restorePools),
    );
  });

  it("pickup: malformed and contradicting adverts are deleted, discarded and counted, never re-queued; a suitable consistent advert is returned", async () => {
    // A fresh queue per event; its stub is given back after each run.
    const queues: FakePoolQueue[] = [];
    const restoreQueues = () => {
      for (const q of queues.splice(0)) q.mock.restore();
      sinon.restore();
    };
    await checkProperty(
      "pool-pickup",
      fc
        .asyncProperty(
          fc.array(advertCase, { minLength: 0, maxLength: 10 }),
          fc.record({ minCpu: fc.constantFrom(undefined, 2, 8), usageClass: fc.constantFrom(undefined, "on-demand" as const, "spot" as const) }),
          async (adverts, req) => {
            // Prepare
            const clock = new FakeClock();
            const queue = new FakePoolQueue(clock);
            queues.push(queue);
            const kinds = new Map<string, AdvertCase>();
            for (const a of adverts) queue.push(a.body);
            const { logger, metrics } = telemetry();
            const requirements = {
              ...(req.minCpu !== undefined ? { minCpu: req.minCpu } : {}),
              ...(req.usageClass !== undefined ? { usageClass: req.usageClass } : {}),
            };
            // Act
            const result = await pickup(
              { sqs: queue.sqs, clock: clock.read, logger, metrics },
              { queueUrl: QUEUE_URL, resourceClass: GPU_SMALL, requirements, requeueDelaySeconds: 30, tolerance: 2, deadline: clock.now + 60_000 },
            );
            // Assess
            expect(queue.mock.commandCalls(ReceiveMessageCommand).length, "one receive per cycle").to.equal(result.cycles);
            // Every advert taken off the queue was deleted at once, by its receipt handle.
            const takenIds = queue.mock.commandCalls(DeleteMessageCommand).map((c) => String(c.args[0].input.ReceiptHandle).replace(/^rh-/, ""));
            adverts.forEach((a, i) => kinds.set(`m${i + 1}`, a));
            const discarded = new Set(logger.withStep("advert_discarded").map((e) => String(e.fields.message_id)));
            expect(metrics.count("AdvertsDiscarded"), "each discard is counted").to.equal(logger.withStep("advert_discarded").length);
            for (const id of takenIds) {
              const a = kinds.get(id);
              if (!a) continue; // a re-queued copy
              if (a.kind === "consistent") expect(discarded.has(id), `consistent advert ${a.body.slice(0, 80)} is not discarded`).to.equal(false);
              else expect(discarded.has(id), `${a.kind} advert (${a.how}) ${JSON.stringify(a.body.slice(0, 80))} is discarded`).to.equal(true);
            }
            const requeued = queue.mock.commandCalls(SendMessageCommand).map((c) => (c.args[0].input as SendMessageCommandInput).MessageBody ?? "");
            for (const body of requeued) {
              const a = adverts.find((x) => x.body === body);
              expect(a?.kind, "only consistent adverts are re-queued").to.equal("consistent");
            }
            if (result.kind === "suitable") {
              expect(
                adverts.some((a) => a.kind === "consistent" && (JSON.parse(a.body) as Advert).instance_id === result.advert.instance_id),
                "the returned advert was a consistent one",
              ).to.equal(true);
              if (req.minCpu !== undefined) expect(result.advert.cpu).to.be.at.least(req.minCpu);
              if (req.usageClass !== undefined) expect(result.advert.usage_class).to.equal(req.usageClass);
            } else if (result.kind === "exhausted" && result.scope === "global") {
              // The queue was drained: every advert was seen, and none of the consistent ones suited.
              expect(takenIds.filter((id) => kinds.has(id)).length, "every original advert was taken").to.equal(adverts.length);
            }
            expect(result.kind, "the deadline is an hour away and the clock does not move").to.not.equal("deadline");
          },
        )
        .afterEach(restoreQueues),
    );
  });
});
