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
  quarantineQueueArn: "arn:aws:sqs:us-east-1:123456789012:retraining-dlq",
  retrainingQueueArn: "arn:aws:sqs:us-east-1:123456789012:retraining",
} satisfies LauncherAccess;

describe("retraining IAM action lists match what the code calls", () => {
  it("every path together sends exactly LAUNCHER_CALLED_ACTIONS", async () => {
    const t = mockedLauncherDeps({ maxConcurrentTasks: 1 });
    t.ecsMock.on(ListTasksCommand).resolves({ taskArns: [] });
    t.ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/1" }] });
    t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
    t.dbMock.on(UpdateCommand).resolves({});
    t.dbMock.on(PutCommand).resolves({});
    t.dbMock.on(DeleteCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    t.sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: Array<{ Id: string }> }) => ({ Successful: input.Entries.map((e) => ({ Id: e.Id })), Failed: [] }));

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
  it("the lease actions are granted on the state table only", () => {
    const statements = launcherStatements(ACCESS);
    const onTable = statements.filter((s) => s.Action.some((a) => a === "dynamodb:PutItem" || a === "dynamodb:DeleteItem"));
    expect(onTable.map((s) => s.Resource)).to.deep.equal(["arn:aws:dynamodb:us-east-1:123456789012:table/retraining-state"]);
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
