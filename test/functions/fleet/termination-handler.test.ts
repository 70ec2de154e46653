import { type AttributeValue, UpdateItemCommand, type UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand } from "@aws-sdk/client-ssm";
import type { Context, SQSBatchResponse } from "aws-lambda";
import { expect } from "chai";
import { expiresAt } from "../../../functions/fleet/complete-job";
import { DEFAULT_RESEND, isRetryableError } from "../../../functions/shared/resend";
import {
  CLAIMANT_WAIT_STEP_MS,
  createTerminationHandler,
  MARK_RESEND_ROUNDS,
  type TerminationHandlerDeps,
  waitUntil,
} from "../../../functions/fleet/termination-handler";
import { conditionFailed } from "../helpers/dynamodb-errors";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { awsError, mockedClients, TABLE, terminationConfig, TERMINATION_DLQ_URL, terminationMessage } from "../helpers/fleet-deps";
import { FakeJobItems } from "../helpers/fleet-fakes";

const instant = async (): Promise<void> => undefined;

/** What a dropped connection looks like to the SDK once its own retries are spent: no HTTP answer. */
function connectionReset(): Error {
  return Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} });
}

function throttled(): Error {
  return Object.assign(new Error("Rate exceeded"), {
    name: "ThrottlingException",
    $fault: "client",
    $metadata: { httpStatusCode: 400 },
    $retryable: { throttling: true },
  });
}

function arrange(overrides: Partial<TerminationHandlerDeps> = {}) {
  const t = mockedClients();
  t.dynamodbMock.on(UpdateItemCommand).resolves({});
  t.ssmMock.on(DeleteParameterCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  const handler = createTerminationHandler({
    ...t.clients,
    logger: t.logger,
    metrics: t.metrics,
    config: terminationConfig(),
    completionRetry: { ...DEFAULT_RESEND, sleep: instant },
    now: () => NOW_MS,
    ...overrides,
  });
  return { ...t, handler };
}

/** The claim of the report: `pending` (or an unfinished claim) → this delivery. */
const isClaim = (input: UpdateItemCommandInput): boolean => input.UpdateExpression?.startsWith("SET #reported_by = :me, #claimed_at = :now") === true;
/** The `done` mark written after the report. Every other UpdateItem here is the completing write. */
const isMark = (input: UpdateItemCommandInput): boolean => input.UpdateExpression === "SET #reported = :me";
/** The clock of the report claims (epoch ms). */
const NOW_MS = Date.parse("2025-11-25T10:05:00Z");

/**
 * The jobs table behind the mock (a FakeJobItems), losing the answers of the first `lose.completion`
 * completing writes and the first `lose.claim` report claims: the write applies, then its answer is a
 * connection reset, as after a dropped connection once the SDK's own retries are spent.
 */
function lossyTable(t: ReturnType<typeof arrange>, items: Array<Record<string, AttributeValue>>, lose: Losses): FakeJobItems {
  const table = new FakeJobItems(items);
  const left = { completion: lose.completion ?? 0, claim: lose.claim ?? 0, mark: lose.mark ?? 0 };
  t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
    const kind = isClaim(input) ? "claim" : isMark(input) ? "mark" : "completion";
    let answer: { out: unknown } | { error: unknown };
    try {
      answer = { out: table.update(input, conditionFailed) };
    } catch (error) {
      answer = { error };
    }
    // The answer is lost whatever it was: an applied write's, or a failed condition's.
    if (left[kind]-- > 0) throw connectionReset();
    if ("error" in answer) throw answer.error;
    return answer.out;
  });
  return table;
}

interface Losses {
  completion?: number;
  claim?: number;
  mark?: number;
}

/** The job item as a failed condition returns it (ALL_OLD): completed, and by whom. */
function completedItem(
  completedBy: string | undefined,
  attempt: string | undefined,
  status = "completed",
  report: { by?: string; done?: boolean; claimedAt?: number } = {},
): Record<string, AttributeValue> {
  return {
    job_id: { S: "67890" },
    status: { S: status },
    ...(completedBy === undefined ? {} : { completed_by: { S: completedBy } }),
    ...(attempt === undefined ? {} : { completion_attempt: { S: attempt } }),
    ...(report.by === undefined ? {} : { completion_reported_by: { S: report.by } }),
    ...(report.done && report.by !== undefined ? { completion_reported: { S: report.by } } : {}),
    ...(report.claimedAt === undefined ? {} : { completion_report_claimed_at: { N: String(report.claimedAt) } }),
  };
}

