import { ListTasksCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import { SendMessageBatchCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { BatchGetCommand, DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { createLauncherHandler } from "../../../functions/retraining/handler";
import { LAUNCHER_CALLED_ACTIONS, LAUNCHER_GRANTS, LAUNCHER_IAM_ACTIONS, type RetrainingResource } from "../../../functions/retraining/iam";
import { allowedActions } from "../../../infra/iam/document";
import { type LauncherAccess, launcherStatements } from "../../../infra/parts/retraining";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { mockedLauncherDeps, retrainingBody } from "../helpers/retraining-deps";

/** lib-dynamodb's commands are DynamoDB's *Item actions. */
const ACTION_OF: Record<string, string> = {
  ListTasksCommand: "ecs:ListTasks",
  RunTaskCommand: "ecs:RunTask",
  BatchGetCommand: "dynamodb:BatchGetItem",
  UpdateCommand: "dynamodb:UpdateItem",
  PutCommand: "dynamodb:PutItem",
  DeleteCommand: "dynamodb:DeleteItem",
  SendMessageCommand: "sqs:SendMessage",
  // IAM has no action of its own for the batch call.
  SendMessageBatchCommand: "sqs:SendMessage",
};

const ACCESS = {
  clusterArn: "arn:c",
  clusterName: "c",
  taskDefinitionFamilyArn: "arn:td",
  taskRoleArn: "arn:aws:iam::123456789012:role/t",
  executionRoleArn: "arn:aws:iam::123456789012:role/e",
  region: "us-east-1",
  accountId: "123456789012",
  stateTableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/retraining-state",
  intentTableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/retraining-intent",
  quarantineQueueArn: "arn:aws:sqs:us-east-1:123456789012:retraining-dlq",
  retrainingQueueArn: "arn:aws:sqs:us-east-1:123456789012:retraining",
} satisfies LauncherAccess;

/** Every path of the handler in one batch: launch, quarantine and deferral (the cap of 1 is taken by the first). */
async function everyPath() {
  const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
  t.ecsMock.on(ListTasksCommand).resolves({ taskArns: [] });
  t.ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/1" }] });
  t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
  t.dbMock.on(UpdateCommand).resolves({});
  t.dbMock.on(PutCommand).resolves({});
  t.dbMock.on(DeleteCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  t.sqsMock
    .on(SendMessageBatchCommand)
    .callsFake((input: { Entries: Array<{ Id: string }> }) => ({ Successful: input.Entries.map((e) => ({ Id: e.Id })), Failed: [] }));
  await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord("nope"), sqsRecord(retrainingBody({ model_name: "Other" }))));
  return t;
}

describe("retraining IAM action lists match what the code calls", () => {
  it("each DynamoDB action is granted on exactly the tables the code sends it to", async () => {
    const t = await everyPath();
    // A definite launch failure deletes its claim: the one intent-table call the happy paths do not make.
    const called = new Set<string>(["dynamodb:DeleteItem arn:aws:dynamodb:us-east-1:123456789012:table/retraining-intent"]);
    const arnOf: Record<string, string> = { "retraining-state": ACCESS.stateTableArn, "retraining-intent": ACCESS.intentTableArn };
    for (const c of t.dbMock.calls()) {
      const input = c.args[0].input as { TableName?: string; RequestItems?: Record<string, unknown> };
      for (const table of input.TableName ? [input.TableName] : Object.keys(input.RequestItems ?? {}))
        called.add(`${ACTION_OF[c.args[0].constructor.name]} ${arnOf[table]}`);
    }
    const granted = launcherStatements(ACCESS)
      .filter((s) => s.Action.some((a) => a.startsWith("dynamodb:")))
      .flatMap((s) => s.Action.flatMap((a) => [s.Resource].flat().map((r) => `${a} ${String(r)}`)));
    expect(granted).to.have.members([...called]);
  });

  it("every path together sends exactly LAUNCHER_CALLED_ACTIONS", async () => {
    const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
    t.ecsMock.on(ListTasksCommand).resolves({ taskArns: [] });
    t.ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/1" }] });
    t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
    t.dbMock.on(UpdateCommand).resolves({});
    t.dbMock.on(PutCommand).resolves({});
    t.dbMock.on(DeleteCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    t.sqsMock
      .on(SendMessageBatchCommand)
      .callsFake((input: { Entries: Array<{ Id: string }> }) => ({ Successful: input.Entries.map((e) => ({ Id: e.Id })), Failed: [] }));

    // Launch, quarantine and deferral (the second valid message finds the cap of 1 taken).
    await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord("nope"), sqsRecord(retrainingBody({ model_name: "Other" }))));

    const commands = [t.ecsMock, t.dbMock, t.sqsMock].flatMap((m) => m.calls().map((c) => c.args[0].constructor.name));
    expect(commands).to.include("SendMessageBatchCommand");
    const sent = commands.map((name) => ACTION_OF[name] ?? name);
    expect([...new Set(sent)]).to.have.members([...LAUNCHER_CALLED_ACTIONS]);
  });

  it("the launcher's statements grant exactly LAUNCHER_IAM_ACTIONS (calls plus PassRole and tag-on-create)", () => {
    const statements = launcherStatements(ACCESS);
    expect(allowedActions(statements)).to.deep.equal([...LAUNCHER_IAM_ACTIONS].sort());
    const passRole = statements.find((s) => s.Action.includes("iam:PassRole"));
    expect(passRole?.Resource).to.deep.equal(["arn:aws:iam::123456789012:role/t", "arn:aws:iam::123456789012:role/e"]);
    expect(passRole?.Condition).to.deep.equal({ StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } });
  });
});

describe("retraining IAM resources", () => {
  it("PutItem (the lease) is granted on the state table only; the intent table gets only what intent.ts calls", () => {
    const statements = launcherStatements(ACCESS);
    expect(statements.filter((s) => s.Action.includes("dynamodb:PutItem")).map((s) => s.Resource)).to.deep.equal([ACCESS.stateTableArn]);
    const onIntent = statements.filter((s) => [s.Resource].flat().includes(ACCESS.intentTableArn));
    expect(onIntent.flatMap((s) => s.Action)).to.have.members(["dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]);
  });

  it("sqs:SendMessage is granted on the DLQ (quarantine) and the launcher's own queue (deferral), and nowhere else", () => {
    const sendTo = launcherStatements(ACCESS)
      .filter((s) => s.Action.includes("sqs:SendMessage"))
      .flatMap((s) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]));
    expect(sendTo).to.have.members([ACCESS.quarantineQueueArn, ACCESS.retrainingQueueArn]);
  });

  // Each resource the code names (functions/retraining/iam.ts) maps to the grant that covers it.
  const ARN_OF: Partial<Record<RetrainingResource, string>> = {
    "state-table": ACCESS.stateTableArn,
    "intent-table": ACCESS.intentTableArn,
    "quarantine-queue": ACCESS.quarantineQueueArn,
    "retraining-queue": ACCESS.retrainingQueueArn,
  };
  for (const g of LAUNCHER_GRANTS) {
    const arn = ARN_OF[g.resource];
    if (arn === undefined) continue;
    for (const action of g.actions) {
      it(`${action} on ${g.resource} is granted on that resource`, () => {
        const granted = launcherStatements(ACCESS).some((s) => s.Action.includes(action) && [s.Resource].flat().includes(arn));
        expect(granted).to.equal(true);
      });
    }
  }
});
