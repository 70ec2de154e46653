import { type AttributeValue, QueryCommand, UpdateItemCommand, type UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand, type DeleteParameterCommandInput, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import type { SQSEvent } from "aws-lambda";
import { expect } from "chai";
import fc from "fast-check";
import { DEFAULT_RESEND } from "../../functions/shared/resend";
import { createHousekeepingHandler } from "../../functions/fleet/housekeeping-handler";
import { TASK_TYPES, TERMINATION_STATUSES } from "../../functions/fleet/messages";
import { createTerminationHandler } from "../../functions/fleet/termination-handler";
import { HOUSEKEEPING_DLQ_URL, housekeepingConfig, mockedClients, TERMINATION_DLQ_URL, terminationConfig } from "../functions/helpers/fleet-deps";
import {
  anyText,
  batchOf,
  type BodyCase,
  type FieldEdit,
  type FuzzRecord,
  INVALID_INT_TOKENS,
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
  awsError,
  injected,
  quarantinedOn,
  quarantineSendMessage,
} from "./helpers/contract";
import { checkProperty, PROPERTY_TIMEOUT_MS } from "./helpers/settings";

const positions = fc.array(fc.nat(), { maxLength: 3 });
const idsAt = (records: readonly FuzzRecord[], at: readonly number[]): Set<string> => new Set(at.map((i) => records[i % records.length]!.record.messageId));
const eventOf = (records: readonly FuzzRecord[]): SQSEvent => ({ Records: records.map((r) => r.record) });

/** ISO 8601 with a zone, as the agent and EventBridge Scheduler write it: Z or an offset, with or without fractions. */
const isoTimestamp = fc
  .tuple(
    fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T00:00:00Z"), noInvalidDate: true }),
    fc.constantFrom("Z", "+00:00", "+05:30", "-08:00"),
    fc.boolean(),
  )
  .map(([d, zone, fraction]) => {
    const iso = d.toISOString();
    return `${fraction ? iso.slice(0, -1) : iso.slice(0, 19)}${zone}`;
  });
const badTimestamps = [
  "2025-02-30T00:00:00Z",
  "2025-13-01T00:00:00Z",
  "2025-01-01T24:00:00Z",
  "2025-01-01T00:00:00",
  "2025-01-01",
  "yesterday",
  "",
  "1700000000",
];

/**
 * DynamoDB's number type: up to 38 significant digits, magnitude 1E-130 to 9.99…E+125 (or zero).
 * UpdateItem with any other value fails with ValidationException, as the fake below does.
 */
function dynamoNumberProblem(n: string): string | undefined {
  const v = Number(n);
  if (!Number.isFinite(v)) return `${n} is not a number`;
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-130 || abs >= 1e126)) return `${n} is out of DynamoDB's range`;
  return undefined;
}
function numbersIn(values: Record<string, AttributeValue> | undefined): string[] {
  return Object.values(values ?? {}).flatMap((v) => ("N" in v && v.N !== undefined ? [v.N] : []));
}

// ---- Termination bodies from functions/fleet/messages.ts (TerminationMessageSchema).

const terminationObject = fc
  .record({
    instance_id: fc.stringMatching(/^i-[0-9a-f]{8,17}$/),
    job_id: fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }),
      anyText(20).filter((s) => s.length > 0),
      fc.constant("j".repeat(256)),
    ),
    status: fc.constantFrom(...TERMINATION_STATUSES),
    exit_code: fc.oneof(fc.integer({ min: -255, max: 255 }), fc.constantFrom(0, -0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER)),
    duration_seconds: fc.oneof(fc.double({ min: 1e-9, max: 1e6, noNaN: true }), fc.constantFrom(0, -0, 1e-130, 0.5, 86_400, 1e9, 9.99e125)),
    started_at: isoTimestamp,
    completed_at: isoTimestamp,
    error: fc.option(fc.oneof(fc.string({ maxLength: 64 }), anyText(30), fc.constant("e".repeat(4096))), { nil: undefined }),
    pad: padding,
  })
  .map(({ pad, error, ...fields }) => ({ ...pad, ...fields, ...(error !== undefined ? { error } : {}) }) as Record<string, unknown>);