describe("fleet termination handler", () => {
  describe("a fresh completion", () => {
    const cases: Array<{ status: string; exit: number; tableStatus: string; outcome: { name: string; dimensions: Record<string, string> } }> = [
      { status: "success", exit: 0, tableStatus: "completed", outcome: { name: "JobSuccess", dimensions: {} } },
      { status: "failure", exit: 2, tableStatus: "failed", outcome: { name: "JobFailure", dimensions: { Error: "exit_2" } } },
      { status: "timeout", exit: 124, tableStatus: "timeout", outcome: { name: "JobFailure", dimensions: { Error: "timeout" } } },
      { status: "interrupted", exit: 143, tableStatus: "interrupted", outcome: { name: "JobFailure", dimensions: { Error: "interrupted" } } },
    ];
    for (const c of cases) {
      it(`${c.status}: completes the job conditionally, emits JobDuration{Status} and ${c.outcome.name}, deletes the runner config`, async () => {
        const t = arrange();
        const record = sqsRecord(terminationMessage({ status: c.status, exit_code: c.exit, error: c.status === "success" ? undefined : "boom" }));

        const response = await t.handler(sqsEvent(record));

        expect(response.batchItemFailures).to.deep.equal([]);
        const update = t.dynamodbMock.commandCalls(UpdateItemCommand)[0]!.args[0].input;
        expect(update.TableName).to.equal(TABLE);
        expect(update.Key).to.deep.equal({ job_id: { S: "67890" } });
        expect(update.ConditionExpression).to.equal("#status = :running OR attribute_not_exists(#status)");
        expect(update.ExpressionAttributeValues).to.deep.include({
          ":status": { S: c.tableStatus },
          ":exit_code": { N: String(c.exit) },
          ":completed_at": { S: "2025-11-25T10:02:03Z" },
          ":running": { S: "running" },
          ":ttl": { N: String(expiresAt("2025-11-25T10:02:03Z", 7)) },
        });
        expect(t.ssmMock.commandCalls(DeleteParameterCommand)[0]!.args[0].input).to.deep.equal({ Name: "/runs-fleet/dev/runners/i-0123456789abcdef0/config" });
        expect(t.metrics.named("JobDuration")).to.deep.equal([{ name: "JobDuration", unit: "Seconds", value: 123, dimensions: { Status: c.status } }]);
        expect(t.metrics.named(c.outcome.name).map((m) => m.dimensions)).to.deep.equal([c.outcome.dimensions]);
        expect(t.metrics.emitted).to.have.length(2);
        expect(t.logger.steps()).to.deep.equal(["job_marked_complete", "ssm_parameter_deleted", "termination_processed"]);
        expect(t.metrics.published).to.equal(1);
      });
    }
  });

  it("writes the TTL as completion + retention in epoch seconds", () => {
    expect(expiresAt("2025-11-25T10:02:03Z", 7)).to.equal(Date.parse("2025-12-02T10:02:03Z") / 1000);
  });

  it("stores the error text only when the message carries one", async () => {
    const t = arrange();
    await t.handler(
      sqsEvent(sqsRecord(terminationMessage({ status: "failure", exit_code: 1, error: "OOM killed" })), sqsRecord(terminationMessage({ job_id: "2" }))),
    );
    const [withError, without] = t.dynamodbMock.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    expect(withError!.UpdateExpression).to.contain("#error = :error");
    expect(withError!.ExpressionAttributeValues![":error"]).to.deep.equal({ S: "OOM killed" });
    expect(without!.UpdateExpression).to.not.contain("#error");
  });

  it("a duplicate delivery (ConditionalCheckFailedException) succeeds, still deletes the parameter, and emits no job metrics", async () => {
    const t = arrange();
    t.dynamodbMock.on(UpdateItemCommand).rejects(awsError("ConditionalCheckFailedException"));

    const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));

    expect(response.batchItemFailures).to.deep.equal([]);
    expect(t.metrics.emitted).to.deep.equal([]);
    expect(t.ssmMock.commandCalls(DeleteParameterCommand)).to.have.length(1);
    expect(t.logger.steps()).to.deep.equal(["job_already_complete", "ssm_parameter_deleted", "termination_processed"]);
  });

  it("the completing write records its writer (message id and attempt token) and asks for the old item on a failed condition", async () => {
    const t = arrange({ newAttemptToken: () => "attempt-1" });
    const record = sqsRecord(terminationMessage());

    await t.handler(sqsEvent(record));

    const update = t.dynamodbMock.commandCalls(UpdateItemCommand)[0]!.args[0].input;
    expect(update.UpdateExpression).to.contain("#completed_by = :completed_by").and.to.contain("#completion_attempt = :completion_attempt");
    expect(update.ExpressionAttributeNames).to.deep.include({ "#completed_by": "completed_by", "#completion_attempt": "completion_attempt" });
    expect(update.ExpressionAttributeValues).to.deep.include({ ":completed_by": { S: record.messageId }, ":completion_attempt": { S: "attempt-1" } });
    expect(update.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
  });

  it("each delivery of a message writes a fresh attempt token, the message id stays", async () => {
    const t = arrange();
    const record = sqsRecord(terminationMessage());

    await t.handler(sqsEvent(record));
    await t.handler(sqsEvent(record));

    const values = t.dynamodbMock
      .commandCalls(UpdateItemCommand)
      .filter((c) => !isClaim(c.args[0].input) && !isMark(c.args[0].input))
      .map((c) => c.args[0].input.ExpressionAttributeValues ?? {});
    expect(values.map((v) => v[":completed_by"]?.S)).to.deep.equal([record.messageId, record.messageId]);
    expect(values[0]?.[":completion_attempt"]?.S).to.be.a("string").and.not.equal(values[1]?.[":completion_attempt"]?.S);
  });

  describe("a failed completion condition is resolved by who completed the job, and who reported it (the old item)", () => {
    const cases: Array<{
      title: string;
      item: (messageId: string) => Record<string, AttributeValue>;
      metrics: number;
      step: string;
      fields: Record<string, unknown>;
    }> = [
      {
        title:
          "this attempt (the write applied, its response was lost, the SDK's retry failed the condition): completed, its report claimed, metrics emitted once",
        item: (id) => completedItem(id, "attempt-1", "completed", { by: "pending" }),
        metrics: 1,
        step: "job_marked_complete",
        fields: { recovered: true },
      },
      {
        title: "another message, which reported it: a duplicate, no metrics",
        item: () => completedItem("m-other", "attempt-0", "completed", { by: "m-other attempt-0", done: true, claimedAt: NOW_MS / 1000 - 3600 }),
        metrics: 0,
        step: "job_already_complete",
        fields: { completed_by: "m-other", found_status: "completed", redelivery: false },
      },
      {
        title: "an earlier delivery of this message, which reported it: a duplicate, no metrics",
        item: (id) => completedItem(id, "attempt-0", "completed", { by: `${id} attempt-0`, done: true, claimedAt: NOW_MS / 1000 - 60 }),
        metrics: 0,
        step: "job_already_complete",
        fields: { redelivery: true },
      },
      {
        title: "an earlier delivery of this message that never reported it (every answer of its write was lost): this delivery reports it, once",
        item: (id) => completedItem(id, "attempt-0", "completed", { by: "pending" }),
        metrics: 1,
        step: "job_marked_complete",
        fields: { recovered: false, reported_for_earlier_delivery: true },
      },
      {
        title: "another message that never reported it: this delivery reports it, once",
        item: () => completedItem("m-other", "attempt-0", "completed", { by: "pending" }),
        metrics: 1,
        step: "job_marked_complete",
        fields: { completed_by: "m-other", reported_for_earlier_delivery: true },
      },
      {
        title: "an earlier delivery of this message claimed it and never finished (every answer of its claim was lost): this delivery takes it over",
        item: (id) => completedItem(id, "attempt-0", "completed", { by: `${id} attempt-0`, claimedAt: NOW_MS / 1000 - 60 }),
        metrics: 1,
        step: "job_marked_complete",
        fields: { reported_for_earlier_delivery: true },
      },
      {
        title: "another message's unfinished claim, younger than Lambda's longest timeout (it may still be reporting): left to it, no metrics",
        item: () => completedItem("m-other", "attempt-0", "completed", { by: "m-other attempt-0", claimedAt: NOW_MS / 1000 - 899 }),
        metrics: 0,
        step: "job_already_complete",
        fields: { completed_by: "m-other" },
      },
      {
        title: "another message's unfinished claim 15 minutes old (its invocation has ended): taken over, metrics once",
        item: () => completedItem("m-other", "attempt-0", "completed", { by: "m-other attempt-0", claimedAt: NOW_MS / 1000 - 900 }),
        metrics: 1,
        step: "job_marked_complete",
        fields: { took_over: "m-other attempt-0" },
      },
      {
        title: "nobody recorded (completed before writers and reports were recorded): a duplicate, no metrics",
        item: () => completedItem(undefined, undefined),
        metrics: 0,
        step: "job_already_complete",
        fields: { completed_by: null },
      },
      {
        title: "a job that is not running (queued): not completed by this message, no metrics",
        item: () => completedItem(undefined, undefined, "queued"),
        metrics: 0,
        step: "job_already_complete",
        fields: { found_status: "queued" },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const t = arrange({ newAttemptToken: () => "attempt-1" });
        const record = sqsRecord(terminationMessage());
        lossyTable(t, [c.item(record.messageId)], {});
        // Act
        const response = await t.handler(sqsEvent(record));
        // Assess
        expect(response.batchItemFailures).to.deep.equal([]);
        expect(t.metrics.named("JobDuration")).to.have.length(c.metrics);
        expect(t.metrics.named("JobSuccess")).to.have.length(c.metrics);
        expect(t.logger.withStep(c.step)[0]?.fields).to.include(c.fields);
        expect(t.ssmMock.commandCalls(DeleteParameterCommand)).to.have.length(1);
      });
    }
  });

  describe("whichever answer is lost, exactly one delivery logs the completion and emits its metrics", () => {
    const cases: Array<{
      title: string;
      lose: Losses;
      ssmFailures?: number;
      deliveries: number;
      claimRecovered?: true;
      markFailed?: true;
      leftToSweep?: true;
    }> = [
      { title: "nothing lost", lose: {}, deliveries: 1 },
      { title: "the completing write's answer, once (the re-send resolves it)", lose: { completion: 1 }, deliveries: 1 },
      { title: "every answer of the completing write (4 sends): the redelivery reports it", lose: { completion: 4 }, deliveries: 2 },
      { title: "the claim's answer, once (the re-send resolves it by this attempt's token)", lose: { claim: 1 }, deliveries: 1, claimRecovered: true },
      {
        title: "every answer of the claim (4 sends): the record fails before emitting, the redelivery takes the unfinished claim over",
        lose: { claim: 4 },
        deliveries: 2,
      },
      { title: "every answer of both, over three deliveries", lose: { completion: 4, claim: 4 }, deliveries: 3 },
      { title: "the done mark's answer, once (the re-send meets its own value)", lose: { mark: 1 }, deliveries: 1 },
      {
        title: "the done mark's answer through 15 sends: re-sent far longer than the other writes, the 16th resolves it",
        lose: { mark: MARK_RESEND_ROUNDS - 1 },
        deliveries: 1,
      },
      {
        title: "every answer of the done mark (16 sends): logged, the record still succeeds",
        lose: { mark: MARK_RESEND_ROUNDS },
        deliveries: 1,
        markFailed: true,
      },
      {
        title:
          "every answer of the done mark, then the SSM delete fails: the record still succeeds (the sweep takes the parameter), so no redelivery reports again",
        lose: { mark: MARK_RESEND_ROUNDS },
        ssmFailures: 1,
        deliveries: 1,
        markFailed: true,
        leftToSweep: true,
      },
      {
        title: "every answer of the claim, then the SSM delete fails too, then everything of the redelivery's completing write",
        lose: { claim: 4, completion: 5 },
        ssmFailures: 0,
        deliveries: 3,
      },
      { title: "none, but the SSM delete fails: the redelivery finds it reported", lose: {}, ssmFailures: 1, deliveries: 2 },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare: a running job; the message is redelivered until a delivery succeeds.
        let token = 0;
        const t = arrange({ newAttemptToken: () => `attempt-${++token}` });
        const record = sqsRecord(terminationMessage());
        const table = lossyTable(t, [{ job_id: { S: "67890" }, status: { S: "running" } }], c.lose);
        let ssmFailures = c.ssmFailures ?? 0;
        t.ssmMock.on(DeleteParameterCommand).callsFake(() => {
          if (ssmFailures-- > 0) throw awsError("InternalServerError");
          return {};
        });
        // Act
        const failures: number[] = [];
        for (let i = 0; i < 6; i++) {
          const response = await t.handler(sqsEvent(record));
          failures.push(response.batchItemFailures.length);
          if (response.batchItemFailures.length === 0) break;
        }
        // Assess
        expect(failures).to.have.length(c.deliveries);
        expect(t.metrics.named("JobDuration")).to.have.length(1);
        expect(t.metrics.named("JobSuccess")).to.have.length(1);
        expect(t.logger.withStep("job_marked_complete")).to.have.length(1);
        expect(t.logger.withStep("job_marked_complete")[0]?.fields["report_claim_recovered"]).to.equal(c.claimRecovered);
        const item = table.items.get("67890");
        expect(item?.completion_reported_by?.S).to.match(new RegExp(`^${record.messageId} attempt-\\d$`));
        // The done mark was written (its answer lost or not) by the claimant.
        expect(item?.completion_reported).to.deep.equal(item?.completion_reported_by);
        expect(t.logger.withStep("job_report_mark_failed").map((e) => e.fields)).to.deep.equal(
          c.markFailed
            ? [
                {
                  step: "job_report_mark_failed",
                  message_id: record.messageId,
                  job_id: "67890",
                  instance_id: "i-0123456789abcdef0",
                  error: "Error: socket hang up",
                },
              ]
            : [],
        );
        expect(t.logger.withStep("ssm_parameter_left_to_sweep").map((e) => e.fields["error"])).to.deep.equal(
          c.leftToSweep ? ["InternalServerError: InternalServerError"] : [],
        );
      });
    }

    it("a delivery whose done mark was written keeps failing its record on a failed SSM delete", async () => {
      // Prepare: nothing lost; the SSM delete fails once.
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      lossyTable(t, [{ job_id: { S: "67890" }, status: { S: "running" } }], {});
      t.ssmMock.on(DeleteParameterCommand).rejects(awsError("InternalServerError"));
      const record = sqsRecord(terminationMessage());
      // Act
      const response = await t.handler(sqsEvent(record));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.logger.withStep("ssm_parameter_left_to_sweep")).to.deep.equal([]);
    });

    it("the done mark stops re-sending at the reserve: the last quarter of the time the invocation started with", async () => {
      // Prepare: the invocation starts with 8 s left; each send of the mark takes 1 s and loses its answer.
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const table = new FakeJobItems([{ job_id: { S: "67890" }, status: { S: "running" } }]);
      let remainingMs = 8_000;
      let marks = 0;
      t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
        if (!isMark(input)) return table.update(input, conditionFailed);
        marks += 1;
        remainingMs -= 1_000;
        throw connectionReset();
      });
      const context = { getRemainingTimeInMillis: () => remainingMs } as Context;
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())), context);
      // Assess: a re-send only while at least 2 s (a quarter of 8 s) are left: sends with 8 s down to 2 s left, none with 1 s.
      expect(response.batchItemFailures).to.deep.equal([]);
      expect(marks).to.equal(7);
      expect(t.logger.withStep("job_report_mark_failed")).to.have.length(1);
    });

    it("a concurrent delivery that claimed the report first reports it; the completer only logs that it was reported elsewhere", async () => {
      // Prepare: the completing write applies, then another delivery claims the report before this one does.
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const record = sqsRecord(terminationMessage());
      const table = new FakeJobItems([{ job_id: { S: "67890" }, status: { S: "running" } }]);
      t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
        if (isClaim(input)) table.items.get("67890")!.completion_reported_by = { S: "m-concurrent attempt-9" };
        return table.update(input, conditionFailed);
      });
      // Act
      const response = await t.handler(sqsEvent(record));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.metrics.emitted).to.deep.equal([]);
      expect(t.logger.steps()).to.deep.equal(["job_completion_reported_elsewhere", "ssm_parameter_deleted", "termination_processed"]);
      expect(t.logger.withStep("job_completion_reported_elsewhere")[0]?.fields).to.include({ completed_here: true, reported_by: "m-concurrent attempt-9" });
      expect(t.logger.withStep("termination_processed")[0]?.fields).to.include({ duplicate: true });
    });

    it("a delivery that found the job completed, its report pending, and lost the claim to another only logs that it was reported elsewhere, as not completed here", async () => {
      // Prepare: another message completed the job and left its report pending; a concurrent delivery claims it first.
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const table = new FakeJobItems([completedItem("m-other", "attempt-3", "completed", { by: "pending" })]);
      t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
        if (isClaim(input)) table.items.get("67890")!.completion_reported_by = { S: "m-concurrent attempt-9" };
        return table.update(input, conditionFailed);
      });
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([]);
      expect(t.metrics.emitted).to.deep.equal([]);
      expect(t.logger.withStep("job_completion_reported_elsewhere")[0]?.fields).to.include({ completed_here: false, reported_by: "m-concurrent attempt-9" });
    });

    it("the claim is conditional on the pending report, records this delivery, the time and its invocation's deadline, asks for the old item; the done mark follows", async () => {
      // Prepare
      const t = { ...arrange({ newAttemptToken: () => "attempt-1" }), lastRecordId: "" };
      const record = sqsRecord(terminationMessage());
      t.lastRecordId = record.messageId;
      // Act
      await t.handler(sqsEvent(record));
      // Assess
      const writes = t.dynamodbMock.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
      const me = { S: `${t.lastRecordId} attempt-1` };
      expect(writes.find(isClaim)).to.deep.equal({
        TableName: TABLE,
        Key: { job_id: { S: "67890" } },
        UpdateExpression: "SET #reported_by = :me, #claimed_at = :now, #deadline = :deadline",
        ConditionExpression: "#reported_by = :pending",
        ExpressionAttributeNames: {
          "#reported_by": "completion_reported_by",
          "#claimed_at": "completion_report_claimed_at",
          "#deadline": "completion_report_deadline",
        },
        // Without a Lambda context, only Lambda's longest timeout (900 s) bounds the invocation.
        ExpressionAttributeValues: {
          ":me": me,
          ":now": { N: String(NOW_MS / 1000) },
          ":deadline": { N: String(NOW_MS / 1000 + 900) },
          ":pending": { S: "pending" },
        },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      });
      expect(writes.find(isMark)).to.deep.equal({
        TableName: TABLE,
        Key: { job_id: { S: "67890" } },
        UpdateExpression: "SET #reported = :me",
        ConditionExpression: "#reported_by = :me",
        ExpressionAttributeNames: { "#reported": "completion_reported", "#reported_by": "completion_reported_by" },
        ExpressionAttributeValues: { ":me": me },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      });
    });

    it("a claim that fails with another error (not re-sent) fails the record before anything is emitted", async () => {
      // Prepare
      const t = arrange();
      const table = new FakeJobItems([]);
      t.dynamodbMock.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
        if (isClaim(input)) throw Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } });
        return table.update(input, conditionFailed);
      });
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(response.batchItemFailures).to.have.length(1);
      expect(t.metrics.emitted).to.deep.equal([]);
      expect(t.ssmMock.commandCalls(DeleteParameterCommand)).to.have.length(0);
      expect(t.dynamodbMock.commandCalls(UpdateItemCommand).filter((c) => isClaim(c.args[0].input))).to.have.length(1);
    });
  });

  describe("a redelivery that arrives while the delivery before it still runs (the message's visibility expired first)", () => {
    /**
     * The local chaos run's termination consumer: an invocation has 30 real seconds, 600 s of the
     * function's clock at --speed 20, while the queue's visibility timeout is 180 s of that clock.
     */
    const LOCAL_TIMEOUT_MS = 600_000;
    const VISIBILITY_MS = 180_000;

    /** Both deliveries on one clock: a Lambda context per invocation, and pauses that move the clock. */
    function onOneClock(overrides: Partial<TerminationHandlerDeps> = {}) {
      const clock = { nowMs: NOW_MS, gate: undefined as (() => Promise<void>) | undefined };
      const sleep = async (ms: number): Promise<void> => {
        if (clock.gate) await clock.gate();
        clock.nowMs += ms;
      };
      const t = arrange({ now: () => clock.nowMs, completionRetry: { ...DEFAULT_RESEND, sleep }, ...overrides });
      /** An invocation starting now, with `timeoutMs` of the function's clock. */
      const invocation = (timeoutMs: number): Context => {
        const started = clock.nowMs;
        return { getRemainingTimeInMillis: () => started + timeoutMs - clock.nowMs } as Context;
      };
      return { ...t, clock, invocation };
    }

    /** The writer of an UpdateItem: the completing write's attempt token, or the token in a claim's or mark's `<message id> <attempt>`. */
    const attemptOf = (input: UpdateItemCommandInput): string | undefined =>
      input.ExpressionAttributeValues?.[":completion_attempt"]?.S ?? input.ExpressionAttributeValues?.[":me"]?.S?.split(" ")[1];

    /**
     * The sequence of job-c3-1714 in the chaos run at 30 %, seed 3. Delivery 1 (attempt-1): its
     * completing write applies and the answer is lost (the re-send meets its own item: `recovered`),
     * its claim applies and the answer is lost (the same: `report_claim_recovered`), it logs and
     * emits. Its invocation has outlived the message's visibility: when its `done` mark is sent, the
     * message was received again `arrivesAfterMs` after delivery 1 began, and delivery 2
     * (attempt-2, its own claim's answer lost too) runs now, until it reports, fails, or pauses; then
     * delivery 1's mark lands.
     */
    async function overlapping(arrivesAfterMs: number) {
      let token = 0;
      const t = onOneClock({ newAttemptToken: () => `attempt-${++token}` });
      const record = sqsRecord(terminationMessage());
      const table = new FakeJobItems([{ job_id: { S: "67890" }, status: { S: "running" } }]);
      const lose = new Set(["completion attempt-1", "claim attempt-1", "claim attempt-2"]);
      let second: Promise<SQSBatchResponse> | undefined;
      let secondEndedAtMs: number | undefined;
      let markLanded = (): void => undefined;
      const landed = new Promise<void>((resolve) => (markLanded = resolve));
      let secondPaused = (): void => undefined;
      const paused = new Promise<void>((resolve) => (secondPaused = resolve));
      t.dynamodbMock.on(UpdateItemCommand).callsFake(async (input: UpdateItemCommandInput) => {
        const kind = isClaim(input) ? "claim" : isMark(input) ? "mark" : "completion";
        const attempt = attemptOf(input);
        if (kind === "mark" && attempt === "attempt-1" && second === undefined) {
          t.clock.nowMs = NOW_MS + arrivesAfterMs;
          t.clock.gate = async () => {
            secondPaused();
            await landed;
          };
          second = t.handler(sqsEvent(record), t.invocation(LOCAL_TIMEOUT_MS));
          second.then(() => (secondEndedAtMs = t.clock.nowMs)).catch(() => undefined);
          await Promise.race([second, paused]);
          t.clock.gate = undefined;
        }
        let answer: { out: unknown } | { error: unknown };
        try {
          answer = { out: table.update(input, conditionFailed) };
        } catch (error) {
          answer = { error };
        }
        if (kind === "mark" && attempt === "attempt-1") markLanded();
        if (lose.delete(`${kind} ${attempt}`)) throw connectionReset();
        if ("error" in answer) throw answer.error;
        return answer.out;
      });
      const first = await t.handler(sqsEvent(record), t.invocation(LOCAL_TIMEOUT_MS));
      return { t, record, table, first, second: await second, secondEndedAtMs };
    }

    it("the chaos run's seed-3 double report (job-c3-1714): the redelivery waits until the first delivery's invocation has ended, finds its report done, and reports nothing", async () => {
      // Prepare, Act: delivery 2 receives the message 200 s after delivery 1 began (the visibility timeout is 180 s).
      const { t, record, table, first, second } = await overlapping(VISIBILITY_MS + 20_000);
      // Assess: one report, delivery 1's.
      expect(first.batchItemFailures).to.deep.equal([]);
      expect(second?.batchItemFailures).to.deep.equal([]);
      expect(t.metrics.named("JobDuration")).to.have.length(1);
      expect(t.metrics.named("JobSuccess")).to.have.length(1);
      expect(t.logger.withStep("job_marked_complete").map((e) => e.fields)).to.have.length(1);
      expect(t.logger.withStep("job_marked_complete")[0]?.fields).to.include({ recovered: true, report_claim_recovered: true });
      expect(t.logger.withStep("job_report_mark_failed")).to.deep.equal([]);
      // Delivery 2 waited out delivery 1's deadline (its start + 600 s, plus the 10 s margin), then lost the takeover to the done mark.
      const claimant = `${record.messageId} attempt-1`;
      expect(t.logger.withStep("report_claim_live_waited")[0]?.fields).to.include({
        claimant,
        claimant_deadline: String(NOW_MS / 1000 + 600),
        not_before: NOW_MS / 1000 + 610,
      });
      expect(t.logger.withStep("job_completion_reported_elsewhere")[0]?.fields).to.include({ completed_here: false, reported_by: claimant });
      const item = table.items.get("67890");
      expect(item?.completion_reported_by).to.deep.equal({ S: claimant });
      expect(item?.completion_reported).to.deep.equal({ S: claimant });
      expect(item?.completion_report_deadline).to.deep.equal({ N: String(NOW_MS / 1000 + 600) });
    });

    it("a copy received too early to outlive the first delivery within its own time fails its record before emitting; the message's next delivery finds the report done", async () => {
      // Prepare, Act: a second copy 100 s after delivery 1 began (an overlapping receive): waiting until 610 s would leave it
      // 90 s of its 600, less than the quarter it keeps.
      const { t, record, first, second, secondEndedAtMs } = await overlapping(100_000);
      t.clock.nowMs = NOW_MS + 100_000 + VISIBILITY_MS;
      const third = await t.handler(sqsEvent(record), t.invocation(LOCAL_TIMEOUT_MS));
      // Assess
      expect(first.batchItemFailures).to.deep.equal([]);
      expect(second?.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.logger.withStep("report_claim_live_deferred")[0]?.fields).to.include({
        claimant: `${record.messageId} attempt-1`,
        claimant_deadline: String(NOW_MS / 1000 + 600),
        not_before: NOW_MS / 1000 + 610,
      });
      // At once: it did not wait first and give up later.
      expect(secondEndedAtMs).to.equal(NOW_MS + 100_000);
      expect(third.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("job_already_complete")[0]?.fields).to.include({ redelivery: true });
      expect(t.metrics.named("JobDuration")).to.have.length(1);
      expect(t.logger.withStep("job_marked_complete")).to.have.length(1);
    });

    it("a claimant that may still run (every answer of its claim lost) is taken over by the redelivery once it has waited out the claimant's deadline, and the claim records that later time", async () => {
      // Prepare: delivery 1 (600 s) applies its claim and loses every answer; delivery 2 arrives 200 s later, with 600 s.
      let token = 0;
      const t = onOneClock({ newAttemptToken: () => `attempt-${++token}` });
      const record = sqsRecord(terminationMessage());
      const table = lossyTable(t, [{ job_id: { S: "67890" }, status: { S: "running" } }], { claim: 4 });
      const first = await t.handler(sqsEvent(record), t.invocation(LOCAL_TIMEOUT_MS));
      t.clock.nowMs = NOW_MS + 200_000;
      // Act
      const second = await t.handler(sqsEvent(record), t.invocation(LOCAL_TIMEOUT_MS));
      // Assess: it waited until the claimant's deadline (600 s) plus the 10 s margin, then took over, once.
      expect(first.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(second.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("report_claim_live_waited")[0]?.fields).to.include({
        claimant: `${record.messageId} attempt-1`,
        claimant_deadline: String(NOW_MS / 1000 + 600),
        not_before: NOW_MS / 1000 + 610,
      });
      expect(t.logger.withStep("job_marked_complete")[0]?.fields).to.include({ took_over: `${record.messageId} attempt-1` });
      expect(t.metrics.named("JobDuration")).to.have.length(1);
      const item = table.items.get("67890");
      expect(item?.completion_reported).to.deep.equal({ S: `${record.messageId} attempt-2` });
      expect(item?.completion_report_claimed_at).to.deep.equal({ N: String(NOW_MS / 1000 + 610) });
      // Its own deadline: the time it had left after the wait (600 - 410 s).
      expect(item?.completion_report_deadline).to.deep.equal({ N: String(NOW_MS / 1000 + 800) });
    });

    it("a claimant that has ended (every answer of its claim lost, its 30 s invocation over) is taken over at once by the redelivery 180 s later", async () => {
      // Prepare: AWS's sizing, a 30 s timeout and a 180 s visibility; delivery 1's claim applies, every answer lost.
      let token = 0;
      const t = onOneClock({ newAttemptToken: () => `attempt-${++token}` });
      const record = sqsRecord(terminationMessage());
      const table = lossyTable(t, [{ job_id: { S: "67890" }, status: { S: "running" } }], { claim: 4 });
      // Act
      const first = await t.handler(sqsEvent(record), t.invocation(30_000));
      t.clock.nowMs = NOW_MS + VISIBILITY_MS;
      const second = await t.handler(sqsEvent(record), t.invocation(30_000));
      // Assess
      expect(first.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(second.batchItemFailures).to.deep.equal([]);
      expect(t.logger.steps().filter((s) => s.startsWith("report_claim_live"))).to.deep.equal([]);
      expect(t.logger.withStep("job_marked_complete")[0]?.fields).to.include({ took_over: `${record.messageId} attempt-1` });
      expect(t.metrics.named("JobDuration")).to.have.length(1);
      expect(table.items.get("67890")?.completion_reported).to.deep.equal({ S: `${record.messageId} attempt-2` });
    });
  });

  describe("waitUntil: waiting out a live claimant within the invocation's time", () => {
    /**
     * A clock that each pause moves by `rate` × the pause (0: a clock that does not move, as a
     * test's), and the pauses taken. More than 20 pauses is a wait that would not end: it throws.
     */
    function clockAndPauses(rate: number) {
      const clock = { nowMs: 0 };
      const pauses: number[] = [];
      const sleep = async (ms: number): Promise<void> => {
        pauses.push(ms);
        if (pauses.length > 20) throw new Error(`a wait that does not end: ${pauses.join(", ")}`);
        clock.nowMs += ms * rate;
      };
      return { now: () => clock.nowMs, sleep, pauses };
    }
    const noContext = { context: undefined, reserveMs: 0 };
    /** An invocation with `remainingMs` left whatever the clock says, keeping `reserveMs`. */
    const withRemaining = (remainingMs: number, reserveMs: number) => ({ context: { getRemainingTimeInMillis: () => remainingMs } as Context, reserveMs });

    const cases = [
      {
        title: "a clock that follows the pauses: pauses of at most one step until the time",
        rate: 1,
        until: 2_500,
        expected: true,
        pauses: [1_000, 1_000, 500],
      },
      {
        title: "a clock that does not move: it ends once the pauses add up to the whole wait",
        rate: 0,
        until: 3_000,
        expected: true,
        pauses: [1_000, 1_000, 1_000],
      },
      {
        title: "a clock that runs ahead of the pauses: it ends when the time is reached (exactly), before the pauses add up",
        rate: 1.5,
        until: 3_000,
        expected: true,
        pauses: [1_000, 1_000],
      },
      { title: "a time already reached: no pause", rate: 1, until: 0, expected: true, pauses: [] },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const { now, sleep, pauses } = clockAndPauses(c.rate);
        // Act
        const waited = await waitUntil(c.until, now, sleep, noContext);
        // Assess
        expect(waited).to.equal(c.expected);
        expect(pauses).to.deep.equal(c.pauses);
        expect(Math.max(0, ...pauses)).to.be.at.most(CLAIMANT_WAIT_STEP_MS);
      });
    }

    it("waits when the invocation keeps exactly its reserve after the wait", async () => {
      // Prepare: 3 s to wait, 3.5 s left, 0.5 s kept.
      const { now, sleep, pauses } = clockAndPauses(1);
      // Act
      const waited = await waitUntil(3_000, now, sleep, withRemaining(3_500, 500));
      // Assess
      expect(waited).to.equal(true);
      expect(pauses).to.deep.equal([1_000, 1_000, 1_000]);
    });

    it("refuses at once, without a pause, when waiting would cut into the reserve", async () => {
      // Prepare: 3 s to wait, 3.499 s left, 0.5 s kept.
      const { now, sleep, pauses } = clockAndPauses(1);
      // Act
      const waited = await waitUntil(3_000, now, sleep, withRemaining(3_499, 500));
      // Assess
      expect(waited).to.equal(false);
      expect(pauses).to.deep.equal([]);
    });
  });

  describe("the SDK gave up on the completing write (its attempts or its retry quota ran out)", () => {
    it("sends the same write again (same token): the applied first attempt resolves as this attempt's completion, metrics once", async () => {
      // Prepare: the first send applied, but every answer the SDK saw was lost; the re-send meets its own item
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const record = sqsRecord(terminationMessage());
      lossyTable(t, [], { completion: 1 });
      // Act
      const response = await t.handler(sqsEvent(record));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([]);
      const sends = t.dynamodbMock
        .commandCalls(UpdateItemCommand)
        .map((c) => c.args[0].input)
        .filter((i) => !isClaim(i) && !isMark(i));
      expect(sends).to.have.length(2);
      expect(sends[1]).to.deep.equal(sends[0]);
      expect(t.metrics.named("JobDuration")).to.have.length(1);
      expect(t.logger.withStep("job_marked_complete")[0]?.fields).to.include({ recovered: true });
    });

    it("gives up after 4 sends: the record fails and emits nothing, for the redelivery to resolve", async () => {
      // Prepare
      const t = arrange();
      t.dynamodbMock.on(UpdateItemCommand).rejects(throttled());
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(response.batchItemFailures).to.have.length(1);
      expect(t.dynamodbMock.commandCalls(UpdateItemCommand)).to.have.length(4);
      expect(t.metrics.emitted).to.deep.equal([]);
    });

    it("does not re-send after a client fault (it would fail the same way)", async () => {
      // Prepare
      const t = arrange();
      t.dynamodbMock
        .on(UpdateItemCommand)
        .rejects(Object.assign(new Error("bad"), { name: "ValidationException", $fault: "client", $metadata: { httpStatusCode: 400 } }));
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(response.batchItemFailures).to.have.length(1);
      expect(t.dynamodbMock.commandCalls(UpdateItemCommand)).to.have.length(1);
    });

    it("waits 100, 200 and 400 ms between the sends", async () => {
      // Prepare
      const waits: number[] = [];
      const t = arrange({ completionRetry: { ...DEFAULT_RESEND, sleep: async (ms) => void waits.push(ms) } });
      t.dynamodbMock.on(UpdateItemCommand).rejects(connectionReset());
      // Act
      await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(waits).to.deep.equal([100, 200, 400]);
    });
  });

  describe("isRetryableError", () => {
    const cases: Array<{ error: unknown; retryable: boolean; why: string }> = [
      { error: connectionReset(), retryable: true, why: "no HTTP answer (a reset)" },
      { error: throttled(), retryable: true, why: "throttling" },
      {
        error: Object.assign(new Error("x"), { name: "InternalServerError", $fault: "server", $metadata: { httpStatusCode: 500 } }),
        retryable: true,
        why: "a server fault",
      },
      {
        error: Object.assign(new Error("x"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: { httpStatusCode: 400 } }),
        retryable: true,
        why: "throughput exceeded",
      },
      {
        error: Object.assign(new Error("x"), { name: "ValidationException", $fault: "client", $metadata: { httpStatusCode: 400 } }),
        retryable: false,
        why: "a validation error",
      },
      {
        error: Object.assign(new Error("x"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } }),
        retryable: false,
        why: "access denied",
      },
      { error: "not an error", retryable: false, why: "not an Error" },
    ];
    for (const c of cases) {
      it(`${c.retryable ? "re-sends" : "does not re-send"} after ${c.why}`, () => {
        expect(isRetryableError(c.error)).to.equal(c.retryable);
      });
    }
  });

  it("ParameterNotFound on the delete is a success", async () => {
    const t = arrange();
    t.ssmMock.on(DeleteParameterCommand).rejects(awsError("ParameterNotFound"));

    const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));

    expect(response.batchItemFailures).to.deep.equal([]);
    expect(t.logger.steps()).to.include("ssm_parameter_not_found");
  });

  it("a failing SSM delete fails the record, after the job metrics were emitted once (a retry is a duplicate)", async () => {
    const t = arrange();
    t.ssmMock.on(DeleteParameterCommand).rejects(awsError("InternalServerError"));
    const record = sqsRecord(terminationMessage());

    const response = await t.handler(sqsEvent(record));
    t.dynamodbMock.on(UpdateItemCommand).rejects(awsError("ConditionalCheckFailedException"));
    t.ssmMock.on(DeleteParameterCommand).resolves({});
    const retry = await t.handler(sqsEvent(record));

    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(retry.batchItemFailures).to.deep.equal([]);
    expect(t.metrics.named("JobDuration")).to.have.length(1);
    expect(t.metrics.named("JobSuccess")).to.have.length(1);
  });

  it("a failing UpdateItem fails the record without metrics or SSM delete", async () => {
    const t = arrange();
    t.dynamodbMock.on(UpdateItemCommand).rejects(awsError("ProvisionedThroughputExceededException"));
    const record = sqsRecord(terminationMessage());

    const response = await t.handler(sqsEvent(record));

    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(t.metrics.emitted).to.deep.equal([]);
    expect(t.ssmMock.commandCalls(DeleteParameterCommand)).to.have.length(0);
  });

  describe("malformed messages are quarantined in the termination DLQ with the reason", () => {
    const cases: Array<[string, string | Record<string, unknown>, RegExp]> = [
      ["not JSON", "{nope", /body is not JSON/],
      ["no instance_id", terminationMessage({ instance_id: undefined }), /instance_id/],
      ["a bad instance id", terminationMessage({ instance_id: "host-1" }), /instance_id: must be an EC2 instance id/],
      ["an unknown status", terminationMessage({ status: "done" }), /status/],
      ["a fractional exit code", terminationMessage({ exit_code: 1.5 }), /exit_code/],
      ["a negative duration", terminationMessage({ duration_seconds: -1 }), /duration_seconds/],
      ["a timestamp without zone", terminationMessage({ completed_at: "2025-11-25 10:02:03" }), /completed_at/],
      ["an empty job id", terminationMessage({ job_id: "" }), /job_id/],
    ];
    for (const [title, body, reason] of cases) {
      it(title, async () => {
        const t = arrange();
        const record = sqsRecord(body);

        const response = await t.handler(sqsEvent(record));

        expect(response.batchItemFailures).to.deep.equal([]);
        const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]!.args[0].input;
        expect(sent.QueueUrl).to.equal(TERMINATION_DLQ_URL);
        expect(sent.MessageBody).to.equal(record.body);
        expect(sent.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(reason);
        expect(t.dynamodbMock.calls()).to.have.length(0);
        expect(t.ssmMock.calls()).to.have.length(0);
      });
    }
  });

  it("a quarantine that cannot be sent fails the record, so it is not lost", async () => {
    const t = arrange();
    t.sqsMock.on(SendMessageCommand).rejects(awsError("AccessDenied"));
    const record = sqsRecord("{nope");

    const response = await t.handler(sqsEvent(record));

    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
  });

  it("processes a mixed batch independently: one failure does not fail the others", async () => {
    const t = arrange();
    t.dynamodbMock.on(UpdateItemCommand, { Key: { job_id: { S: "bad" } } }).rejects(awsError("InternalServerError"));
    const ok = sqsRecord(terminationMessage({ job_id: "good" }));
    const bad = sqsRecord(terminationMessage({ job_id: "bad" }));

    const response = await t.handler(sqsEvent(ok, bad));

    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: bad.messageId }]);
    expect(t.metrics.named("JobSuccess")).to.have.length(1);
  });

  describe("the job item the completing write leaves (the update applied as DynamoDB applies it)", () => {
    /** The item of a job the worker started: queued → running, with its start time. */
    const runningJob = (startedAt = "2025-11-25T09:59:00Z"): Record<string, AttributeValue> => ({
      job_id: { S: "67890" },
      status: { S: "running" },
      instance_id: { S: "i-0123456789abcdef0" },
      started_at: { S: startedAt },
    });
    const written = (record: { messageId: string }, extra: Record<string, AttributeValue> = {}): Record<string, AttributeValue> => ({
      job_id: { S: "67890" },
      status: { S: "completed" },
      exit_code: { N: "0" },
      duration_seconds: { N: "123" },
      completed_at: { S: "2025-11-25T10:02:03Z" },
      started_at: { S: "2025-11-25T10:00:00Z" },
      instance_id: { S: "i-0123456789abcdef0" },
      // completed_at + 7 days, in epoch seconds: 2025-12-02T10:02:03Z.
      expires_at: { N: "1764669723" },
      completed_by: { S: record.messageId },
      completion_attempt: { S: "attempt-1" },
      // The report: claimed by this delivery at NOW_MS, and done.
      completion_reported_by: { S: `${record.messageId} attempt-1` },
      completion_report_claimed_at: { N: String(NOW_MS / 1000) },
      // Without a Lambda context, the claimant's invocation is bounded by Lambda's longest timeout.
      completion_report_deadline: { N: String(NOW_MS / 1000 + 900) },
      completion_reported: { S: `${record.messageId} attempt-1` },
      ...extra,
    });

    it("a job with no record yet gets every completion attribute, the TTL and its writer", async () => {
      // Prepare
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const table = new FakeJobItems().install(t.dynamodbMock, conditionFailed);
      const record = sqsRecord(terminationMessage({ duration_seconds: 123, started_at: "2025-11-25T10:00:00.250Z" }));
      // Act
      const response = await t.handler(sqsEvent(record));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([]);
      expect(table.items.get("67890")).to.deep.equal(written(record));
    });

    it("a running job keeps the start time it already has (if_not_exists), and a failed one stores its error text", async () => {
      // Prepare
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const table = new FakeJobItems([runningJob("2025-11-25T09:59:00Z")]).install(t.dynamodbMock, conditionFailed);
      const record = sqsRecord(terminationMessage({ status: "failure", exit_code: 137, error: "OOM killed" }));
      // Act
      await t.handler(sqsEvent(record));
      // Assess
      expect(table.items.get("67890")).to.deep.equal(
        written(record, { status: { S: "failed" }, exit_code: { N: "137" }, started_at: { S: "2025-11-25T09:59:00Z" }, error: { S: "OOM killed" } }),
      );
    });

    it("a job already completed is left as it was: the write is refused by its condition and the delivery is a duplicate", async () => {
      // Prepare: another message completed it.
      const t = arrange({ newAttemptToken: () => "attempt-1" });
      const done = { ...runningJob(), status: { S: "failed" }, completed_by: { S: "m-other" }, completion_attempt: { S: "attempt-0" } };
      const table = new FakeJobItems([done]).install(t.dynamodbMock, conditionFailed);
      // Act
      const response = await t.handler(sqsEvent(sqsRecord(terminationMessage())));
      // Assess
      expect(response.batchItemFailures).to.deep.equal([]);
      expect(table.items.get("67890")).to.deep.equal(done);
      expect(t.metrics.emitted).to.deep.equal([]);
      expect(t.logger.withStep("job_already_complete")[0]?.fields).to.include({ completed_by: "m-other", found_status: "failed", redelivery: false });
    });
  });

  describe("log steps name the message, job and instance", () => {
    it("a fresh completion: job_marked_complete (recovered false, no error field for a success), ssm_parameter_deleted, termination_processed (not a duplicate)", async () => {
      // Prepare
      const t = arrange();
      const record = sqsRecord(terminationMessage());
      const ids = { message_id: record.messageId, job_id: "67890", instance_id: "i-0123456789abcdef0" };
      // Act
      await t.handler(sqsEvent(record));
      // Assess
      expect(t.logger.entries.map((e) => e.fields)).to.deep.equal([
        { step: "job_marked_complete", ...ids, status: "success", exit_code: 0, duration_seconds: 123, recovered: false },
        {
          step: "ssm_parameter_deleted",
          message_id: record.messageId,
          instance_id: "i-0123456789abcdef0",
          parameter: "/runs-fleet/dev/runners/i-0123456789abcdef0/config",
        },
        { step: "termination_processed", ...ids, duplicate: false },
      ]);
    });

    it("a failure logs its error text in job_marked_complete", async () => {
      // Prepare
      const t = arrange();
      const record = sqsRecord(terminationMessage({ status: "failure", exit_code: 1, error: "OOM killed" }));
      // Act
      await t.handler(sqsEvent(record));
      // Assess
      expect(t.logger.withStep("job_marked_complete")[0]?.fields).to.include({ status: "failure", exit_code: 1, error: "OOM killed" });
    });

    it("a duplicate whose parameter is already gone: job_already_complete, ssm_parameter_not_found, termination_processed (a duplicate)", async () => {
      // Prepare
      const t = arrange();
      t.dynamodbMock.on(UpdateItemCommand).rejects(conditionFailed(completedItem("m-other", "attempt-0")));
      t.ssmMock.on(DeleteParameterCommand).rejects(awsError("ParameterNotFound"));
      const record = sqsRecord(terminationMessage());
      const ids = { message_id: record.messageId, job_id: "67890", instance_id: "i-0123456789abcdef0" };
      // Act
      await t.handler(sqsEvent(record));
      // Assess
      expect(t.logger.entries.map((e) => e.fields)).to.deep.equal([
        { step: "job_already_complete", ...ids, status: "success", found_status: "completed", completed_by: "m-other", redelivery: false },
        {
          step: "ssm_parameter_not_found",
          message_id: record.messageId,
          instance_id: "i-0123456789abcdef0",
          parameter: "/runs-fleet/dev/runners/i-0123456789abcdef0/config",
        },
        { step: "termination_processed", ...ids, duplicate: true },
      ]);
    });
  });

  describe("a failed condition counts as this attempt's only when the old item holds both its message id and its token", () => {
    const cases: Array<{ title: string; completedBy: (messageId: string) => string; attempt: string | undefined }> = [
      { title: "another message that recorded the same token: a duplicate", completedBy: () => "m-other", attempt: "attempt-1" },
      { title: "this message with no token recorded: a duplicate", completedBy: (id) => id, attempt: undefined },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const t = arrange({ newAttemptToken: () => "attempt-1" });
        const record = sqsRecord(terminationMessage());
        t.dynamodbMock.on(UpdateItemCommand).rejects(conditionFailed(completedItem(c.completedBy(record.messageId), c.attempt)));
        // Act
        const response = await t.handler(sqsEvent(record));
        // Assess
        expect(response.batchItemFailures).to.deep.equal([]);
        expect(t.metrics.emitted).to.deep.equal([]);
        expect(t.logger.steps()).to.deep.equal(["job_already_complete", "ssm_parameter_deleted", "termination_processed"]);
      });
    }
  });

  it("only ParameterNotFound is a harmless delete failure: a missing-permission error fails the record", async () => {
    // Prepare
    const t = arrange();
    t.ssmMock.on(DeleteParameterCommand).rejects(awsError("AccessDeniedException"));
    const record = sqsRecord(terminationMessage());
    // Act
    const response = await t.handler(sqsEvent(record));
    // Assess
    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(t.logger.steps()).to.not.include("ssm_parameter_not_found");
  });

  it("publishes the stored metrics once per batch, also when a record fails", async () => {
    // Prepare
    const t = arrange();
    t.dynamodbMock.on(UpdateItemCommand, { Key: { job_id: { S: "bad" } } }).rejects(awsError("InternalServerError"));
    // Act
    await t.handler(sqsEvent(sqsRecord(terminationMessage({ job_id: "good" })), sqsRecord(terminationMessage({ job_id: "bad" }))));
    // Assess
    expect(t.metrics.published).to.equal(1);
  });
});
