import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type ReceiveMessageCommandInput,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { expect } from "chai";
import fc from "fast-check";
import { MemoryLedgerStore } from "../../functions/worker/ledger";
import { createWorker } from "../../functions/worker/worker";
import { DLQ_URL, mockedWorkerDeps } from "../functions/helpers/worker-deps";
import {
  anyText,
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
import { assertMalformedQuarantined, assertValidNotQuarantined, quarantinedOn, quarantineSendMessage } from "./helpers/contract";
import { checkProperty, PROPERTY_TIMEOUT_MS } from "./helpers/settings";

/** The job types this task registers; any other type is quarantined as unknown. */
const TYPES = ["resize", "encode"] as const;

// ---- Job bodies from functions/worker/job.ts (jobSchema): job_id 1–256, type 1–64, payload required (any JSON), estimated_seconds in (0, 43200].

const jobObject = fc
  .record({
    job_id: fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }),
      anyText(16).filter((s) => s.length > 0),
      fc.constant("j".repeat(256)),
    ),
    type: fc.constantFrom(...TYPES),
    payload: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(null), padding),
    estimated_seconds: fc.option(fc.oneof(fc.double({ min: 1e-6, max: 43_200, noNaN: true }), fc.constantFrom(0.1, 1, 43_200)), { nil: undefined }),
  })
  .map(({ estimated_seconds, ...rest }) => ({ ...rest, ...(estimated_seconds !== undefined ? { estimated_seconds } : {}) }) as Record<string, unknown>);

const nearMissJob: fc.Arbitrary<BodyCase> = fc
  .tuple(
    jobObject,
    fc.oneof(
      fc.tuple(
        fc.constant("job_id"),
        fc.oneof(rawFrom([...INVALID_STRING_TOKENS, '""', JSON.stringify("j".repeat(257))]), fc.constant<FieldEdit>({ kind: "drop" })),
      ),
      // An unknown type is well-formed JSON but no handler takes it: quarantined all the same.
      fc.tuple(
        fc.constant("type"),
        fc.oneof(
          rawFrom([...INVALID_STRING_TOKENS, '""', '"Resize"', '"rm -rf /"', '"../bin/sh"', '"__proto__"', '"constructor"', JSON.stringify("t".repeat(65))]),
          fc.constant<FieldEdit>({ kind: "drop" }),
        ),
      ),
      fc.tuple(fc.constant("payload"), fc.constant<FieldEdit>({ kind: "drop" })),
      fc.tuple(fc.constant("estimated_seconds"), rawFrom(["0", "-0", "-1", "43201", "1e308", '"60"', "null", "NaN", "[]"])),
    ),
  )
  .map(([o, [field, edit]]) => ({
    body: withField(o, field, edit),
    verdict: "malformed" as const,
    how: `${field} ${edit.kind === "drop" ? "missing" : edit.token.slice(0, 40)}`,
  }));

/** A ReceiveMessage answer for a generated record. */
const asMessage = (r: FuzzRecord): Message => ({
  MessageId: r.record.messageId,
  ReceiptHandle: r.record.receiptHandle,
  Body: r.record.body,
  ...(r.record.attributes?.ApproximateReceiveCount !== undefined
    ? { Attributes: { ApproximateReceiveCount: r.record.attributes.ApproximateReceiveCount } }
    : {}),
});

