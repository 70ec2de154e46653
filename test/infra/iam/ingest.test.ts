import { expect } from "chai";
import { allowedActions } from "../../../infra/iam/document";
import { dlqConsumerStatements, gpuEc2PolicyStatements, windowConsumerStatements } from "../../../infra/iam/ingest";
import { DLQ_IAM_ACTIONS, WINDOW_IAM_ACTIONS } from "../../../functions/ingest/iam";

const access = { parameterArn: "arn:param", quarantineQueueArn: "arn:quarantine", dlqArn: "arn:dlq" };

describe("IAM as plain data (infra/iam)", () => {
  it("grants the window consumer exactly what its code calls", () => {
    expect(allowedActions(windowConsumerStatements(access))).to.deep.equal([...WINDOW_IAM_ACTIONS].sort());
  });

  it("grants the DLQ consumer exactly what its code calls, inline plus the GPU EC2 policy", () => {
    const granted = allowedActions([...dlqConsumerStatements(access), ...gpuEc2PolicyStatements({ region: "us-east-1", nameTag: "gpu" })]);
    expect(granted).to.deep.equal([...DLQ_IAM_ACTIONS].sort());
  });

  it("scopes StartInstances by the Name tag condition and SSM to the one parameter", () => {
    const [start] = gpuEc2PolicyStatements({ region: "eu-west-1", nameTag: "encache-gpu-worker" });
    expect(start).to.deep.include({ Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:*:instance/*" });
    expect(start!.Condition).to.deep.equal({ StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker" } });
    const ssm = windowConsumerStatements(access).filter((s) => s.Action.some((a) => a.startsWith("ssm:")));
    expect(ssm.map((s) => s.Resource)).to.deep.equal(["arn:param"]);
  });

  it("never uses a wildcard action", () => {
    const all = [...windowConsumerStatements(access), ...dlqConsumerStatements(access), ...gpuEc2PolicyStatements({ region: "r", nameTag: "n" })];
    for (const a of allowedActions(all)) expect(a).to.match(/^[a-z0-9]+:[A-Za-z]+$/);
  });
});
