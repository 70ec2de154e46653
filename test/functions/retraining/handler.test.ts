import { ListTasksCommand, RunTaskCommand, type RunTaskCommandInput } from "@aws-sdk/client-ecs";
import { SendMessageBatchCommand, type SendMessageBatchCommandInput, type SendMessageBatchRequestEntry, SendMessageCommand } from "@aws-sdk/client-sqs";
import { BatchGetCommand, DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { fallbackPlacement } from "../../../functions/retraining/ecs";
import { createLauncherHandler, METRICS } from "../../../functions/retraining/handler";
import { jobIdFor } from "../../../functions/retraining/job-id";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { conditionFailed, FakeIntentTable, mockedLauncherDeps, QUARANTINE_URL, RETRAINING_URL, retrainingBody } from "../helpers/retraining-deps";

type Harness = ReturnType<typeof mockedLauncherDeps>;
type SQSRecordLike = ReturnType<typeof sqsRecord>;
type LauncherConfigLike = Parameters<typeof mockedLauncherDeps>[0] & object;

const taskArn = (n: number) => `arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/t${n}`;

/** ListTasks answers `running` ARNs over pages of 2; RunTask starts a task; DynamoDB has no record; the intent table is in memory. */
function arrange(t: Harness, running = 0): FakeIntentTable {
  const arns = Array.from({ length: running }, (_, i) => taskArn(100 + i));
  const pages = arns.length === 0 ? [[]] : Array.from({ length: Math.ceil(arns.length / 2) }, (_, i) => arns.slice(i * 2, i * 2 + 2));
  pages.forEach((page, i) => {
    t.ecsMock
      .on(ListTasksCommand, i === 0 ? { nextToken: undefined } : { nextToken: `p${i}` })
      .resolves({ taskArns: page, nextToken: i + 1 < pages.length ? `p${i + 1}` : undefined });
  });
  let n = 0;
  t.ecsMock.on(RunTaskCommand).callsFake(() => ({ tasks: [{ taskArn: taskArn(++n) }], failures: [] }));
  t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
  t.dbMock.on(UpdateCommand).resolves({});
  t.dbMock.on(PutCommand).resolves({});
  t.dbMock.on(DeleteCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "q" });
  t.sqsMock.on(SendMessageBatchCommand).callsFake(acceptAll);
  const intents = new FakeIntentTable();
  intents.install(t);
  return intents;
}

/** The state record writes (the intent table's writes are UpdateItems too). */
const stateUpdates = (t: Harness) =>
  t.dbMock
    .commandCalls(UpdateCommand)
    .filter((c) => c.args[0].input.TableName === "retraining-state")
    .map((c) => c.args[0].input);

/** A launched intent as the table holds it. */
const launchedIntent = (origin: string, o: Record<string, unknown> = {}) => ({
  origin_message_id: origin,
  status: "launched",
  attempt: "earlier",
  task_arn: taskArn(99),
  job_id: jobIdFor(origin),
  model_name: "PascalStrategy",
  trigger: "scheduled",
  launched_at: Date.parse("2024-01-01T11:00:00.000Z"),
  first_claimed_at: Date.parse("2024-01-01T11:00:00.000Z"),
  ...o,
});

/** SendMessageBatch accepting every entry. */
function acceptAll(input: SendMessageBatchCommandInput) {
  return { Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `copy-${e.Id}`, MD5OfMessageBody: "" })), Failed: [] };
}

/** Every deferred copy sent, in order, with the queue it went to. */
const deferredCopies = (t: Harness): Array<SendMessageBatchRequestEntry & { QueueUrl?: string }> =>
  t.sqsMock.commandCalls(SendMessageBatchCommand).flatMap((c) => (c.args[0].input.Entries ?? []).map((e) => ({ ...e, QueueUrl: c.args[0].input.QueueUrl })));

const runTaskInputs = (t: Harness) => t.ecsMock.commandCalls(RunTaskCommand).map((c) => c.args[0].input as RunTaskCommandInput);

