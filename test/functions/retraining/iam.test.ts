import { ListTasksCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { BatchGetCommand, DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { createLauncherHandler } from "../../../functions/retraining/handler";
import { LAUNCHER_CALLED_ACTIONS, LAUNCHER_IAM_ACTIONS } from "../../../functions/retraining/iam";
import { allowedActions } from "../../../infra/iam/document";
import { launcherStatements } from "../../../infra/iam/retraining";
import { sqsEvent, sqsRecord } from "../support/sqs-events";
import { mockedLauncherDeps, retrainingBody } from "./support";

/** lib-dynamodb's commands are DynamoDB's *Item actions. */
const ACTION_OF: Record<string, string> = {
  ListTasksCommand: "ecs:ListTasks",
  RunTaskCommand: "ecs:RunTask",
  BatchGetCommand: "dynamodb:BatchGetItem",
  UpdateCommand: "dynamodb:UpdateItem",
  PutCommand: "dynamodb:PutItem",
  DeleteCommand: "dynamodb:DeleteItem",
  SendMessageCommand: "sqs:SendMessage",
};

describe("retraining IAM action lists match what the code calls", () => {
  it("every path together sends exactly LAUNCHER_CALLED_ACTIONS", async () => {
    const t = mockedLauncherDeps();
    t.ecsMock.on(ListTasksCommand).resolves({ taskArns: [] });
    t.ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/1" }] });
    t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
    t.dbMock.on(UpdateCommand).resolves({});
    t.dbMock.on(PutCommand).resolves({});
    t.dbMock.on(DeleteCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});

    await createLauncherHandler(t.deps)(sqsEvent(sqsRecord(retrainingBody()), sqsRecord("nope")));

    const sent = [t.ecsMock, t.dbMock, t.sqsMock].flatMap((m) => m.calls().map((c) => ACTION_OF[c.args[0].constructor.name] ?? c.args[0].constructor.name));
    expect([...new Set(sent)]).to.have.members([...LAUNCHER_CALLED_ACTIONS]);
  });

  it("the launcher's statements grant exactly LAUNCHER_IAM_ACTIONS (calls plus PassRole and tag-on-create)", () => {
    const statements = launcherStatements({
      clusterArn: "arn:c",
      clusterName: "c",
      taskDefinitionFamilyArn: "arn:td",
      taskRoleArn: "arn:aws:iam::123456789012:role/t",
      executionRoleArn: "arn:aws:iam::123456789012:role/e",
      region: "us-east-1",
      accountId: "123456789012",
      stateTableArn: "arn:table",
      quarantineQueueArn: "arn:dlq",
    });
    expect(allowedActions(statements)).to.deep.equal([...LAUNCHER_IAM_ACTIONS].sort());
    const passRole = statements.find((s) => s.Action.includes("iam:PassRole"));
    expect(passRole?.Resource).to.deep.equal(["arn:aws:iam::123456789012:role/t", "arn:aws:iam::123456789012:role/e"]);
    expect(passRole?.Condition).to.deep.equal({ StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } });
  });
});

describe("retraining IAM resources", () => {
  it("the lease actions are granted on the state table only", () => {
    const statements = launcherStatements({
      clusterArn: "arn:c",
      clusterName: "platform-cluster",
      taskDefinitionFamilyArn: "arn:td",
      taskRoleArn: "arn:t",
      executionRoleArn: "arn:e",
      region: "us-east-1",
      accountId: "123456789012",
      stateTableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/retraining-state",
      quarantineQueueArn: "arn:dlq",
    });
    const onTable = statements.filter((s) => s.Action.some((a) => a === "dynamodb:PutItem" || a === "dynamodb:DeleteItem"));
    expect(onTable.map((s) => s.Resource)).to.deep.equal(["arn:aws:dynamodb:us-east-1:123456789012:table/retraining-state"]);
  });
});
