import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { isoUtc, type LaunchRecord, recordLaunch, type RecordResult } from "../../../functions/retraining/state";
import { conditionFailed, mockedLauncherDeps } from "../helpers/retraining-deps";

const LAUNCHED = Date.parse("2024-01-01T11:00:00.000Z");
const NOW = Date.parse("2024-01-01T12:00:00.000Z");
const launch: LaunchRecord = {
  modelName: "PascalStrategy",
  taskArn: "arn:task/1",
  jobId: "job-1",
  trigger: "manual",
  messageId: "origin-1",
  launchedAtMs: LAUNCHED,
  nowMs: NOW,
};

describe("retraining/state: the seed's state record", () => {
  it("is one UpdateItem of the model's row, setting the launch's fields, conditional on no newer launch being recorded", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(UpdateCommand).resolves({});

    await recordLaunch(t.deps.db, "retraining-state", launch);

    expect(t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input).to.deep.equal({
      TableName: "retraining-state",
      Key: { model_name: "PascalStrategy" },
      UpdateExpression:
        "SET task_arn = :task_arn, job_id = :job_id, trigger_type = :trigger_type, started_at = :started_at, #status = :status, updated_at = :updated_at, message_id = :message_id, launched_at = :launched_at REMOVE relaunched_from",
      ConditionExpression: "attribute_not_exists(launched_at) OR launched_at <= :launched_at",
      ExpressionAttributeNames: { "#status": "status" },
      ExpressionAttributeValues: {
        ":task_arn": "arn:task/1",
        ":job_id": "job-1",
        ":trigger_type": "manual",
        ":started_at": "2024-01-01T11:00:00+00:00",
        ":updated_at": "2024-01-01T12:00:00+00:00",
        ":status": "running",
        ":message_id": "origin-1",
        ":launched_at": LAUNCHED,
      },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
  });

  it("a relaunch records both attempts: the new task, and the interrupted one as relaunched_from", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(UpdateCommand).resolves({});

    await recordLaunch(t.deps.db, "retraining-state", { ...launch, relaunchedFrom: "arn:task/0" });

    const input = t.dbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.UpdateExpression).to.match(/, relaunched_from = :relaunched_from$/);
    expect(input?.ExpressionAttributeValues).to.deep.include({ ":task_arn": "arn:task/1", ":relaunched_from": "arn:task/0" });
  });

  const outcomes: Array<[string, (t: ReturnType<typeof mockedLauncherDeps>) => void, RecordResult]> = [
    ["written", (t) => t.dbMock.on(UpdateCommand).resolves({}), { kind: "recorded" }],
    [
      "its own earlier try applied (the condition failed against its own message id)",
      (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ model_name: "PascalStrategy", message_id: "origin-1" })),
      { kind: "recorded" },
    ],
    [
      "a newer launch is recorded",
      (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ model_name: "PascalStrategy", message_id: "origin-2" })),
      { kind: "superseded", by: "origin-2" },
    ],
    ["a failed condition without the item it failed against", (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed()), { kind: "superseded", by: "" }],
    [
      "a newer record without a message id",
      (t) => t.dbMock.on(UpdateCommand).rejects(conditionFailed({ model_name: "PascalStrategy", launched_at: NOW })),
      { kind: "superseded", by: "" },
    ],
  ];
  for (const [label, arrange, result] of outcomes) {
    it(`${label} → ${result.kind}`, async () => {
      const t = mockedLauncherDeps();
      arrange(t);

      expect(await recordLaunch(t.deps.db, "retraining-state", launch)).to.deep.equal(result);
    });
  }

  it("an error other than a failed condition propagates (the record is retried)", async () => {
    const t = mockedLauncherDeps();
    t.dbMock.on(UpdateCommand).rejects(Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" }));

    const error = await recordLaunch(t.deps.db, "retraining-state", launch).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).to.have.property("name", "ProvisionedThroughputExceededException");
  });

  it("timestamps are the original system's isoformat: seconds, explicit UTC offset", () => {
    expect(isoUtc(new Date("2024-02-29T23:59:59.999Z"))).to.equal("2024-02-29T23:59:59+00:00");
  });
});
