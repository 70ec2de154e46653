import { DescribeInstancesCommand, StartInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import {
  ChangeMessageVisibilityBatchCommand,
  type ChangeMessageVisibilityBatchCommandInput,
  GetQueueAttributesCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { GetParameterCommand } from "@aws-sdk/client-ssm";
import type { SQSEvent } from "aws-lambda";
import { expect } from "chai";
import fc from "fast-check";
import type { IdleConfig } from "../../functions/ingest/config";
import { createDlqHandler } from "../../functions/ingest/dlq-handler";
import type { FetchFn } from "../../functions/ingest/gpu-http";
import { createIdleHandler } from "../../functions/gpu/idle-handler";
import { createWindowHandler } from "../../functions/ingest/window-handler";
import { fakeDescribeInstances, type FakeInstance, INGEST_URL, DLQ_URL, mockedIngestDeps, PARAM, QUARANTINE_URL } from "../functions/helpers/ingest-deps";
import {
  anyText,
  batchOf,
  type BodyCase,
  type FieldEdit,
  INVALID_INT_TOKENS,
  INVALID_STRING_TOKENS,
  padding,
  partBody,
  rawFrom,
  recordCase,
  tagWithMessageId,
  VALID_NON_NEGATIVE_INT_TOKENS,
  withField,
  type FuzzRecord,
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

/** The GPU both consumers find through SSM and DescribeInstances. */
const GPU: FakeInstance = { id: "i-0123456789abcdef0", state: "running", ip: "10.0.0.5", launchTime: new Date(1_600_000_000_000) };
/** The ingest harness's clock (helpers/ingest-deps.ts) and the DLQ consumer's age limit. */
const NOW = 1_700_000_060_000;
const MAX_AGE_SECONDS = 1_123_200;

// ---- Bodies from functions/ingest/payload.ts (WindowPayloadSchema: two non-empty strings, two integers ≥ 0, extra keys kept).

const text = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 24 }),
  anyText(16).filter((s) => s.length > 0),
  fc.uuid(),
);
const nonNegativeInt = fc.oneof(fc.nat(), fc.constantFrom(0, 1, Number.MAX_SAFE_INTEGER));
const extras = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 6 }).map((k) => `x-${k}`),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 3 },
);

const windowObject = fc
  .record({ sessionId: text, userId: text, windowIndex: nonNegativeInt, frameCount: nonNegativeInt, extra: extras, pad: padding })
  .map(({ extra, pad, ...fields }) => ({ ...extra, ...pad, ...fields }) as Record<string, unknown>);

/** Well-formed: as a producer writes it, or with an integer field spelled as JSON allows (`-0`, `1.0`, `1e2`). */
const validWindow = fc.oneof(
  windowObject.map((o) => JSON.stringify(o)),
  fc
    .tuple(windowObject, fc.constantFrom("windowIndex", "frameCount"), fc.constantFrom(...VALID_NON_NEGATIVE_INT_TOKENS))
    .map(([o, field, token]) => withField(o, field, { kind: "raw", token })),
);

/** One required field missing, empty, or of the wrong type or range; everything else well-formed. */
const nearMissWindow: fc.Arbitrary<BodyCase> = fc
  .tuple(
    windowObject,
    fc.oneof(
      fc.tuple(fc.constantFrom("windowIndex", "frameCount"), fc.oneof(rawFrom(INVALID_INT_TOKENS), fc.constant<FieldEdit>({ kind: "drop" }))),
      fc.tuple(fc.constantFrom("sessionId", "userId"), fc.oneof(rawFrom([...INVALID_STRING_TOKENS, '""']), fc.constant<FieldEdit>({ kind: "drop" }))),
    ),
  )
  .map(([o, [field, edit]]) => ({
    body: withField(o, field, edit),
    verdict: "malformed" as const,
    how: `${field} ${edit.kind === "drop" ? "missing" : edit.token}`,
  }));