const nearMissTermination: fc.Arbitrary<BodyCase> = fc
  .tuple(
    terminationObject,
    fc.oneof(
      fc.tuple(
        fc.constant("instance_id"),
        fc.oneof(
          fc
            .constantFrom("i-123", "i-XYZ12345", "0123456789abcdef0", "i-0123456789abcdef01", "")
            .map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
          rawFrom(INVALID_STRING_TOKENS),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(
        fc.constant("job_id"),
        fc.oneof(
          fc.constantFrom('""', JSON.stringify("j".repeat(257))).map((token) => ({ kind: "raw" as const, token })),
          rawFrom(INVALID_STRING_TOKENS),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(
        fc.constant("status"),
        fc.oneof(
          fc.constantFrom('"SUCCESS"', '"ok"', '""', '"failed"').map((token) => ({ kind: "raw" as const, token })),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(fc.constant("exit_code"), fc.oneof(rawFrom(INVALID_INT_TOKENS.filter((t) => t !== "-1")), fc.constant<FieldEdit>({ kind: "drop" }))),
      fc.tuple(
        fc.constant("duration_seconds"),
        fc.oneof(rawFrom(["-1", "-0.5", '"12"', "null", "NaN", "Infinity", "1e400", "[]"]), fc.constant<FieldEdit>({ kind: "drop" })),
      ),
      fc.tuple(
        fc.constantFrom("started_at", "completed_at"),
        fc.oneof(
          fc.constantFrom(...badTimestamps).map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
          rawFrom(["1700000000", "null"]),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(fc.constant("error"), rawFrom([JSON.stringify("e".repeat(4097)), "1", "null", "{}"])),
    ),
  )
  .map(([o, [field, edit]]) => ({
    body: withField(o, field, edit),
    verdict: "malformed" as const,
    how: `${field} ${edit.kind === "drop" ? "missing" : edit.token.slice(0, 40)}`,
  }));

/** Durations DynamoDB cannot store (the schema refuses them since the fuzz found them retried forever). */
const unstorableDuration: fc.Arbitrary<BodyCase> = fc
  .tuple(terminationObject, fc.constantFrom("1e308", "1e200", "5e-324", "1e-200", "1e126"))
  .map(([o, token]) => ({ body: withField(o, "duration_seconds", { kind: "raw", token }), verdict: "malformed" as const, how: `duration_seconds ${token}` }));

// ---- Housekeeping bodies: task_type, timestamp, and params per task (strict: unknown keys refused).

const paramsFor = {
  orphaned_instances: fc.record({ max_runtime_minutes: fc.integer({ min: 1, max: 10_080 }) }, { requiredKeys: [] }),
  stale_ssm: fc.record({ min_age_minutes: fc.integer({ min: 0, max: 10_080 }) }, { requiredKeys: [] }),
  old_jobs: fc.record({ retention_days: fc.integer({ min: 1, max: 3650 }) }, { requiredKeys: [] }),
  pool_audit: fc.constant({}),
} as const;
const housekeepingObject = fc
  .constantFrom(...TASK_TYPES)
  .chain((task_type) => fc.record({ task_type: fc.constant(task_type), timestamp: isoTimestamp, params: fc.option(paramsFor[task_type], { nil: undefined }) }))
  .map(({ params, ...rest }) => ({ ...rest, ...(params !== undefined ? { params } : {}) }) as Record<string, unknown>);

const nearMissHousekeeping: fc.Arbitrary<BodyCase> = fc
  .tuple(
    housekeepingObject,
    fc.oneof(
      fc.tuple(
        fc.constant("task_type"),
        fc.oneof(
          fc
            .constantFrom("orphaned-instances", "cleanup", "", "ORPHANED_INSTANCES", "x".repeat(300_000).slice(0, 200_000))
            .map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
          rawFrom(["1", "null", "[]"]),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(
        fc.constant("timestamp"),
        fc.oneof(
          fc.constantFrom(...badTimestamps).map((v) => ({ kind: "raw" as const, token: JSON.stringify(v) })),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(
        fc.constant("params"),
        rawFrom([
          '{"typo": 1}',
          '{"max_runtime_minutes": 0}',
          '{"min_age_minutes": -1}',
          '{"retention_days": 1.5}',
          '{"retention_days": 4000}',
          "[]",
          '"{}"',
          "1",
        ]),
      ),
    ),
  )
  .map(([o, [field, edit]]) => {
    const body = withField(o, field, edit);
    return { body, verdict: "malformed" as const, how: `${String(o.task_type)} ${field} ${edit.kind === "drop" ? "missing" : edit.token.slice(0, 40)}` };
  });

describe("fuzz: fleet consumers", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("termination consumer: malformed messages are quarantined with a reason; well-formed ones complete their job and delete its runner config, failing only by injected faults", async () => {
    // Prepare (once)
    const t = mockedClients();
    const world = { failUpdate: new Set<string>(), failDelete: new Set<string>(), failQuarantine: new Set<string>() };
    t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
      for (const n of numbersIn(input.ExpressionAttributeValues)) {
        const problem = dynamoNumberProblem(n);
        if (problem) throw awsError("ValidationException", `The parameter cannot be converted to a numeric value: ${problem}`);
      }
      if (world.failUpdate.has(input.Key?.job_id?.S ?? "")) throw injected("UpdateItem");
      return {};
    });
    t.ssmMock.on(DeleteParameterCommand).callsFake((input: DeleteParameterCommandInput) => {
      if (world.failDelete.has(input.Name ?? "")) throw injected("DeleteParameter");
      return {};
    });
    t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => world.failQuarantine));
    const config = terminationConfig();
    // The completing write is re-sent after a failure; the fuzz injects thousands, so no real pauses.
    const completionRetry = { ...DEFAULT_RESEND, sleep: async () => undefined };
    const handler = createTerminationHandler({ ...t.clients, logger: t.logger, metrics: t.metrics, config, completionRetry });
    const record = recordCase(
      partBody(
        terminationObject.map((o) => JSON.stringify(o)),
        fc.oneof({ arbitrary: nearMissTermination, weight: 9 }, { arbitrary: unstorableDuration, weight: 1 }),
      ),
    );

    await checkProperty(
      "fleet-termination",
      fc.asyncProperty(batchOf(record, { maxLength: 10 }), positions, positions, positions, async (records, updateAt, deleteAt, quarantineAt) => {
        // Prepare: faults keyed by the chosen records' job ids and runner parameters.
        const bodies = (ids: Set<string>) =>
          records
            .filter((r) => r.verdict === "valid" && ids.has(r.record.messageId))
            .map((r) => JSON.parse(r.record.body) as { job_id: string; instance_id: string });
        world.failUpdate = new Set(bodies(idsAt(records, updateAt)).map((b) => b.job_id));
        world.failDelete = new Set(bodies(idsAt(records, deleteAt)).map((b) => `${config.runnerParameterPath}/${b.instance_id}/config`));
        world.failQuarantine = idsAt(records, quarantineAt);
        t.logger.entries.length = 0;
        t.metrics.emitted.length = 0;
        for (const m of [t.dynamodbMock, t.ssmMock, t.sqsMock]) m.resetHistory();
        // Act
        const response = await handler(eventOf(records));
        // Assess
        const failed = assertPartialBatchResponse(response, records);
        const quarantined = quarantinedOn(t.sqsMock, TERMINATION_DLQ_URL);
        assertMalformedQuarantined(records, quarantined, failed, world.failQuarantine);
        assertValidNotQuarantined(records, quarantined);
        const updated = new Set(t.dynamodbMock.commandCalls(UpdateItemCommand).map((c) => c.args[0].input.Key?.job_id?.S));
        const deleted = new Set(t.ssmMock.commandCalls(DeleteParameterCommand).map((c) => c.args[0].input.Name));
        for (const r of records.filter((x) => x.verdict === "valid")) {
          const body = JSON.parse(r.record.body) as { job_id: string; instance_id: string };
          const parameter = `${config.runnerParameterPath}/${body.instance_id}/config`;
          expect(updated.has(body.job_id), `job ${JSON.stringify(body.job_id)} is marked complete`).to.equal(true);
          const injectedHere = world.failUpdate.has(body.job_id) || world.failDelete.has(parameter);
          expect(
            failed.has(r.record.messageId),
            `termination of ${JSON.stringify(body.job_id)} fails only by an injected fault (duration ${JSON.stringify(r.record.body.match(/"duration_seconds":([^,}]*)/)?.[1])})`,
          ).to.equal(injectedHere);
          if (!world.failUpdate.has(body.job_id)) expect(deleted.has(parameter), `the runner config of ${body.instance_id} is deleted`).to.equal(true);
        }
      }),
    );
  });

  it("housekeeping consumer: malformed or unknown tasks are quarantined with a reason; well-formed ones run their task, failing only by injected faults", async () => {
    // Prepare (once): an empty fleet, so every task runs to completion at once.
    const t = mockedClients();
    const world = { failQuarantine: new Set<string>(), ec2Fails: false };
    t.ec2Mock.on(DescribeInstancesCommand).callsFake(() => {
      if (world.ec2Fails) throw injected("DescribeInstances");
      return { Reservations: [] };
    });
    t.ssmMock.on(GetParametersByPathCommand).resolves({ Parameters: [] });
    t.dynamodbMock.on(QueryCommand).resolves({ Items: [], Count: 0 });
    t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => world.failQuarantine));
    const handler = createHousekeepingHandler({
      ...t.clients,
      logger: t.logger,
      metrics: t.metrics,
      config: housekeepingConfig({ pools: ["gpu"] }),
      now: () => new Date("2025-11-25T12:00:00Z"),
    });
    const record = recordCase(
      partBody(
        housekeepingObject.map((o) => JSON.stringify(o)),
        nearMissHousekeeping,
      ),
    );

    await checkProperty(
      "fleet-housekeeping",
      fc.asyncProperty(batchOf(record, { maxLength: 10 }), positions, fc.boolean(), async (records, quarantineAt, ec2Fails) => {
        world.failQuarantine = idsAt(records, quarantineAt);
        world.ec2Fails = ec2Fails && quarantineAt.length === 3;
        t.logger.entries.length = 0;
        for (const m of [t.dynamodbMock, t.ssmMock, t.sqsMock, t.ec2Mock]) m.resetHistory();
        // Act
        const response = await handler(eventOf(records));
        // Assess
        const failed = assertPartialBatchResponse(response, records);
        const quarantined = quarantinedOn(t.sqsMock, HOUSEKEEPING_DLQ_URL);
        assertMalformedQuarantined(records, quarantined, failed, world.failQuarantine);
        assertValidNotQuarantined(records, quarantined);
        const ran = new Set(t.logger.withStep("housekeeping_task_completed").map((e) => e.fields.message_id));
        for (const r of records.filter((x) => x.verdict === "valid")) {
          const { task_type } = JSON.parse(r.record.body) as { task_type: string };
          const needsEc2 = task_type === "orphaned_instances" || task_type === "pool_audit";
          if (world.ec2Fails && needsEc2) {
            expect(failed.has(r.record.messageId), `${task_type} fails while EC2 (injected) fails`).to.equal(true);
            continue;
          }
          expect(ran.has(r.record.messageId), `${task_type} task of ${r.record.messageId} runs to completion`).to.equal(true);
          expect(failed.has(r.record.messageId)).to.equal(false);
        }
      }),
    );
  });
});
