import { ListTasksCommand, RunTaskCommand, type RunTaskCommandInput } from "@aws-sdk/client-ecs";
import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand } from "@aws-sdk/client-sqs";
import { BatchGetCommand } from "@aws-sdk/lib-dynamodb";
import type { SQSEvent } from "aws-lambda";
import { expect } from "chai";
import fc from "fast-check";
import { ORIGIN_ATTRIBUTE, lineageOf } from "../../functions/retraining/defer";
import { createLauncherHandler } from "../../functions/retraining/handler";
import { TRIGGERS } from "../../functions/retraining/message";
import { mockedLauncherDeps, QUARANTINE_URL } from "../functions/helpers/retraining-deps";
import {
  batchOf,
  type BodyCase,
  type FieldEdit,
  type FuzzRecord,
  INVALID_STRING_TOKENS,
  padding,
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

// ---- Bodies from functions/retraining/message.ts: model_name in ECS's tag character set starting with a letter or digit, trigger one of TRIGGERS; extra keys ignored.

const modelName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 _.:/=+@-]{0,40}$/),
  fc.constantFrom("PascalStrategy", "PascalStrategy-btc", "a", "9", "A".repeat(256), "x/y=z+w@v:u.t_s r-q"),
);
const extras = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 6 }).map((k) => `x-${k}`),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 3 },
);
const retrainingObject = fc
  .record({ model_name: modelName, trigger: fc.constantFrom(...TRIGGERS), extra: extras, pad: padding })
  .map(({ extra, pad, ...fields }) => ({ ...extra, ...pad, ...fields }) as Record<string, unknown>);

const validRetraining = retrainingObject.map((o) => JSON.stringify(o));

/** Model names outside the documented set: empty, leading punctuation, `#` (the lease key), non-ASCII, too long, not a string. */
const badModelName = fc.oneof(
  fc
    .constantFrom("", "-lead", " lead", "#capacity-lease", "a#b", "ünïcode", "a\nb", "a".repeat(257), "tab\there", "emoji😀")
    .map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
  rawFrom(INVALID_STRING_TOKENS),
  fc.constant<FieldEdit>({ kind: "drop" }),
);
const badTrigger = fc.oneof(
  fc.constantFrom("", "Scheduled", "SCHEDULED", "manual ", "drift", "scheduled\u0000").map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
  rawFrom(INVALID_STRING_TOKENS),
  fc.constant<FieldEdit>({ kind: "drop" }),
);
const nearMissRetraining: fc.Arbitrary<BodyCase> = fc
  .tuple(retrainingObject, fc.oneof(fc.tuple(fc.constant("model_name"), badModelName), fc.tuple(fc.constant("trigger"), badTrigger)))
  .map(([o, [field, edit]]) => ({
    body: withField(o, field, edit),
    verdict: "malformed" as const,
    how: `${field} ${edit.kind === "drop" ? "missing" : edit.token}`,
  }));

/** Which records' RunTask or quarantine fail, by position (modulo the batch's length). */
const positions = fc.array(fc.nat(), { maxLength: 3 });
const idsAt = (records: readonly FuzzRecord[], at: readonly number[]): Set<string> => new Set(at.map((i) => records[i % records.length]!.record.messageId));
const eventOf = (records: readonly FuzzRecord[]): SQSEvent => ({ Records: records.map((r) => r.record) });

describe("fuzz: retraining launcher", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("malformed triggers are quarantined with a reason; well-formed ones are launched or deferred, failing only by injected faults", async () => {
    // Prepare (once): every DynamoDB write is accepted and nothing was launched before.
    const t = mockedLauncherDeps({ maxConcurrentTasks: 5 });
    const world = { failRunTask: new Set<string>(), failQuarantine: new Set<string>(), listTasksFails: false };
    t.dbMock.onAnyCommand().resolves({});
    t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
    t.ecsMock.on(ListTasksCommand).callsFake(() => {
      if (world.listTasksFails) throw injected("ListTasks");
      return { taskArns: [] };
    });
    let tasks = 0;
    t.ecsMock.on(RunTaskCommand).callsFake((input: RunTaskCommandInput) => {
      if (world.failRunTask.has(input.clientToken ?? "")) throw injected(`RunTask ${input.clientToken}`);
      return { tasks: [{ taskArn: `arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/t${++tasks}` }], failures: [] };
    });
    t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => world.failQuarantine));
    t.sqsMock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `copy-${e.Id}`, MD5OfMessageBody: "" })),
      Failed: [],
    }));
    const handler = createLauncherHandler(t.deps);
    const record = recordCase(partBody(validRetraining, nearMissRetraining));
    // The mapping allows batches above 10 (with a batching window); most events stay within 10.
    const batch = fc.oneof(
      { arbitrary: batchOf(record, { maxLength: 10 }), weight: 9 },
      { arbitrary: batchOf(record, { minLength: 11, maxLength: 40 }), weight: 1 },
    );

    await checkProperty(
      "retraining-launcher",
      fc.asyncProperty(batch, positions, positions, fc.boolean(), async (records, runTaskAt, quarantineAt, listFails) => {
        // Prepare: RunTask fails for the origins of the chosen records.
        const origins = (ids: Set<string>) => new Set(records.filter((r) => ids.has(r.record.messageId)).map((r) => lineageOf(r.record).originMessageId));
        world.failRunTask = origins(idsAt(records, runTaskAt));
        world.failQuarantine = idsAt(records, quarantineAt);
        world.listTasksFails = listFails && runTaskAt.length === 3;
        t.logger.entries.length = 0;
        t.metrics.added.length = 0;
        for (const m of [t.dbMock, t.ecsMock, t.sqsMock]) m.resetHistory();
        // Act
        const response = await handler(eventOf(records));
        // Assess
        const failed = assertPartialBatchResponse(response, records);
        const quarantined = quarantinedOn(t.sqsMock, QUARANTINE_URL);
        assertMalformedQuarantined(records, quarantined, failed, world.failQuarantine);
        assertValidNotQuarantined(records, quarantined);
        const launchedTokens = new Set(t.ecsMock.commandCalls(RunTaskCommand).map((c) => (c.args[0].input as RunTaskCommandInput).clientToken));
        const deferredOrigins = new Set(
          t.sqsMock
            .commandCalls(SendMessageBatchCommand)
            .flatMap((c) => c.args[0].input.Entries ?? [])
            .map((e) => e.MessageAttributes?.[ORIGIN_ATTRIBUTE]?.StringValue),
        );
        const injectedSomewhere = world.listTasksFails || world.failRunTask.size > 0;
        for (const r of records.filter((x) => x.verdict === "valid")) {
          const origin = lineageOf(r.record).originMessageId;
          const body = JSON.parse(r.record.body) as { model_name: string };
          expect(
            launchedTokens.has(origin) || deferredOrigins.has(origin) || failed.has(r.record.messageId),
            `well-formed trigger for ${JSON.stringify(body.model_name)} is launched, deferred or failed`,
          ).to.equal(true);
          if (failed.has(r.record.messageId))
            expect(injectedSomewhere, `well-formed trigger ${r.record.messageId} fails only after an injected fault`).to.equal(true);
        }
        const validOrigins = new Set(records.filter((r) => r.verdict === "valid").map((r) => lineageOf(r.record).originMessageId));
        for (const token of launchedTokens) expect(validOrigins.has(token ?? ""), "RunTask only for well-formed triggers").to.equal(true);
        expect(launchedTokens.size, "never more launches than the cap").to.be.at.most(5);
      }),
    );
  });
});