describe("retraining/launcher handler", () => {
  describe("flowchart: count running tasks → capacity → parse → launch → record → metrics", () => {
    it("launches a valid message, records it and acknowledges it", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const record = sqsRecord(retrainingBody({ model_name: "PascalStrategy-btc", trigger: "drift_detected" }));

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([]);
      const [input] = runTaskInputs(t);
      const jobId = jobIdFor(record.messageId);
      expect(input).to.deep.include({
        cluster: "platform-cluster",
        taskDefinition: "tradai-strategy-generic-dev",
        count: 1,
        startedBy: "retraining-scheduler",
        clientToken: record.messageId,
        capacityProviderStrategy: [{ capacityProvider: "FARGATE", weight: 1 }],
      });
      expect(input).to.not.have.property("launchType");
      expect(input?.networkConfiguration?.awsvpcConfiguration).to.deep.equal({
        subnets: ["subnet-a", "subnet-b"],
        securityGroups: ["sg-1"],
        assignPublicIp: "DISABLED",
      });
      expect(input?.overrides?.containerOverrides).to.deep.equal([
        {
          name: "strategy",
          environment: [
            { name: "JOB_ID", value: jobId },
            { name: "TRADING_MODE", value: "train" },
            { name: "STRATEGY", value: "PascalStrategy" },
            { name: "MODEL_NAME", value: "PascalStrategy-btc" },
            { name: "RETRAINING_TRIGGER", value: "drift_detected" },
            { name: "ENVIRONMENT", value: "dev" },
          ],
        },
      ]);
      expect(input?.tags).to.deep.equal([
        { key: "job_id", value: jobId },
        { key: "model_name", value: "PascalStrategy-btc" },
        { key: "strategy", value: "PascalStrategy" },
        { key: "trigger", value: "drift_detected" },
        { key: "environment", value: "dev" },
      ]);
      const [update] = stateUpdates(t);
      expect(update?.Key).to.deep.equal({ model_name: "PascalStrategy-btc" });
      expect(update?.ExpressionAttributeValues).to.deep.equal({
        ":task_arn": taskArn(1),
        ":job_id": jobId,
        ":trigger_type": "drift_detected",
        ":started_at": "2024-01-01T12:00:00+00:00",
        ":updated_at": "2024-01-01T12:00:00+00:00",
        ":status": "running",
        ":message_id": record.messageId,
        ":launched_at": Date.parse("2024-01-01T12:00:00.000Z"),
      });
      expect(update?.ConditionExpression).to.equal("attribute_not_exists(launched_at) OR launched_at <= :launched_at");
      expect(t.logger.steps()).to.include.members(["running_tasks_counted", "ecs_task_launched", "state_recorded", "batch_processed"]);
    });

    it("USE_SPOT=true launches on FARGATE_SPOT, never with launchType", async () => {
      const t = mockedLauncherDeps({ useSpot: true });
      arrange(t);

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      const [input] = runTaskInputs(t);
      expect(input?.capacityProviderStrategy).to.deep.equal([{ capacityProvider: "FARGATE_SPOT", weight: 1 }]);
      expect(input).to.not.have.property("launchType");
    });

    it("a relaunch request (relaunch_of) runs on FARGATE even with USE_SPOT, keeps the job id, names the task it replaces, and records both", async () => {
      // Prepare
      const t = mockedLauncherDeps({ useSpot: true });
      arrange(t);
      const interrupted = "arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/0123456789abcdef0123456789abcdef";
      const jobId = "6f1c7a4e-2b8d-5c0e-9a3f-5d7b1e2c4a68";
      const origin = "relaunch-0123456789abcdef0123456789abcdef";
      const record = sqsRecord(retrainingBody({ relaunch_of: { task_arn: interrupted, job_id: jobId } }), {
        messageAttributes: { "retraining-origin-message-id": { dataType: "String", stringValue: origin, stringListValues: [], binaryListValues: [] } },
      });
      // Act
      const res = await createLauncherHandler(t.deps)(sqsEvent(record));
      // Assess
      expect(res.batchItemFailures).to.deep.equal([]);
      const [input] = runTaskInputs(t);
      expect(input?.capacityProviderStrategy).to.deep.equal([{ capacityProvider: "FARGATE", weight: 1 }]);
      expect(input?.clientToken).to.equal(origin);
      expect(input?.overrides?.containerOverrides?.[0]?.environment).to.deep.include.members([
        { name: "JOB_ID", value: jobId },
        { name: "RELAUNCH_OF", value: interrupted },
      ]);
      expect(stateUpdates(t)[0]?.ExpressionAttributeValues).to.deep.include({ ":relaunched_from": interrupted, ":job_id": jobId });
    });

    describe("Fargate Spot refused for capacity (SPOT_FALLBACK)", () => {
      const CAPACITY = { reason: "Capacity is unavailable at this time. Please try again later or in a different availability zone" };
      /** RunTask refuses Spot for capacity; FARGATE starts a task. */
      const spotRefused = (t: Harness) =>
        t.ecsMock
          .on(RunTaskCommand)
          .callsFake((input: RunTaskCommandInput) =>
            input.capacityProviderStrategy?.[0]?.capacityProvider === "FARGATE_SPOT"
              ? { tasks: [], failures: [CAPACITY] }
              : { tasks: [{ taskArn: taskArn(7) }], failures: [] },
          );

      it("on-demand: retried at once on FARGATE with its own clientToken; logged spot_capacity_fallback, counted SpotFallbacks, launched", async () => {
        // Prepare
        const t = mockedLauncherDeps({ useSpot: true, spotFallback: "on-demand" });
        const intents = arrange(t);
        spotRefused(t);
        const record = sqsRecord(retrainingBody());
        // Act
        const res = await createLauncherHandler(t.deps)(sqsEvent(record));
        // Assess
        expect(res.batchItemFailures).to.deep.equal([]);
        const [spot, onDemand] = runTaskInputs(t);
        expect(spot?.capacityProviderStrategy).to.deep.equal([{ capacityProvider: "FARGATE_SPOT", weight: 1 }]);
        expect(spot?.clientToken).to.equal(record.messageId);
        expect(onDemand?.capacityProviderStrategy).to.deep.equal([{ capacityProvider: "FARGATE", weight: 1 }]);
        expect(onDemand?.clientToken).to.equal(fallbackPlacement(record.messageId).clientToken);
        expect(onDemand?.clientToken).to.not.equal(record.messageId);
        expect(intents.items.get(record.messageId)).to.deep.include({ status: "launched", fallback: "FARGATE", task_arn: taskArn(7) });
        expect(t.logger.withStep("spot_capacity_fallback")).to.have.length(1);
        expect(t.logger.withStep("ecs_task_launched")[0]?.fields.capacity_provider).to.equal("FARGATE");
        expect(t.metrics.count(METRICS.spotFallbacks)).to.equal(1);
      });

      it("fail: no retry on FARGATE; the record fails (SQS retries it), the claim deleted (nothing started)", async () => {
        const t = mockedLauncherDeps({ useSpot: true, spotFallback: "fail" });
        const intents = arrange(t);
        spotRefused(t);
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(runTaskInputs(t).map((i) => i.capacityProviderStrategy?.[0]?.capacityProvider)).to.deep.equal(["FARGATE_SPOT"]);
        expect(intents.items.has(record.messageId)).to.equal(false);
        expect(t.metrics.added.filter((m) => m.name === METRICS.spotFallbacks).map((m) => m.value)).to.deep.equal([0]);
      });

      it("a Spot failure that is not capacity (a bad subnet) is no reason to fall back", async () => {
        const t = mockedLauncherDeps({ useSpot: true, spotFallback: "on-demand" });
        arrange(t);
        t.ecsMock.on(RunTaskCommand).resolves({ tasks: [], failures: [{ reason: "RESOURCE:ENI", detail: "no ENI" }] });
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(runTaskInputs(t)).to.have.length(1);
      });

      it("the FARGATE retry's answer is lost: the redelivery repeats the retry (same token), never Spot again: one task", async () => {
        // Prepare: Spot refuses once for capacity (later it would start a task, which must never happen); the FARGATE
        // RunTask applies in ECS (one task per token) but its first answer never arrives
        const t = mockedLauncherDeps({ useSpot: true, spotFallback: "on-demand" });
        const intents = arrange(t);
        const started = new Map<string, string>();
        let spotCalls = 0;
        let lose = true;
        t.ecsMock.on(RunTaskCommand).callsFake((input: RunTaskCommandInput) => {
          if (input.capacityProviderStrategy?.[0]?.capacityProvider === "FARGATE_SPOT") {
            spotCalls += 1;
            return spotCalls === 1 ? { tasks: [], failures: [CAPACITY] } : { tasks: [{ taskArn: taskArn(99) }], failures: [] };
          }
          const token = input.clientToken ?? "";
          if (!started.has(token)) started.set(token, taskArn(started.size + 1));
          if (lose) {
            lose = false;
            throw new Error("socket hang up");
          }
          return { tasks: [{ taskArn: started.get(token) }], failures: [] };
        });
        const record = sqsRecord(retrainingBody());
        // Act: the first delivery fails after the lost answer; the redelivery takes the expired claim over
        const first = await createLauncherHandler(t.deps)(sqsEvent(record));
        const second = await createLauncherHandler(t.deps)(sqsEvent(record));
        // Assess
        expect(first.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(second.batchItemFailures).to.deep.equal([]);
        expect(spotCalls).to.equal(1);
        expect(started.size).to.equal(1);
        expect(intents.items.get(record.messageId)).to.deep.include({ status: "launched", task_arn: taskArn(1), fallback: "FARGATE" });
        expect(t.logger.withStep("launch_intent_taken_over")[0]?.fields.fallback).to.equal(true);
      });
    });

    it("counts running tasks once per batch, over every page, filtered by startedBy and RUNNING", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 10 });
      arrange(t, 5);

      await createLauncherHandler(t.deps)(sqsEvent(...Array.from({ length: 4 }, () => sqsRecord(retrainingBody()))));

      const calls = t.ecsMock.commandCalls(ListTasksCommand).map((c) => c.args[0].input);
      expect(calls).to.have.length(3, "3 pages of 2 for 5 running tasks, for the whole batch");
      for (const c of calls) expect(c).to.include({ cluster: "platform-cluster", startedBy: "retraining-scheduler", desiredStatus: "RUNNING" });
      expect(t.logger.withStep("running_tasks_counted")[0]?.fields).to.include({ running: 5, max_concurrent_tasks: 10 });
    });

    it("at capacity: every valid message is deferred (re-sent and acknowledged) and nothing launches", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 2 });
      arrange(t, 2);
      const records = [sqsRecord(retrainingBody()), sqsRecord(retrainingBody())];

      const res = await createLauncherHandler(t.deps)(sqsEvent(...records));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(0);
      expect(deferredCopies(t)).to.have.length(2);
      expect(t.logger.withStep("capacity_deferred")).to.have.length(2);
    });

    it("tasks launched earlier in the batch count toward the cap", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 3 });
      arrange(t, 1);
      const records = Array.from({ length: 5 }, () => sqsRecord(retrainingBody()));

      const res = await createLauncherHandler(t.deps)(sqsEvent(...records));

      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(2);
      expect(res.batchItemFailures).to.deep.equal([]);
      expect(deferredCopies(t).map((e) => e.MessageAttributes?.["retraining-origin-message-id"]?.StringValue)).to.deep.equal(
        records.slice(2).map((r) => r.messageId),
      );
      expect(t.metrics.count("ECSTasksLaunched")).to.equal(2);
    });

    it("a redelivered message whose launch intent is complete is acknowledged without a second RunTask, even at capacity", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      const intents = arrange(t, 1);
      const record = sqsRecord(retrainingBody());
      intents.items.set(record.messageId, launchedIntent(record.messageId));

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(0);
      expect(t.logger.withStep("duplicate_message_skipped")[0]?.fields).to.include({ task_arn: taskArn(99) });
      const read = t.dbMock.commandCalls(BatchGetCommand)[0]?.args[0].input.RequestItems?.["retraining-intent"];
      expect(read).to.deep.include({ ConsistentRead: true, Keys: [{ origin_message_id: record.messageId }] });
      expect(t.dbMock.commandCalls(PutCommand)).to.have.length(0, "no lease is taken for a duplicate");
    });

    it("reads the intents of every origin in the batch with one BatchGetItem, not one read per message", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 10 });
      arrange(t);
      const records = ["A-1", "B-1", "A-2", "C"].map((m) => sqsRecord(retrainingBody({ model_name: m })));

      await createLauncherHandler(t.deps)(sqsEvent(...records));

      const calls = t.dbMock.commandCalls(BatchGetCommand);
      expect(calls).to.have.length(1);
      expect(calls[0]?.args[0].input.RequestItems?.["retraining-intent"]?.Keys).to.deep.equal(records.map((r) => ({ origin_message_id: r.messageId })));
    });

    it("asks again for keys DynamoDB left unprocessed, and fails the batch (retry) if they stay unprocessed", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const record = sqsRecord(retrainingBody());
      t.dbMock.on(BatchGetCommand).resolves({ Responses: {}, UnprocessedKeys: { "retraining-intent": { Keys: [{ origin_message_id: record.messageId }] } } });

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(t.dbMock.commandCalls(BatchGetCommand)).to.have.length(4);
      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(0);
    });

    it("publishes the four seed metrics and SQSMessagesDeferred with the Environment dimension", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      arrange(t);

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord(retrainingBody()), sqsRecord("{")));

      expect(t.metrics.dimensions).to.deep.equal({ Environment: "dev" });
      expect({
        received: t.metrics.count("SQSMessagesReceived"),
        processed: t.metrics.count("SQSMessagesProcessed"),
        failed: t.metrics.count("SQSMessagesFailed"),
        launched: t.metrics.count("ECSTasksLaunched"),
        deferred: t.metrics.count("SQSMessagesDeferred"),
      }).to.deep.equal({ received: 3, processed: 1, failed: 0, launched: 1, deferred: 1 });
      expect(t.metrics.published).to.equal(1);
    });
  });

  describe("capacity lease (MAX_CONCURRENT_TASKS across concurrent invocations)", () => {
    it("acquired: a conditional PutItem on the reserved key precedes ListTasks and every RunTask; a conditional DeleteItem by the same holder ends it", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 10 });
      arrange(t);
      const order: string[] = [];
      t.dbMock.on(PutCommand).callsFake(() => (order.push("PutItem"), {}));
      t.ecsMock.on(ListTasksCommand).callsFake(() => (order.push("ListTasks"), { taskArns: [] }));
      t.ecsMock.on(RunTaskCommand).callsFake(() => (order.push("RunTask"), { tasks: [{ taskArn: taskArn(1) }] }));
      t.dbMock.on(DeleteCommand, { TableName: "retraining-state" }).callsFake(() => (order.push("DeleteItem"), {}));

      const res = await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord(retrainingBody())));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(order).to.deep.equal(["PutItem", "ListTasks", "RunTask", "RunTask", "DeleteItem"]);
      const put = t.dbMock.commandCalls(PutCommand)[0]?.args[0].input;
      const now = Date.parse("2024-01-01T12:00:00.000Z");
      expect(put?.TableName).to.equal("retraining-state");
      expect(put?.Item).to.deep.include({ model_name: "#capacity-lease", expires_at: now + 30_000 });
      expect(put?.Item?.origin_message_ids).to.have.length(2, "the origins the batch launches for");
      expect(put?.ConditionExpression).to.equal("attribute_not_exists(#key) OR #expires < :now");
      expect(put?.ReturnValuesOnConditionCheckFailure).to.equal("ALL_OLD");
      expect(put?.ExpressionAttributeNames).to.deep.equal({ "#key": "model_name", "#expires": "expires_at" });
      expect(put?.ExpressionAttributeValues).to.deep.equal({ ":now": now });
      const del = t.dbMock.commandCalls(DeleteCommand)[0]?.args[0].input;
      expect(del?.Key).to.deep.equal({ model_name: "#capacity-lease" });
      expect(del?.ExpressionAttributeValues).to.deep.equal({ ":me": put?.Item?.holder });
      expect(t.logger.steps()).to.include.members(["capacity_lease_acquired", "capacity_lease_released"]);
    });

    it("the reserved key is no model name the launcher accepts", async () => {
      const t = mockedLauncherDeps();
      arrange(t);

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody({ model_name: "#capacity-lease" }))));

      expect(t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(
        /^invalid_model_name: /,
      );
      expect(t.dbMock.commandCalls(PutCommand)).to.have.length(0);
    });

    it("expires with the invocation: the lease lapses when the Lambda's remaining time runs out", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const context = { awsRequestId: "req-1", getRemainingTimeInMillis: () => 12_000 } as unknown as Parameters<ReturnType<typeof createLauncherHandler>>[1];

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())), context);

      const item = t.dbMock.commandCalls(PutCommand)[0]?.args[0].input.Item;
      expect(item?.expires_at).to.equal(Date.parse("2024-01-01T12:00:00.000Z") + 12_000);
      expect(item?.holder).to.be.a("string").and.not.include("req-1", "a batch's own token, never the request id");
    });

    it("busy: after a bounded wait, every valid message is deferred by re-send, nothing is counted or launched, and nothing is released", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock
        .on(PutCommand)
        .rejects(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: Date.parse("2024-01-01T12:00:20.000Z") }));
      const valid = [sqsRecord(retrainingBody()), sqsRecord(retrainingBody({ model_name: "Other" }))];

      const res = await createLauncherHandler(t.deps)(sqsEvent(...valid, sqsRecord("{")));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(
        deferredCopies(t).map((e) => [e.QueueUrl, e.DelaySeconds, e.MessageBody, e.MessageAttributes?.["retraining-origin-message-id"]?.StringValue]),
      ).to.deep.equal(valid.map((r) => [RETRAINING_URL, 60, r.body, r.messageId]));
      expect(t.logger.withStep("capacity_deferred").map((l) => l.fields.reason)).to.deep.equal(["lease_busy", "lease_busy"]);
      expect(t.ecsMock.calls()).to.have.length(0);
      expect(t.dbMock.commandCalls(DeleteCommand)).to.have.length(0);
      expect(t.dbMock.commandCalls(UpdateCommand)).to.have.length(0, "no intent is claimed without a slot");
      expect(t.sqsMock.commandCalls(SendMessageCommand)).to.have.length(1, "the malformed one is still quarantined");
      // 3 s of waiting (30 s left / 4, capped at 3 s) in 250 ms pauses: 13 attempts, 12 pauses.
      expect(t.dbMock.commandCalls(PutCommand)).to.have.length(13);
      expect(t.sleeps).to.deep.equal(Array.from({ length: 12 }, () => 250));
      expect(t.logger.withStep("capacity_lease_busy")).to.have.length(1);
    });

    it("busy, then free: launches once the holder has let go", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock
        .on(PutCommand)
        .rejectsOnce(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: 0 }))
        .resolves({});

      const res = await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.sleeps).to.deep.equal([250]);
      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(1);
      expect(t.logger.withStep("capacity_lease_acquired")[0]?.fields).to.include({ attempts: 2 });
    });

    it("released even when a launch throws", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.ecsMock.on(RunTaskCommand).rejects(new Error("ClientException"));

      const res = await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(res.batchItemFailures).to.have.length(1);
      expect(t.dbMock.commandCalls(DeleteCommand).filter((c) => c.args[0].input.TableName === "retraining-state")).to.have.length(1);
    });

    it("a lease that lapsed and was taken by another holder is left alone and logged, and the batch's outcome stands", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock
        .on(DeleteCommand, { TableName: "retraining-state" })
        .rejects(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: 0 }));

      const res = await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("capacity_lease_lost")).to.have.length(1);
    });

    it("no message needing a slot (all malformed or already launched): no lease is taken", async () => {
      const t = mockedLauncherDeps();
      arrange(t);

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord("{"), sqsRecord(JSON.stringify({ trigger: "manual" }))));

      expect(t.dbMock.commandCalls(PutCommand)).to.have.length(0);
      expect(t.dbMock.commandCalls(DeleteCommand)).to.have.length(0);
    });

    it("a DynamoDB error taking the lease fails the batch's valid messages (retry), launching nothing", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock.on(PutCommand).rejects(new Error("ProvisionedThroughputExceeded"));
      const record = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.ecsMock.calls()).to.have.length(0);
      expect(t.sleeps).to.deep.equal([]);
    });
  });

  describe("deferral: a message that must wait is re-sent with a delay and acknowledged, never failed", () => {
    const ORIGIN = "retraining-origin-message-id";
    const DEFERRALS = "retraining-deferrals";
    /** A copy the launcher re-sent earlier: its lineage travels in message attributes. */
    const copyOf = (origin: string, deferrals: number, body = retrainingBody()) =>
      sqsRecord(body, {
        messageAttributes: {
          [ORIGIN]: { dataType: "String", stringValue: origin, stringListValues: [], binaryListValues: [] },
          [DEFERRALS]: { dataType: "Number", stringValue: String(deferrals), stringListValues: [], binaryListValues: [] },
        },
      });

    it("over the cap: re-sent to its own queue with DEFER_DELAY_SECONDS, the same body, its attributes and a lineage; acknowledged", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 2 });
      arrange(t, 1);
      const first = sqsRecord(retrainingBody({ model_name: "A" }));
      const waiting = sqsRecord(retrainingBody({ model_name: "B", trigger: "manual" }), {
        messageAttributes: {
          producer: { dataType: "String", stringValue: "drift-monitor", stringListValues: [], binaryListValues: [] },
          digest: { dataType: "Binary", binaryValue: Buffer.from([1, 2, 3]).toString("base64"), stringListValues: [], binaryListValues: [] },
        },
      });

      const res = await createLauncherHandler(t.deps)(sqsEvent(first, waiting));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(runTaskInputs(t).map((i) => i.clientToken)).to.deep.equal([first.messageId]);
      const [copy, ...more] = deferredCopies(t);
      expect(more).to.deep.equal([]);
      expect(copy).to.deep.include({ QueueUrl: RETRAINING_URL, DelaySeconds: 60, MessageBody: waiting.body });
      expect(copy?.MessageAttributes).to.deep.equal({
        producer: { DataType: "String", StringValue: "drift-monitor" },
        digest: { DataType: "Binary", BinaryValue: Buffer.from([1, 2, 3]) },
        [ORIGIN]: { DataType: "String", StringValue: waiting.messageId },
        [DEFERRALS]: { DataType: "Number", StringValue: "1" },
      });
      expect(t.logger.withStep("capacity_deferred").map((l) => l.fields)).to.deep.equal([
        {
          step: "capacity_deferred",
          message_id: waiting.messageId,
          origin_message_id: waiting.messageId,
          model_name: "B",
          reason: "at_capacity",
          running: 2,
          max_concurrent_tasks: 2,
          deferrals: 1,
          delay_seconds: 60,
        },
      ]);
      expect(t.metrics.count("SQSMessagesDeferred")).to.equal(1);
      expect(t.metrics.count("SQSMessagesFailed")).to.equal(0);
    });

    it("uses the configured delay (DEFER_DELAY_SECONDS)", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1, deferDelaySeconds: 0 });
      arrange(t, 1);

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(deferredCopies(t).map((e) => e.DelaySeconds)).to.deep.equal([0]);
      expect(t.logger.withStep("capacity_deferred")[0]?.fields).to.include({ delay_seconds: 0 });
    });

    it("deferred again: the count goes up and the origin id stays", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      arrange(t, 1);
      const again = copyOf("origin-1", 1);

      const res = await createLauncherHandler(t.deps)(sqsEvent(again));

      expect(res.batchItemFailures).to.deep.equal([]);
      const [copy] = deferredCopies(t);
      expect(copy?.MessageAttributes?.[ORIGIN]).to.deep.equal({ DataType: "String", StringValue: "origin-1" });
      expect(copy?.MessageAttributes?.[DEFERRALS]).to.deep.equal({ DataType: "Number", StringValue: "2" });
      expect(Object.keys(copy?.MessageAttributes ?? {})).to.have.length(2, "the old lineage is replaced, not carried twice");
      expect(t.logger.withStep("capacity_deferred")[0]?.fields).to.include({ message_id: again.messageId, origin_message_id: "origin-1", deferrals: 2 });
    });

    it("a re-sent copy that launches uses the origin's id: one job id, clientToken and state record however often it waited", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const copy = copyOf("origin-7", 3, retrainingBody({ model_name: "PascalStrategy-btc" }));
      const jobId = jobIdFor("origin-7");

      const res = await createLauncherHandler(t.deps)(sqsEvent(copy));

      expect(res.batchItemFailures).to.deep.equal([]);
      const [input] = runTaskInputs(t);
      expect(input?.clientToken).to.equal("origin-7");
      expect(input?.overrides?.containerOverrides?.[0]?.environment).to.deep.include({ name: "JOB_ID", value: jobId });
      expect(input?.tags).to.deep.include({ key: "job_id", value: jobId });
      expect(stateUpdates(t)[0]?.ExpressionAttributeValues).to.deep.include({ ":job_id": jobId, ":message_id": "origin-7" });
      expect(deferredCopies(t)).to.deep.equal([]);
    });

    it("a copy of an origin already launched is acknowledged as a duplicate, even at capacity", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      const intents = arrange(t, 1);
      intents.items.set("origin-7", launchedIntent("origin-7"));
      const copy = copyOf("origin-7", 1);

      const res = await createLauncherHandler(t.deps)(sqsEvent(copy));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(0);
      expect(deferredCopies(t)).to.deep.equal([]);
      expect(t.logger.withStep("duplicate_message_skipped")[0]?.fields).to.include({
        message_id: copy.messageId,
        origin_message_id: "origin-7",
        job_id: jobIdFor("origin-7"),
      });
    });

    it("an origin attribute that could be no SQS message id (nor a clientToken) is ignored: the record's own id is used", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const record = copyOf("x".repeat(65), 1);

      await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(runTaskInputs(t)[0]?.clientToken).to.equal(record.messageId);
    });

    const failures: Array<[string, (t: Harness) => void, (ids: string[]) => string[]]> = [
      ["SendMessageBatch throws", (t) => t.sqsMock.on(SendMessageBatchCommand).rejects(new Error("sqs down")), (ids) => ids],
      [
        "SQS refuses one entry",
        (t) =>
          t.sqsMock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({
            Successful: (input.Entries ?? []).slice(1).map((e) => ({ Id: e.Id })),
            Failed: [{ Id: input.Entries?.[0]?.Id, Code: "InvalidParameterValue", SenderFault: true, Message: "too many attributes" }],
          })),
        (ids) => ids.slice(0, 1),
      ],
      ["SQS reports an entry neither way", (t) => t.sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] }), (ids) => ids],
    ];
    for (const [label, fail, expectedFailed] of failures) {
      it(`${label}: the records whose copy was not accepted stay batch item failures (normal redelivery)`, async () => {
        const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
        arrange(t, 1);
        fail(t);
        const records = [sqsRecord(retrainingBody()), sqsRecord(retrainingBody({ model_name: "Other" }))];

        const res = await createLauncherHandler(t.deps)(sqsEvent(...records));

        const failedIds = expectedFailed(records.map((r) => r.messageId));
        expect(res.batchItemFailures).to.deep.equal(failedIds.map((id) => ({ itemIdentifier: id })));
        expect(t.logger.withStep("capacity_defer_failed").map((l) => l.fields.message_id)).to.deep.equal(failedIds);
        expect(t.metrics.count("SQSMessagesDeferred")).to.equal(records.length - failedIds.length);
        expect(t.metrics.count("SQSMessagesFailed")).to.equal(failedIds.length);
      });
    }

    it("more deferrals than one call takes: SendMessageBatch calls of at most 10 entries", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      arrange(t, 1);
      const records = Array.from({ length: 23 }, (_, i) => sqsRecord(retrainingBody({ model_name: `M${i}` })));

      const res = await createLauncherHandler(t.deps)(sqsEvent(...records));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(t.sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input.Entries?.length)).to.deep.equal([10, 10, 3]);
      expect(deferredCopies(t).map((e) => e.MessageAttributes?.[ORIGIN]?.StringValue)).to.have.members(records.map((r) => r.messageId));
    });

    it("malformed messages in a deferred batch are still quarantined, not re-sent", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      arrange(t, 1);
      const valid = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(valid, sqsRecord("{"), sqsRecord(JSON.stringify({ model_name: "M" }))));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(deferredCopies(t).map((e) => e.MessageAttributes?.[ORIGIN]?.StringValue)).to.deep.equal([valid.messageId]);
      const quarantined = t.sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
      expect(quarantined.map((q) => [q.QueueUrl, q.MessageAttributes?.["quarantine-reason"]?.StringValue?.split(":")[0]])).to.have.deep.members([
        [QUARANTINE_URL, "invalid_json"],
        [QUARANTINE_URL, "invalid_trigger"],
      ]);
    });
  });

  describe("error table", () => {
    const quarantined: Array<[string, string, string]> = [
      ["invalid JSON", "{not json", "invalid_json"],
      ["a JSON array", "[1]", "not_an_object"],
      ["missing model_name", JSON.stringify({ trigger: "manual" }), "missing_model_name"],
      ["empty model_name", JSON.stringify({ model_name: "", trigger: "manual" }), "missing_model_name"],
      ["model_name with characters ECS tags refuse", JSON.stringify({ model_name: "a,b", trigger: "manual" }), "invalid_model_name"],
      ["a trigger outside scheduled|drift_detected|manual", JSON.stringify({ model_name: "M", trigger: "cron" }), "invalid_trigger"],
      ["a missing trigger", JSON.stringify({ model_name: "M" }), "invalid_trigger"],
      [
        "a relaunch_of that names no task",
        JSON.stringify({ model_name: "M", trigger: "manual", relaunch_of: { task_arn: "x", job_id: "y" } }),
        "invalid_relaunch",
      ],
    ];
    for (const [label, body, reason] of quarantined) {
      it(`${label}: quarantined to the DLQ with reason ${reason}, not retried`, async () => {
        const t = mockedLauncherDeps();
        arrange(t);
        const record = sqsRecord(body);

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
        expect(sent?.QueueUrl).to.equal(QUARANTINE_URL);
        expect(sent?.MessageBody).to.equal(body);
        expect(sent?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(new RegExp(`^${reason}: `));
        expect(t.ecsMock.calls()).to.have.length(0);
      });
    }

    it("a quarantine that fails is retried rather than lost", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.sqsMock.on(SendMessageCommand).rejects(new Error("sqs down"));
      const record = sqsRecord("{");

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    });

    it("ECS launch failure (RunTask lists failures and no task): batch item failure, nothing recorded, the claim deleted (nothing started)", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      t.ecsMock.on(RunTaskCommand).resolves({ tasks: [], failures: [{ reason: "RESOURCE:ENI", detail: "no ENI" }] });
      const record = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(stateUpdates(t)).to.have.length(0);
      expect(intents.items.has(record.messageId)).to.equal(false);
      expect(t.logger.withStep("ecs_task_launch_failed")[0]?.fields.error).to.match(/RESOURCE:ENI/);
    });

    it("at capacity and the deferral cannot be sent: batch item failure (retry), nothing lost", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      arrange(t, 1);
      t.sqsMock.on(SendMessageBatchCommand).rejects(new Error("sqs down"));
      const record = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    });

    const clientErrors: Array<[string, (t: Harness) => void]> = [
      ["ListTasks", (t) => t.ecsMock.on(ListTasksCommand).rejects(new Error("AccessDenied"))],
      ["RunTask", (t) => t.ecsMock.on(RunTaskCommand).rejects(new Error("ClientException"))],
      ["BatchGetItem", (t) => t.dbMock.on(BatchGetCommand).rejects(new Error("ProvisionedThroughputExceeded"))],
      ["UpdateItem", (t) => t.dbMock.on(UpdateCommand).rejects(new Error("ProvisionedThroughputExceeded"))],
    ];
    for (const [call, fail] of clientErrors) {
      it(`ClientError from ${call}: batch item failure (retry)`, async () => {
        const t = mockedLauncherDeps();
        arrange(t);
        fail(t);
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(t.metrics.count("SQSMessagesFailed")).to.equal(1);
      });
    }
  });

  describe("RunTask once per origin message: duplicates and lost responses (issue 16)", () => {
    const T0 = Date.parse("2024-01-01T12:00:00.000Z");
    const DAY = 86_400_000;
    /** A copy carrying an origin (a deferral, or the launcher's stamped dead-letter copy after a redrive, which SQS gives a new id). */
    const carrying = (origin: string, body = retrainingBody()) =>
      sqsRecord(body, {
        messageAttributes: { "retraining-origin-message-id": { dataType: "String", stringValue: origin, stringListValues: [], binaryListValues: [] } },
      });
    const tokens = (t: Harness) => runTaskInputs(t).map((i) => i.clientToken);

    it("(a) A launches, then B for the same model, then A is redelivered: RunTask once for A", async () => {
      // Prepare
      const t = mockedLauncherDeps();
      arrange(t);
      const handler = createLauncherHandler(t.deps);
      const a = sqsRecord(retrainingBody());
      const b = sqsRecord(retrainingBody());
      // Act
      await handler(sqsEvent(a));
      await handler(sqsEvent(b));
      const again = await handler(sqsEvent({ ...a, attributes: { ...a.attributes, ApproximateReceiveCount: "2" } }));
      // Assess
      expect(tokens(t)).to.deep.equal([a.messageId, b.messageId]);
      expect(again.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("duplicate_message_skipped").map((l) => l.fields.origin_message_id)).to.deep.equal([a.messageId]);
      expect(stateUpdates(t).at(-1)?.ExpressionAttributeValues).to.deep.include(
        { ":message_id": a.messageId },
        "the repair is conditional: it cannot replace B's newer record",
      );
      expect(stateUpdates(t).at(-1)?.ConditionExpression).to.equal("attribute_not_exists(launched_at) OR launched_at <= :launched_at");
    });

    it("(b) the same message in two concurrent invocations (the lease not serialising them): RunTask once, the other waits and is then a duplicate", async () => {
      // Prepare: every lease put succeeds, as when a lease lapsed while held.
      const t = mockedLauncherDeps();
      arrange(t);
      const handler = createLauncherHandler(t.deps);
      const record = sqsRecord(retrainingBody());
      // Act
      const results = await Promise.all([handler(sqsEvent(record)), handler(sqsEvent(record))]);
      // Assess
      expect(tokens(t)).to.deep.equal([record.messageId]);
      expect(results.flatMap((r) => r.batchItemFailures)).to.deep.equal([]);
      const [copy, ...more] = deferredCopies(t);
      expect(more).to.deep.equal([]);
      expect(t.logger.withStep("capacity_deferred").map((l) => l.fields.reason)).to.deep.equal(["in_progress"]);
      // Act: the deferred copy comes back.
      await handler(sqsEvent(carrying(copy?.MessageAttributes?.["retraining-origin-message-id"]?.StringValue ?? "")));
      // Assess
      expect(tokens(t)).to.have.length(1);
      expect(t.logger.withStep("duplicate_message_skipped")).to.have.length(1);
    });

    it("(b) the same origin twice in one batch (a message and its deferred copy): RunTask once", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const record = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(record, carrying(record.messageId)));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(tokens(t)).to.deep.equal([record.messageId]);
    });

    // (c) The write applied, its response was lost, the SDK retried, and the retry's condition failed against the caller's own item.
    const lostResponses: Array<[string, (t: Harness, intents: FakeIntentTable) => void, (t: Harness) => void]> = [
      [
        "lease take (PutItem): the lease is ours, not busy",
        (t) =>
          t.dbMock.on(PutCommand).callsFake((input: { Item: Record<string, string | number> }) => {
            throw conditionFailed({ model_name: "#capacity-lease", holder: input.Item.holder ?? "", expires_at: input.Item.expires_at ?? 0 });
          }),
        (t) => {
          expect(t.logger.withStep("capacity_lease_acquired")[0]?.fields).to.include({ attempts: 1 });
          expect(t.logger.steps()).to.not.include("capacity_lease_busy");
          expect(t.sleeps).to.deep.equal([]);
        },
      ],
      [
        "lease release (DeleteItem): released, not lost",
        (t) => t.dbMock.on(DeleteCommand, { TableName: "retraining-state" }).rejects(conditionFailed()),
        (t) => expect(t.logger.steps()).to.include("capacity_lease_released").and.not.include("capacity_lease_lost"),
      ],
      [
        "intent claim (UpdateItem): claimed by us, not in progress elsewhere",
        (_t, intents) => intents.loseNextResponse("claim"),
        (t) => expect(t.logger.steps()).to.not.include("launch_in_progress_elsewhere"),
      ],
    ];
    for (const [label, inject, assess] of lostResponses) {
      it(`(c) a lost response on the ${label}`, async () => {
        // Prepare
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        inject(t, intents);
        const record = sqsRecord(retrainingBody());
        // Act
        const res = await createLauncherHandler(t.deps)(sqsEvent(record));
        // Assess
        expect(res.batchItemFailures).to.deep.equal([]);
        expect(tokens(t)).to.deep.equal([record.messageId]);
        expect(deferredCopies(t)).to.deep.equal([], "nothing deferred");
        expect(intents.items.get(record.messageId)).to.include({ status: "launched", task_arn: taskArn(1) });
        assess(t);
      });
    }

    it("(c) a lease held by someone else is still busy: the item it failed against names another holder", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock.on(PutCommand).rejects(conditionFailed({ model_name: "#capacity-lease", holder: "other", expires_at: T0 + 20_000 }));

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(t.ecsMock.commandCalls(RunTaskCommand)).to.have.length(0);
      expect(t.logger.withStep("capacity_deferred").map((l) => l.fields.reason)).to.deep.equal(["lease_busy"]);
    });

    const later: Array<[string, number, (origin: SQSRecordLike) => SQSRecordLike]> = [
      ["the same message redelivered 2 days later", 2 * DAY, (r) => r],
      ["a DLQ redrive 13 days later (a new message id carrying the origin)", 13 * DAY, (r) => carrying(r.messageId)],
    ];
    for (const [label, after, redelivered] of later) {
      it(`(d) ${label}, past ECS's 24 h clientToken window: no second launch`, async () => {
        // Prepare
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        await createLauncherHandler(t.deps)(sqsEvent(record));
        const expiresAt = Number(intents.items.get(record.messageId)?.expires_at);
        // Act
        const lateDeps = { ...t.deps, now: () => new Date(T0 + after) };
        const res = await createLauncherHandler(lateDeps)(sqsEvent(redelivered(record)));
        // Assess
        expect(res.batchItemFailures).to.deep.equal([]);
        expect(tokens(t)).to.deep.equal([record.messageId]);
        expect(expiresAt * 1000).to.be.greaterThan(T0 + after, "the intent outlives the redelivery");
        expect(t.logger.withStep("duplicate_message_skipped")).to.have.length(1);
      });
    }

    it("a dead attempt's claim inside the clientToken window is taken over: RunTask again with the same token (ECS returns the same task)", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      const record = sqsRecord(retrainingBody());
      intents.items.set(record.messageId, {
        origin_message_id: record.messageId,
        status: "in_progress",
        attempt: "dead",
        in_progress_until: T0 - 1,
        first_claimed_at: T0 - 600_000,
      });

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(tokens(t)).to.deep.equal([record.messageId]);
      expect(t.logger.steps()).to.include("launch_intent_taken_over");
      expect(intents.items.get(record.messageId)).to.include({ status: "launched", first_claimed_at: T0 - 600_000 });
    });

    it("a live claim of another attempt: deferred (asked again later), not launched and not failed", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      const record = sqsRecord(retrainingBody());
      intents.items.set(record.messageId, {
        origin_message_id: record.messageId,
        status: "in_progress",
        attempt: "alive",
        in_progress_until: T0 + 20_000,
        first_claimed_at: T0 - 1_000,
      });

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(tokens(t)).to.deep.equal([]);
      expect(deferredCopies(t)).to.have.length(1);
    });

    it("a dead attempt's claim older than the clientToken window: quarantined as launch_outcome_unknown, never launched blind", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      const record = sqsRecord(retrainingBody());
      intents.items.set(record.messageId, {
        origin_message_id: record.messageId,
        status: "in_progress",
        attempt: "dead",
        in_progress_until: T0 - 3 * DAY,
        first_claimed_at: T0 - 3 * DAY,
      });

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([]);
      expect(tokens(t)).to.deep.equal([]);
      const [parked] = t.sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
      expect(parked?.QueueUrl).to.equal(QUARANTINE_URL);
      expect(parked?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(/^launch_outcome_unknown: claimed at 2023-12-29T12:00:00\.000Z/);
    });

    it("a RunTask error that may have applied leaves the claim in progress but expired, so the redelivery takes it over at once", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      t.ecsMock.on(RunTaskCommand).rejects(Object.assign(new Error("socket hang up"), { name: "TimeoutError" }));
      const record = sqsRecord(retrainingBody());

      const res = await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(intents.items.get(record.messageId)).to.include({ status: "in_progress", in_progress_until: 0, first_claimed_at: T0 });
    });

    it("the completion's write fails: the record fails (retried), and the redelivery's RunTask carries the same clientToken", async () => {
      const t = mockedLauncherDeps();
      const intents = arrange(t);
      intents.failNext("complete", new Error("ProvisionedThroughputExceededException"));
      const record = sqsRecord(retrainingBody());
      const handler = createLauncherHandler(t.deps);

      const first = await handler(sqsEvent(record));
      const later = { ...t.deps, now: () => new Date(T0 + 600_000) };
      const second = await createLauncherHandler(later)(sqsEvent(record));

      expect(first.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(second.batchItemFailures).to.deep.equal([]);
      expect(tokens(t)).to.deep.equal([record.messageId, record.messageId], "ECS's clientToken (24 h) makes the second the same task");
      expect(intents.items.get(record.messageId)).to.include({ status: "launched" });
    });

    describe("last receive (MAX_RECEIVE_COUNT): the launcher dead-letters a failing message itself, stamped with its origin", () => {
      const lastReceive = (n: number, o: Partial<SQSRecordLike> = {}) => {
        const r = sqsRecord(retrainingBody(), o);
        return { ...r, attributes: { ...r.attributes, ApproximateReceiveCount: String(n) } };
      };

      it("sent to the DLQ with origin, deferrals, reason and source id, and acknowledged", async () => {
        const t = mockedLauncherDeps({ maxReceiveCount: 3 });
        arrange(t);
        t.ecsMock.on(RunTaskCommand).rejects(new Error("ECS down"));
        const record = lastReceive(3);

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        const [parked] = t.sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
        expect(parked).to.deep.include({ QueueUrl: QUARANTINE_URL, MessageBody: record.body });
        expect(parked?.MessageAttributes).to.deep.equal({
          "retraining-origin-message-id": { DataType: "String", StringValue: record.messageId },
          "retraining-deferrals": { DataType: "Number", StringValue: "0" },
          "dead-letter-reason": { DataType: "String", StringValue: "retries_exhausted: Error: ECS down" },
          "source-message-id": { DataType: "String", StringValue: record.messageId },
        });
      });

      const kept: Array<[string, Partial<LauncherConfigLike>, number, boolean]> = [
        ["an earlier receive", { maxReceiveCount: 3 }, 2, false],
        ["MAX_RECEIVE_COUNT unknown", {}, 9, false],
        ["the DLQ refuses the copy", { maxReceiveCount: 3 }, 3, true],
      ];
      for (const [label, config, receives, refused] of kept) {
        it(`${label}: the record fails as before (SQS moves it)`, async () => {
          const t = mockedLauncherDeps(config);
          arrange(t);
          t.ecsMock.on(RunTaskCommand).rejects(new Error("ECS down"));
          if (refused) t.sqsMock.on(SendMessageCommand).rejects(new Error("too many attributes"));
          const record = lastReceive(receives);

          const res = await createLauncherHandler(t.deps)(sqsEvent(record));

          expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        });
      }
    });
  });

  describe("log steps and counts of docs/parts/retraining.md", () => {
    const T0 = Date.parse("2024-01-01T12:00:00.000Z");
    /** The one entry logged with `step`: its level and its fields without the step itself. */
    const only = (t: Harness, step: string) => {
      const entries = t.logger.withStep(step);
      expect(entries, `${step} logged once`).to.have.length(1);
      const { step: _step, ...fields } = entries[0]?.fields ?? {};
      return { level: entries[0]?.level, fields };
    };
    const leaseHolder = (t: Harness) => t.dbMock.commandCalls(PutCommand)[0]?.args[0].input.Item?.holder as string;
    const lastReceive = (r: SQSRecordLike) => ({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: "3" } });

    it("reads the intents of, and names on the lease, only the origins of valid messages", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      const valid = sqsRecord(retrainingBody());

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord("{"), valid, sqsRecord(JSON.stringify({ model_name: "M" }))));

      expect(t.dbMock.commandCalls(BatchGetCommand)[0]?.args[0].input.RequestItems?.["retraining-intent"]?.Keys).to.deep.equal([
        { origin_message_id: valid.messageId },
      ]);
      expect(t.dbMock.commandCalls(PutCommand)[0]?.args[0].input.Item?.origin_message_ids).to.deep.equal([valid.messageId]);
    });

    it("lease: acquired {holder, attempts, expires_at}, released {holder}; busy {holder, waited_until}", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody())));
      const busy = mockedLauncherDeps();
      arrange(busy);
      busy.dbMock.on(PutCommand).rejects(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: T0 + 20_000 }));
      await createLauncherHandler(busy.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(only(t, "capacity_lease_acquired")).to.deep.equal({
        level: "info",
        fields: { holder: leaseHolder(t), attempts: 1, expires_at: "2024-01-01T12:00:30.000Z" },
      });
      expect(only(t, "capacity_lease_released")).to.deep.equal({ level: "info", fields: { holder: leaseHolder(t) } });
      expect(only(busy, "capacity_lease_busy")).to.deep.equal({
        level: "warn",
        fields: { holder: leaseHolder(busy), waited_until: "2024-01-01T12:00:03.000Z" },
      });
    });

    it("lease: lost to another holder {holder} (warn); a release that errors is logged, not thrown, and the batch's outcome stands", async () => {
      const lost = mockedLauncherDeps();
      arrange(lost);
      lost.dbMock
        .on(DeleteCommand, { TableName: "retraining-state" })
        .rejects(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: 0 }));
      const broken = mockedLauncherDeps();
      arrange(broken);
      broken.dbMock.on(DeleteCommand, { TableName: "retraining-state" }).rejects(new Error("dynamo down"));

      await createLauncherHandler(lost.deps)(sqsEvent(sqsRecord(retrainingBody())));
      const res = await createLauncherHandler(broken.deps)(sqsEvent(sqsRecord(retrainingBody())));

      expect(only(lost, "capacity_lease_lost")).to.deep.equal({ level: "warn", fields: { holder: leaseHolder(lost) } });
      expect(res.batchItemFailures).to.deep.equal([]);
      expect(only(broken, "capacity_lease_release_failed")).to.deep.equal({
        level: "error",
        fields: { holder: leaseHolder(broken), error: "Error: dynamo down" },
      });
      expect(broken.logger.steps()).to.not.include("capacity_lease_released");
    });

    it("a launch: ecs_task_launched and state_recorded with their fields, no takeover and no superseded completion", async () => {
      const t = mockedLauncherDeps({ useSpot: true });
      arrange(t);
      const record = sqsRecord(retrainingBody({ model_name: "PascalStrategy-btc", trigger: "manual" }));
      const jobId = jobIdFor(record.messageId);

      await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(only(t, "ecs_task_launched")).to.deep.equal({
        level: "info",
        fields: {
          message_id: record.messageId,
          model_name: "PascalStrategy-btc",
          job_id: jobId,
          task_arn: taskArn(1),
          trigger: "manual",
          capacity_provider: "FARGATE_SPOT",
        },
      });
      expect(only(t, "state_recorded")).to.deep.equal({ level: "info", fields: { model_name: "PascalStrategy-btc", task_arn: taskArn(1), job_id: jobId } });
      expect(t.logger.steps()).to.not.include.members(["launch_intent_taken_over"]);
      expect(t.logger.steps()).to.not.include.members(["launch_intent_superseded"]);
    });

    it("batch_processed counts {received, processed, failed, launched, deferred}", async () => {
      const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
      const intents = arrange(t);
      const duplicate = sqsRecord(retrainingBody());
      intents.items.set(duplicate.messageId, launchedIntent(duplicate.messageId));

      await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord(retrainingBody()), duplicate, sqsRecord("{")));

      expect(only(t, "batch_processed")).to.deep.equal({ level: "info", fields: { received: 4, processed: 2, failed: 0, launched: 1, deferred: 1 } });
    });

    it("a deferral for a busy lease carries no running count or cap (those belong to at_capacity)", async () => {
      const t = mockedLauncherDeps();
      arrange(t);
      t.dbMock.on(PutCommand).rejects(conditionFailed({ model_name: "#capacity-lease", holder: "someone-else", expires_at: T0 + 20_000 }));
      const record = sqsRecord(retrainingBody());

      await createLauncherHandler(t.deps)(sqsEvent(record));

      expect(only(t, "capacity_deferred")).to.deep.equal({
        level: "info",
        fields: {
          message_id: record.messageId,
          origin_message_id: record.messageId,
          model_name: "PascalStrategy",
          reason: "lease_busy",
          deferrals: 1,
          delay_seconds: 60,
        },
      });
    });

    describe("duplicates", () => {
      it("acknowledged and counted as processed; the repair of its state record is not logged as a new record", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, launchedIntent(record.messageId));

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(t.metrics.count("SQSMessagesProcessed")).to.equal(1);
        expect(stateUpdates(t)).to.have.length(1, "the repair is written");
        expect(t.logger.steps()).to.not.include("state_recorded");
      });

      it("a repair that fails is logged state_repair_failed (warn) and the duplicate is still acknowledged", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        t.dbMock.on(UpdateCommand, { TableName: "retraining-state" }).rejects(new Error("dynamo down"));
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, launchedIntent(record.messageId));

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(only(t, "state_repair_failed")).to.deep.equal({
          level: "warn",
          fields: { message_id: record.messageId, model_name: "PascalStrategy", task_arn: taskArn(99), error: "Error: dynamo down" },
        });
        expect(t.logger.steps()).to.not.include("state_record_failed");
      });

      it("an origin launched between the batch's read and its claim is acknowledged as a duplicate, not deferred", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, launchedIntent(record.messageId));
        // The batch's read happened before that launch completed.
        t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(runTaskInputs(t)).to.deep.equal([]);
        expect(deferredCopies(t)).to.deep.equal([]);
        expect(only(t, "duplicate_message_skipped").fields).to.deep.equal({
          message_id: record.messageId,
          origin_message_id: record.messageId,
          model_name: "PascalStrategy",
          job_id: jobIdFor(record.messageId),
          task_arn: taskArn(99),
        });
      });
    });

    describe("the claim", () => {
      const fieldsOf = (record: SQSRecordLike) => ({
        message_id: record.messageId,
        origin_message_id: record.messageId,
        model_name: "PascalStrategy",
        job_id: jobIdFor(record.messageId),
      });

      it("a takeover of a dead attempt's claim is logged launch_intent_taken_over (warn) with the message's ids", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, {
          origin_message_id: record.messageId,
          status: "in_progress",
          attempt: "dead",
          in_progress_until: T0 - 1,
          first_claimed_at: T0 - 600_000,
        });

        await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(only(t, "launch_intent_taken_over")).to.deep.equal({ level: "warn", fields: { ...fieldsOf(record), fallback: false } });
      });

      it("another live attempt's claim is logged launch_in_progress_elsewhere {until}", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, {
          origin_message_id: record.messageId,
          status: "in_progress",
          attempt: "alive",
          in_progress_until: T0 + 20_000,
          first_claimed_at: T0 - 1_000,
        });

        await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(only(t, "launch_in_progress_elsewhere")).to.deep.equal({ level: "info", fields: { ...fieldsOf(record), until: "2024-01-01T12:00:20.000Z" } });
      });

      it("a claim beyond the clientToken window is logged launch_outcome_unknown {first_claimed_at} (error)", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        intents.items.set(record.messageId, {
          origin_message_id: record.messageId,
          status: "in_progress",
          attempt: "dead",
          in_progress_until: T0 - 1,
          first_claimed_at: T0 - 3 * 86_400_000,
        });

        await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(only(t, "launch_outcome_unknown")).to.deep.equal({
          level: "error",
          fields: { ...fieldsOf(record), first_claimed_at: "2023-12-29T12:00:00.000Z" },
        });
      });

      it("a claim that fails with a DynamoDB error fails the record with that error (dead-lettered with it on the last receive)", async () => {
        const t = mockedLauncherDeps({ maxReceiveCount: 3 });
        const intents = arrange(t);
        intents.failNext("claim", Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" }));
        const record = lastReceive(sqsRecord(retrainingBody()));

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(runTaskInputs(t)).to.deep.equal([]);
        const reason = "retries_exhausted: ProvisionedThroughputExceededException: throttled";
        expect(t.sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes?.["dead-letter-reason"]?.StringValue).to.equal(reason);
        expect(only(t, "message_dead_lettered")).to.deep.equal({
          level: "warn",
          fields: { message_id: record.messageId, origin_message_id: record.messageId, model_name: "PascalStrategy", reason },
        });
      });

      it("a dead-letter copy the DLQ refuses is logged dead_letter_failed (error) and the record fails", async () => {
        const t = mockedLauncherDeps({ maxReceiveCount: 3 });
        arrange(t);
        t.ecsMock.on(RunTaskCommand).rejects(new Error("ECS down"));
        t.sqsMock.on(SendMessageCommand).rejects(new Error("too many attributes"));
        const record = lastReceive(sqsRecord(retrainingBody()));

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(only(t, "dead_letter_failed")).to.deep.equal({
          level: "error",
          fields: { message_id: record.messageId, origin_message_id: record.messageId, model_name: "PascalStrategy", error: "Error: too many attributes" },
        });
      });
    });

    describe("after RunTask", () => {
      it("a RunTask error whose claim cannot be released: launch_intent_release_failed is logged and the record fails with the RunTask error", async () => {
        const t = mockedLauncherDeps();
        arrange(t);
        t.ecsMock.on(RunTaskCommand).rejects(new Error("ECS down"));
        t.dbMock.on(UpdateCommand, { TableName: "retraining-intent", ExpressionAttributeValues: { ":zero": 0 } }).rejects(new Error("dynamo down"));
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(only(t, "ecs_task_launch_failed")).to.deep.equal({
          level: "error",
          fields: { message_id: record.messageId, model_name: "PascalStrategy", capacity_provider: "FARGATE", error: "Error: ECS down" },
        });
        expect(only(t, "launch_intent_release_failed")).to.deep.equal({
          level: "error",
          fields: { origin_message_id: record.messageId, error: "Error: dynamo down" },
        });
      });

      it("a completion that fails is logged launch_intent_complete_failed (error) with the task", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        intents.failNext("complete", new Error("dynamo down"));
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(only(t, "launch_intent_complete_failed")).to.deep.equal({
          level: "error",
          fields: { origin_message_id: record.messageId, model_name: "PascalStrategy", task_arn: taskArn(1), error: "Error: dynamo down" },
        });
      });

      it("a completion that finds its claim taken over is logged launch_intent_superseded (warn) and the launch still stands", async () => {
        const t = mockedLauncherDeps();
        const intents = arrange(t);
        const record = sqsRecord(retrainingBody());
        // While this RunTask runs, another attempt takes the claim over.
        t.ecsMock.on(RunTaskCommand).callsFake(() => {
          intents.items.set(record.messageId, { ...intents.items.get(record.messageId), attempt: "thief" });
          return { tasks: [{ taskArn: taskArn(1) }], failures: [] };
        });

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(only(t, "launch_intent_superseded")).to.deep.equal({
          level: "warn",
          fields: { origin_message_id: record.messageId, model_name: "PascalStrategy", task_arn: taskArn(1), by_attempt: "thief", status: "in_progress" },
        });
        expect(t.logger.steps()).to.include("state_recorded");
      });

      it("a state record that fails after a launch is logged state_record_failed (error) and the record fails (retried as a duplicate)", async () => {
        const t = mockedLauncherDeps();
        arrange(t);
        t.dbMock.on(UpdateCommand, { TableName: "retraining-state" }).rejects(new Error("dynamo down"));
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(only(t, "state_record_failed")).to.deep.equal({
          level: "error",
          fields: { message_id: record.messageId, model_name: "PascalStrategy", task_arn: taskArn(1), error: "Error: dynamo down" },
        });
      });

      it("a state record a newer launch already holds is left alone and logged state_superseded {newer_message_id}", async () => {
        const t = mockedLauncherDeps();
        arrange(t);
        t.dbMock.on(UpdateCommand, { TableName: "retraining-state" }).rejects(conditionFailed({ model_name: "PascalStrategy", message_id: "newer" }));
        const record = sqsRecord(retrainingBody());

        const res = await createLauncherHandler(t.deps)(sqsEvent(record));

        expect(res.batchItemFailures).to.deep.equal([]);
        expect(only(t, "state_superseded")).to.deep.equal({
          level: "info",
          fields: { model_name: "PascalStrategy", task_arn: taskArn(1), job_id: jobIdFor(record.messageId), newer_message_id: "newer" },
        });
        expect(t.logger.steps()).to.not.include("state_recorded");
      });
    });
  });
});
