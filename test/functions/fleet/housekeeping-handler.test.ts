import { BatchWriteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParametersCommand, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import { mock } from "node:test";
import { expect } from "chai";
import { createHousekeepingHandler } from "../../../functions/fleet/housekeeping-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { awsError, contextWithRemaining, HOUSEKEEPING_DLQ_URL, housekeepingConfig, mockedClients } from "../helpers/fleet-deps";

const NOW = new Date("2025-11-25T12:00:00Z");

function arrange() {
  const t = mockedClients();
  t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
  t.ec2Mock.on(TerminateInstancesCommand).resolves({});
  t.ssmMock.on(GetParametersByPathCommand).resolves({ Parameters: [] });
  t.ssmMock.on(DeleteParametersCommand).resolves({});
  t.dynamodbMock.on(QueryCommand).resolves({ Items: [], Count: 0 });
  t.dynamodbMock.on(BatchWriteItemCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  const handler = createHousekeepingHandler({
    ...t.clients,
    logger: t.logger,
    metrics: t.metrics,
    config: housekeepingConfig({ pools: ["default"] }),
    now: () => NOW,
  });
  return { ...t, handler };
}

const message = (task_type: string, params: Record<string, unknown> = {}) => ({ task_type, timestamp: "2025-11-25T12:00:00Z", params });

describe("fleet housekeeping handler", () => {
  const dispatch: Array<{ task: string; firstCall: (t: ReturnType<typeof arrange>) => number; metric?: string }> = [
    { task: "orphaned_instances", firstCall: (t) => t.ec2Mock.commandCalls(DescribeInstancesCommand).length, metric: "OrphanedInstancesTerminated" },
    { task: "stale_ssm", firstCall: (t) => t.ssmMock.commandCalls(GetParametersByPathCommand).length, metric: "SSMParametersDeleted" },
    { task: "old_jobs", firstCall: (t) => t.dynamodbMock.commandCalls(QueryCommand).length, metric: "JobRecordsArchived" },
    { task: "pool_audit", firstCall: (t) => t.ec2Mock.commandCalls(DescribeInstancesCommand).length },
  ];
  for (const d of dispatch) {
    it(`dispatches ${d.task} to its task and logs start and completion`, async () => {
      const t = arrange();

      const response = await t.handler(sqsEvent(sqsRecord(message(d.task))));

      expect(response.batchItemFailures).to.deep.equal([]);
      expect(d.firstCall(t)).to.be.greaterThan(0);
      expect(t.logger.withStep("housekeeping_task_started")[0]?.fields).to.include({ task_type: d.task, scheduled_at: "2025-11-25T12:00:00Z" });
      expect(t.logger.withStep("housekeeping_task_completed")[0]?.fields).to.include({ task_type: d.task, complete: true });
      if (d.metric) expect(t.metrics.named(d.metric)).to.have.length(1);
      expect(t.metrics.published).to.equal(1);
    });
  }

  it("accepts the scheduler's message without params", async () => {
    const t = arrange();

    const response = await t.handler(sqsEvent(sqsRecord({ task_type: "old_jobs", timestamp: "2025-11-25T12:00:00Z" })));

    expect(response.batchItemFailures).to.deep.equal([]);
    expect(t.sqsMock.calls()).to.have.length(0);
  });

  describe("quarantines what can never run", () => {
    const cases: Array<[string, string | Record<string, unknown>, RegExp]> = [
      ["an unknown task type", message("defragment"), /unknown task_type "defragment" \(known: orphaned_instances, stale_ssm, old_jobs, pool_audit\)/],
      ["no task type", { timestamp: "2025-11-25T12:00:00Z", params: {} }, /task_type/],
      ["not JSON", "rate(1 hour)", /body is not JSON/],
      ["a missing timestamp", { task_type: "old_jobs", params: {} }, /timestamp/],
      ["an unknown parameter", message("old_jobs", { retention: 3 }), /params/],
      ["a parameter of the wrong type", message("orphaned_instances", { max_runtime_minutes: "60" }), /params.max_runtime_minutes/],
      // Not "unknown task_type": only a string names a task nobody implements.
      ["a task type that is not a string", { task_type: 5, timestamp: "2025-11-25T12:00:00Z", params: {} }, /^schema: task_type: /],
      ["a known task type with a bad timestamp (not called unknown)", { task_type: "old_jobs", timestamp: "yesterday", params: {} }, /^schema: timestamp: /],
      ["a body that is JSON but not an object", "null", /^schema: body: /],
    ];
    for (const [title, body, reason] of cases) {
      it(title, async () => {
        const t = arrange();

        const response = await t.handler(sqsEvent(sqsRecord(body)));

        expect(response.batchItemFailures).to.deep.equal([]);
        const sent = t.sqsMock.commandCalls(SendMessageCommand)[0]!.args[0].input;
        expect(sent.QueueUrl).to.equal(HOUSEKEEPING_DLQ_URL);
        expect(sent.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(reason);
        expect(t.ec2Mock.calls().length + t.ssmMock.calls().length + t.dynamodbMock.calls().length).to.equal(0);
      });
    }
  });

  it("a task that fails (after the SDK's retries) fails the record so SQS retries it", async () => {
    const t = arrange();
    t.ec2Mock.on(DescribeInstancesCommand).rejects(awsError("RequestLimitExceeded"));
    const record = sqsRecord(message("orphaned_instances"));

    const response = await t.handler(sqsEvent(record));

    expect(response.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
  });

  it("stops within the function's time: with less than the margin left, the task acts on one unit (progress), ends incomplete and the message is acknowledged", async () => {
    const t = arrange();
    t.dynamodbMock.on(QueryCommand).resolves({ Items: Array.from({ length: 30 }, (_, i) => ({ job_id: { S: `j${i}` } })) });

    const response = await t.handler(
      sqsEvent(sqsRecord(message("old_jobs"))),
      contextWithRemaining(() => 5_000),
    );

    expect(response.batchItemFailures).to.deep.equal([]);
    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand)).to.have.length(1);
    expect(t.logger.withStep("housekeeping_task_incomplete")[0]?.fields).to.include({ task_type: "old_jobs", complete: false });
  });

  it("uses the Lambda context's remaining time: plenty left, the task completes", async () => {
    const t = arrange();
    t.dynamodbMock.on(QueryCommand).resolves({ Items: [{ job_id: { S: "j1" } }] });

    await t.handler(
      sqsEvent(sqsRecord(message("old_jobs"))),
      contextWithRemaining(() => 250_000),
    );

    expect(t.dynamodbMock.commandCalls(BatchWriteItemCommand)).to.have.length(4);
    expect(t.logger.steps()).to.include("housekeeping_task_completed");
  });

  it("logs the task's duration, measured from its start", async () => {
    // Prepare: the clock is fake; the task's EC2 call takes 1.5 s of it.
    mock.timers.enable({ apis: ["Date"], now: NOW.getTime() });
    try {
      const t = arrange();
      t.ec2Mock.on(DescribeInstancesCommand).callsFake(() => {
        mock.timers.tick(1_500);
        return { Reservations: [] };
      });
      // Act
      await t.handler(sqsEvent(sqsRecord(message("pool_audit"))));
      // Assess
      expect(t.logger.withStep("housekeeping_task_completed")[0]?.fields).to.include({ task_type: "pool_audit", duration_ms: 1_500 });
    } finally {
      mock.timers.reset();
    }
  });

  it("publishes the stored metrics also when the task fails", async () => {
    // Prepare
    const t = arrange();
    t.ec2Mock.on(DescribeInstancesCommand).rejects(awsError("RequestLimitExceeded"));
    // Act
    await t.handler(sqsEvent(sqsRecord(message("orphaned_instances"))));
    // Assess
    expect(t.metrics.published).to.equal(1);
  });
});