const windowBatch = (maxLength: number) => batchOf(recordCase(partBody(validWindow, nearMissWindow)), { maxLength }, tagWithMessageId);

/** Which records' calls fail, by position in the batch (taken modulo its length). */
const positions = fc.array(fc.nat(), { maxLength: 3 });
const idsAt = (records: readonly FuzzRecord[], at: readonly number[]): Set<string> => new Set(at.map((i) => records[i % records.length]!.record.messageId));

/** A harness shared by every run (mocks are costly to build): histories and recorders are cleared per run. */
function ingestHarness() {
  const world = { failPosts: new Set<string>(), failQuarantine: new Set<string>(), ssmFails: false };
  const posts: Array<{ mid: string; body: Record<string, unknown> }> = [];
  const fetch: FetchFn = async (_url, init) => {
    const body = JSON.parse(String(init.body)) as Record<string, unknown>;
    const mid = String(body["~mid"]);
    posts.push({ mid, body });
    return world.failPosts.has(mid) ? new Response("injected", { status: 503 }) : new Response('{"status":"ok"}', { status: 200 });
  };
  const t = mockedIngestDeps({ fetch });
  const instances: FakeInstance[] = [{ ...GPU }];
  t.ssmMock.on(GetParameterCommand, { Name: PARAM }).callsFake(() => {
    if (world.ssmFails) throw injected("GetParameter");
    return { Parameter: { Name: PARAM, Value: GPU.id } };
  });
  fakeDescribeInstances(t.ec2Mock, instances);
  t.ec2Mock.on(StartInstancesCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => world.failQuarantine));
  t.sqsMock
    .on(ChangeMessageVisibilityBatchCommand)
    .callsFake((input: ChangeMessageVisibilityBatchCommandInput) => ({ Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id })), Failed: [] }));
  const reset = (w: Partial<typeof world>, gpuState: FakeInstance["state"]) => {
    Object.assign(world, { failPosts: new Set(), failQuarantine: new Set(), ssmFails: false }, w);
    instances[0]!.state = gpuState;
    posts.length = 0;
    t.logger.entries.length = 0;
    t.metrics.added.length = 0;
    for (const m of [t.ssmMock, t.ec2Mock, t.sqsMock]) m.resetHistory();
  };
  const parked = () =>
    t.sqsMock
      .commandCalls(ChangeMessageVisibilityBatchCommand)
      .filter((c) => c.args[0].input.QueueUrl === DLQ_URL)
      .flatMap((c) => c.args[0].input.Entries ?? []);
  return { ...t, posts, reset, parked };
}

