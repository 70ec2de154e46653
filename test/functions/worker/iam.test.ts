import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { AGENT_METHOD_ACTIONS, WORKER_GRANTS, WORKER_IAM_ACTIONS } from "../../../functions/worker/iam";
import { dynamoLedgerStore, JobLedger } from "../../../functions/worker/ledger";
import { createWorker } from "../../../functions/worker/worker";
import { allowedActions } from "../../../infra/iam/document";
import { workerTaskRoleStatements } from "../../../infra/parts/worker";
import { FakeEcsAgent } from "../helpers/ecs-agent";
import { job, message, mockedWorkerDeps } from "../helpers/worker-deps";
import { httpFetch, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";

describe("worker IAM: the action list matches what the code calls", function () {
  this.timeout(10_000);
  const agent = new FakeEcsAgent();
  before(() => agent.start());
  after(() => agent.stop());
  useFakeTime();

  it("every path together (start-up, a job, a failed job, a malformed message, shutdown) calls exactly WORKER_IAM_ACTIONS", async () => {
    agent.protectedNow = true; // a leftover protection: start-up reads it (GET) and releases it (PUT)
    const t = mockedWorkerDeps({
      config: { agentUri: agent.uri },
      handlers: { work: () => sleep(20), boom: () => Promise.reject(new Error("exit 1")) },
      fetch: httpFetch,
    });
    // The ledger through the real DynamoDB store, so its calls are SDK commands the test can see.
    const db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } }));
    const dbMock = mockClient(db);
    // Every ledger write asks ALL_NEW, and an applied UpdateItem answers with the item it left.
    dbMock.on(UpdateCommand).callsFake((input: { Key: { job_key: string } }) => ({
      Attributes: {
        job_key: input.Key.job_key,
        state: "running",
        holder: "task",
        lease_token: "any",
        lease_expires_at: Date.now() + 180_000,
        receipt_handle: "rh-in-table",
        runs: 1,
      },
    }));
    const ledger = new JobLedger({ store: dynamoLedgerStore(db, "worker-jobs"), holder: () => Promise.resolve("task"), leaseMs: 180_000 });
    const inbox = [[message(job("work")), message("not json"), message(job("boom"))]];
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(10);
      return { Messages: inbox.shift() ?? [] };
    });
    t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
    t.sqsMock.on(DeleteMessageCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    const worker = createWorker({ ...t.deps, ledger, config: { ...t.deps.config, concurrency: 3 } });
    const running = worker.run();
    await waitFor(() => t.sqsMock.commandCalls(DeleteMessageCommand).length === 2 && worker.stats.failed === 1, 5000, "all three messages handled");
    worker.stop("test");
    await until(running);

    const sqsActions = t.sqsMock.calls().map((c) => `sqs:${c.args[0].constructor.name.replace(/Command$/, "")}`);
    const agentActions = agent.requests.map((r) => AGENT_METHOD_ACTIONS[r.method]);
    // The DocumentClient's command names differ from the API's: UpdateCommand sends UpdateItem.
    const documentActions: Record<string, string> = {
      UpdateCommand: "dynamodb:UpdateItem",
      PutCommand: "dynamodb:PutItem",
      GetCommand: "dynamodb:GetItem",
      DeleteCommand: "dynamodb:DeleteItem",
    };
    const dbActions = dbMock.calls().map((c) => documentActions[c.args[0].constructor.name] ?? `unmapped:${c.args[0].constructor.name}`);
    expect(dbMock.commandCalls(UpdateCommand).map((c) => c.args[0].input.TableName)).to.include("worker-jobs");
    expect([...new Set([...sqsActions, ...agentActions, ...dbActions])]).to.have.members([...WORKER_IAM_ACTIONS]);
  });

  it("the task role's statements grant exactly WORKER_IAM_ACTIONS", () => {
    const statements = workerTaskRoleStatements({
      workQueueArn: "q",
      workDlqArn: "d",
      jobsTableArn: "t",
      clusterArn: "arn:aws:ecs:us-east-1:123456789012:cluster/c",
    });
    expect(allowedActions(statements)).to.deep.equal([...WORKER_IAM_ACTIONS].sort());
    expect(WORKER_GRANTS.filter((g) => g.resource === "work-dlq").flatMap((g) => g.actions)).to.deep.equal(["sqs:SendMessage"]);
  });
});