describe("fuzz: worker", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("worker: malformed and unknown-type jobs are quarantined with a reason and deleted; well-formed ones run and are deleted, or left to retry only when their handler failed", async () => {
    const world = {
      failJobs: new Set<string>(),
      failQuarantine: new Set<string>(),
      ran: [] as Array<{ messageId: string; jobId: string }>,
      inbox: [] as Message[],
      stop: () => {},
    };
    const handler = async ({ job, messageId }: { job: { job_id: string }; messageId: string }) => {
      world.ran.push({ messageId, jobId: job.job_id });
      if (world.failJobs.has(messageId)) throw new Error("injected: job failed");
    };
    const t = mockedWorkerDeps({ config: { concurrency: 4, retryDelaySeconds: 5 }, handlers: Object.fromEntries(TYPES.map((type) => [type, handler])) });
    t.sqsMock.on(DeleteMessageCommand).resolves({});
    t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).callsFake(quarantineSendMessage(() => world.failQuarantine));
    // Registered once: each `.on()` adds a matcher that every later call walks through.
    t.sqsMock.on(ReceiveMessageCommand).callsFake((input: ReceiveMessageCommandInput) => {
      const batch = world.inbox.splice(0, input.MaxNumberOfMessages ?? 1);
      if (batch.length === 0) world.stop();
      return { Messages: batch };
    });
    const record = recordCase(
      partBody(
        jobObject.map((o) => JSON.stringify(o)),
        nearMissJob,
      ),
    );

    await checkProperty(
      "worker",
      fc.asyncProperty(
        batchOf(record, { maxLength: 10 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 2 }),
        async (records, failAt, quarantineAt) => {
          // Prepare: the queue holds this event's messages; the worker stops once it is empty.
          const at = (positions: number[]) => new Set(positions.map((i) => records[i % records.length]!.record.messageId));
          Object.assign(world, { failJobs: at(failAt), failQuarantine: at(quarantineAt), ran: [], inbox: records.map(asMessage) });
          t.logger.entries.length = 0;
          t.sqsMock.resetHistory();
          // A fresh job ledger per event: job ids repeat across events, and a completed one would not run again.
          (t.ledgerStore as MemoryLedgerStore).items.clear();
          const worker = createWorker(t.deps);
          world.stop = () => worker.stop("fuzz: queue empty");
          // Act
          await worker.run();
          // Assess
          expect(t.logger.withStep("job_crashed"), "no exception escapes a job's processing").to.deep.equal([]);
          const deleted = t.sqsMock.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input.ReceiptHandle);
          const retried = t.sqsMock
            .commandCalls(ChangeMessageVisibilityCommand)
            .filter((c) => c.args[0].input.VisibilityTimeout === 5)
            .map((c) => c.args[0].input.ReceiptHandle);
          const quarantined = quarantinedOn(t.sqsMock, DLQ_URL);
          // Not deleted stands for "failed" here: the message comes back after its visibility timeout.
          const notDeleted = new Set(records.filter((r) => !deleted.includes(r.record.receiptHandle)).map((r) => r.record.messageId));
          assertMalformedQuarantined(records, quarantined, notDeleted, world.failQuarantine);
          assertValidNotQuarantined(records, quarantined);
          const valid = records.filter((x) => x.verdict === "valid");
          const jobIdOf = (r: FuzzRecord) => (JSON.parse(r.record.body) as { job_id: string }).job_id;
          for (const r of valid) {
            const job_id = jobIdOf(r);
            const sameJob = valid.filter((x) => jobIdOf(x) === job_id);
            if (sameJob.length > 1) {
              // Several messages of one job (the ledger's key): one runs it; a success is never run again.
              expect(
                world.ran.some((x) => x.jobId === job_id),
                `job ${JSON.stringify(job_id)} runs`,
              ).to.equal(true);
              const succeeded = world.ran.filter((x) => x.jobId === job_id && !world.failJobs.has(x.messageId));
              expect(succeeded.length, `job ${JSON.stringify(job_id)} succeeds at most once`).to.be.at.most(1);
              continue;
            }
            expect(
              world.ran.some((x) => x.messageId === r.record.messageId && x.jobId === job_id),
              `job ${JSON.stringify(job_id)} runs with its message id`,
            ).to.equal(true);
            const failedJob = world.failJobs.has(r.record.messageId);
            expect(deleted.includes(r.record.receiptHandle), `job ${JSON.stringify(job_id)} is deleted exactly when it succeeded`).to.equal(!failedJob);
            if (failedJob) expect(retried.includes(r.record.receiptHandle), "a failed job is left to retry after the retry delay").to.equal(true);
          }
          expect(
            world.ran.every((x) => records.some((r) => r.verdict === "valid" && r.record.messageId === x.messageId)),
            "only well-formed jobs of a known type run",
          ).to.equal(true);
        },
      ),
    );
  });
});
