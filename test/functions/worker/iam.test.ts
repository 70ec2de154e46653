import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { AGENT_METHOD_ACTIONS, WORKER_GRANTS, WORKER_IAM_ACTIONS } from "../../../functions/worker/iam";
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

  it("every path together (start-up, a job, a malformed message, shutdown) calls exactly WORKER_IAM_ACTIONS", async () => {
    agent.protectedNow = true; // a leftover protection: start-up reads it (GET) and releases it (PUT)
    const t = mockedWorkerDeps({ config: { agentUri: agent.uri }, handlers: { work: () => sleep(20) }, fetch: httpFetch });
    const inbox = [[message(job("work")), message("not json")]];
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(10);
      return { Messages: inbox.shift() ?? [] };
    });
    t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
    t.sqsMock.on(DeleteMessageCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    const worker = createWorker({ ...t.deps, config: { ...t.deps.config, concurrency: 2 } });
    const running = worker.run();
    await waitFor(() => t.sqsMock.commandCalls(DeleteMessageCommand).length === 2, 5000, "both messages handled");
    worker.stop("test");
    await until(running);

    const sqsActions = t.sqsMock.calls().map((c) => `sqs:${c.args[0].constructor.name.replace(/Command$/, "")}`);
    const agentActions = agent.requests.map((r) => AGENT_METHOD_ACTIONS[r.method]);
    expect([...new Set([...sqsActions, ...agentActions])]).to.have.members([...WORKER_IAM_ACTIONS]);
  });

  it("the task role's statements grant exactly WORKER_IAM_ACTIONS", () => {
    const statements = workerTaskRoleStatements({ workQueueArn: "q", workDlqArn: "d", clusterArn: "arn:aws:ecs:us-east-1:123456789012:cluster/c" });
    expect(allowedActions(statements)).to.deep.equal([...WORKER_IAM_ACTIONS].sort());
    expect(WORKER_GRANTS.filter((g) => g.resource === "work-dlq").flatMap((g) => g.actions)).to.deep.equal(["sqs:SendMessage"]);
  });
});