/** The JSON a record's body parses to, written with sorted keys (so -0 and 0, key order, compare equal). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

const eventOf = (records: readonly FuzzRecord[]): SQSEvent => ({ Records: records.map((r) => r.record) });

describe("fuzz: ingest consumers", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("window consumer: malformed windows are quarantined with a reason; well-formed ones are POSTed, failing only by injected faults", async () => {
    const t = ingestHarness();
    const handler = createWindowHandler(t.deps);
    await checkProperty(
      "ingest-window",
      fc.asyncProperty(windowBatch(10), positions, positions, fc.boolean(), async (records, postAt, quarantineAt, ssmFails) => {
        // Prepare
        const failPosts = idsAt(records, postAt);
        const failQuarantine = idsAt(records, quarantineAt);
        const lookupFails = ssmFails && postAt.length > 2;
        t.reset({ failPosts, failQuarantine, ssmFails: lookupFails }, "running");
        // Act
        const response = await handler(eventOf(records));
        // Assess
        const failed = assertPartialBatchResponse(response, records);
        const quarantined = quarantinedOn(t.sqsMock, QUARANTINE_URL);
        assertMalformedQuarantined(records, quarantined, failed, failQuarantine);
        assertValidNotQuarantined(records, quarantined);
        for (const { record } of records.filter((r) => r.verdict === "valid")) {
          const mine = t.posts.filter((p) => p.mid === record.messageId);
          if (lookupFails) {
            expect(failed.has(record.messageId), "every window fails while the GPU lookup fails").to.equal(true);
            continue;
          }
          expect(mine.length, `well-formed window ${record.messageId} is POSTed`).to.be.greaterThan(0);
          expect(canonical(mine[0]!.body), "the POST carries the window as sent").to.equal(canonical(JSON.parse(record.body)));
          expect(failed.has(record.messageId), `well-formed window ${record.messageId} fails only when its POST failed`).to.equal(
            failPosts.has(record.messageId),
          );
        }
        expect(
          t.posts.every((p) => records.some((r) => r.verdict === "valid" && r.record.messageId === p.mid)),
          "only well-formed windows are POSTed",
        ).to.equal(true);
      }),
    );
  });

  it("DLQ consumer: malformed and expiring windows are quarantined; young well-formed ones are delivered, or parked while the GPU is down", async () => {
    const t = ingestHarness();
    const record = recordCase(partBody(validWindow, nearMissWindow));
    await checkProperty(
      "ingest-dlq-consumer",
      fc.asyncProperty(
        batchOf(record, { maxLength: 10 }, tagWithMessageId),
        positions,
        positions,
        fc.constantFrom("running", "running", "stopped", "lookup-fails"),
        async (records, postAt, quarantineAt, gpu) => {
          // Prepare: a fresh handler, so no warm-environment cache carries over between events.
          const failPosts = idsAt(records, postAt);
          const failQuarantine = idsAt(records, quarantineAt);
          t.reset({ failPosts, failQuarantine, ssmFails: gpu === "lookup-fails" }, gpu === "stopped" ? "stopped" : "running");
          const handler = createDlqHandler(t.deps);
          // Act
          const response = await handler(eventOf(records));
          // Assess
          const failed = assertPartialBatchResponse(response, records);
          const quarantined = quarantinedOn(t.sqsMock, QUARANTINE_URL);
          const expiring = (r: FuzzRecord) => {
            const sent = Number(r.record.attributes?.SentTimestamp);
            return Number.isFinite(sent) && Math.max(0, Math.floor((NOW - sent) / 1000)) >= MAX_AGE_SECONDS;
          };
          assertMalformedQuarantined(records, quarantined, failed, failQuarantine);
          assertValidNotQuarantined(
            records.filter((r) => !expiring(r)),
            quarantined,
          );
          const parked = new Set(t.parked().map((e) => e.ReceiptHandle));
          for (const r of records.filter((x) => x.verdict === "valid")) {
            const id = r.record.messageId;
            if (expiring(r)) {
              const reasons = quarantined.filter((q) => q.messageId === id).map((q) => q.reason);
              expect(reasons.length, `expiring window ${id} is quarantined`).to.be.greaterThan(0);
              expect(
                reasons.every((reason) => reason.startsWith("expiring_in_dlq")),
                "with the expiry as its reason",
              ).to.equal(true);
              if (!failQuarantine.has(id)) expect(failed.has(id)).to.equal(false);
              continue;
            }
            if (gpu === "running") {
              expect(
                t.posts.some((p) => p.mid === id),
                `well-formed window ${id} is delivered`,
              ).to.equal(true);
              expect(failed.has(id), `well-formed window ${id} fails only when its POST failed`).to.equal(failPosts.has(id));
            } else {
              expect(failed.has(id), `window ${id} waits (fails) while the GPU is down`).to.equal(true);
              expect(parked.has(r.record.receiptHandle), `window ${id} is parked`).to.equal(true);
            }
          }
          if (gpu === "stopped" && records.some((r) => r.verdict === "valid" && !expiring(r))) {
            expect(t.ec2Mock.commandCalls(StartInstancesCommand), "one start per batch").to.have.length(1);
          }
        },
      ),
    );
  });

  it("GPU idle consumer: every tick, whatever its body, is one idle check; StopInstances only for an idle running GPU; failures only from injected faults", async () => {
    // Prepare (once): the world each run varies.
    const config: IdleConfig = {
      instanceIdParam: PARAM,
      servicePort: 8080,
      statusPath: "/status",
      requestTimeoutMs: 1000,
      idleStopMinutes: 30,
      holdTag: "encache:gpu-hold",
      ingestQueueUrl: INGEST_URL,
      dlqUrl: DLQ_URL,
    };
    const world = { state: "running", depth: 0, status: { active: 0, idleSeconds: 3600 } as { active: number; idleSeconds: number } | "down", ssmFails: false };
    const fetch: FetchFn = async () => {
      if (world.status === "down") throw new TypeError("fetch failed");
      return new Response(JSON.stringify(world.status), { status: 200 });
    };
    const t = mockedIngestDeps({ fetch });
    t.ssmMock.on(GetParameterCommand).callsFake(() => {
      if (world.ssmFails) throw injected("GetParameter");
      return { Parameter: { Value: GPU.id } };
    });
    t.ec2Mock.on(DescribeInstancesCommand).callsFake(() => ({
      Reservations: [
        { Instances: [{ InstanceId: GPU.id, State: { Name: world.state }, PrivateIpAddress: GPU.ip, LaunchTime: new Date(NOW - 7_200_000), Tags: [] }] },
      ],
    }));
    t.ec2Mock
      .on(StopInstancesCommand)
      .resolves({ StoppingInstances: [{ InstanceId: GPU.id, PreviousState: { Name: "running" }, CurrentState: { Name: "stopping" } }] });
    t.sqsMock.on(GetQueueAttributesCommand).callsFake(() => ({
      Attributes: { ApproximateNumberOfMessages: String(world.depth), ApproximateNumberOfMessagesNotVisible: "0", ApproximateNumberOfMessagesDelayed: "0" },
    }));
    const handler = createIdleHandler({ ...t.deps, config, now: () => NOW });
    const tick = recordCase(partBody(fc.constant('{"check":"gpu-idle"}'), fc.constant({ body: "", verdict: "malformed" as const, how: "empty" })));
    await checkProperty(
      "ingest-gpu-idle",
      fc.asyncProperty(
        batchOf(tick, { maxLength: 10 }),
        fc.record({
          state: fc.constantFrom("running", "stopped", "pending"),
          depth: fc.constantFrom(0, 0, 1),
          status: fc.constantFrom<{ active: number; idleSeconds: number } | "down">(
            { active: 0, idleSeconds: 3600 },
            { active: 0, idleSeconds: 60 },
            { active: 2, idleSeconds: 9999 },
            "down",
          ),
          ssmFails: fc.boolean(),
        }),
        async (records, w) => {
          Object.assign(world, w);
          t.logger.entries.length = 0;
          for (const m of [t.ssmMock, t.ec2Mock, t.sqsMock]) m.resetHistory();
          // Act
          const response = await handler(eventOf(records));
          // Assess
          const failed = assertPartialBatchResponse(response, records);
          expect(failed.size, "a tick fails only when SSM (injected) fails").to.equal(w.ssmFails ? new Set(records.map((r) => r.record.messageId)).size : 0);
          expect(t.sqsMock.commandCalls(SendMessageCommand), "ticks are never quarantined: the body is not read").to.have.length(0);
          if (w.ssmFails) return;
          expect(t.logger.withStep("gpu_idle_check"), "one idle check per tick").to.have.length(records.length);
          // A running GPU with nothing queued stops when its service says it idled 1 h, or (silent) it ran 2 h.
          const idle = w.state === "running" && w.depth === 0 && (w.status === "down" || (w.status.active === 0 && w.status.idleSeconds >= 1800));
          const stops = t.ec2Mock.commandCalls(StopInstancesCommand).length;
          expect(stops, "StopInstances once per tick for an idle GPU, never otherwise").to.equal(idle ? records.length : 0);
        },
      ),
    );
  });
});
