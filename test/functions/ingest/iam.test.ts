import { StartInstancesCommand } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityBatchCommand, ChangeMessageVisibilityCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetParameterCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { createDlqHandler } from "../../../functions/ingest/dlq-handler";
import { DLQ_IAM_ACTIONS, WINDOW_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { createWindowHandler } from "../../../functions/ingest/window-handler";
import { fakeDescribeInstances, mockedIngestDeps, PARAM, type FakeInstance } from "../helpers/ingest-deps";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";

type Harness = ReturnType<typeof mockedIngestDeps>;

const SERVICE_PREFIX: Record<string, string> = { SSMClient: "ssm", EC2Client: "ec2", SQSClient: "sqs" };
/** Batch APIs that IAM authorises with the single-message action. */
const AUTHORISED_AS: Record<string, string> = { "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility" };

/** "ssm:GetParameter" for every command the handler actually sent through the mocked clients. */
function actionsSent(t: Harness): Set<string> {
  const actions = new Set<string>();
  for (const [client, mock] of [
    ["SSMClient", t.ssmMock],
    ["EC2Client", t.ec2Mock],
    ["SQSClient", t.sqsMock],
  ] as const) {
    for (const call of mock.calls()) {
      const command = call.args[0].constructor.name.replace(/Command$/, "");
      const action = `${SERVICE_PREFIX[client]}:${command}`;
      actions.add(AUTHORISED_AS[action] ?? action);
    }
  }
  return actions;
}

function arrange(t: Harness, ssmValue: string, instances: FakeInstance[]): void {
  t.ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves({ Parameter: { Name: PARAM, Value: ssmValue } });
  t.ssmMock.on(PutParameterCommand).resolves({});
  fakeDescribeInstances(t.ec2Mock, instances);
  t.ec2Mock.on(StartInstancesCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
  t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
}

describe("ingest IAM action lists match what the code calls", () => {
  it("window handler: every path together sends exactly WINDOW_IAM_ACTIONS", async () => {
    const t = mockedIngestDeps();
    arrange(t, "i-dead", [{ id: "i-live", state: "running", ip: "10.0.0.1" }]);

    const handler = createWindowHandler(t.deps);
    await handler(sqsEvent(sqsRecord(), sqsRecord("not json"))); // tag scan + write-back + quarantine
    arrange(t, "none", []);
    await handler(sqsEvent(sqsRecord())); // no GPU: the window comes back soon

    expect([...actionsSent(t)]).to.have.members([...WINDOW_IAM_ACTIONS]);
  });

  it("DLQ handler: every path together sends exactly DLQ_IAM_ACTIONS", async () => {
    const t = mockedIngestDeps();
    arrange(t, "i-dead", [{ id: "i-stopped", state: "stopped" }]);
    const handler = createDlqHandler(t.deps);

    await handler(sqsEvent(sqsRecord(), sqsRecord("not json"))); // start + park + quarantine
    arrange(t, "i-dead", [{ id: "i-live", state: "running", ip: "10.0.0.1" }]);
    await handler(sqsEvent(sqsRecord())); // tag scan finds a running GPU → SSM write-back

    expect([...actionsSent(t)]).to.have.members([...DLQ_IAM_ACTIONS]);
  });
});
