import { expect } from "chai";
import { allowedActions } from "../../../infra/iam/document";
import { gpuEc2Statements, ingestStatements } from "../../../infra/parts/ingest";
import { DLQ_IAM_ACTIONS, WINDOW_IAM_ACTIONS } from "../../../functions/ingest/iam";

describe("ingest statements (infra/parts/ingest.ts bindings)", () => {
  const access = { parameterArn: "arn:param", quarantineQueueArn: "arn:quarantine", dlqArn: "arn:dlq", queueArn: "arn:ingest" };

  it("grants the window consumer exactly what its code calls", () => {
    expect(allowedActions(ingestStatements(access).window)).to.deep.equal([...WINDOW_IAM_ACTIONS].sort());
  });

  it("grants the DLQ consumer exactly what its code calls, inline plus the GPU EC2 policy", () => {
    const granted = allowedActions([
      ...ingestStatements(access).dlq,
      ...gpuEc2Statements({ region: "us-east-1", accountId: "123456789012", nameTag: "gpu", environment: "dev" }),
    ]);
    expect(granted).to.deep.equal([...DLQ_IAM_ACTIONS].sort());
  });

  it("scopes StartInstances by the Name and environment tag conditions and SSM to the one parameter", () => {
    const [start] = gpuEc2Statements({ region: "eu-west-1", accountId: "123456789012", nameTag: "encache-gpu-worker", environment: "prod" });
    expect(start).to.deep.include({ Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*" });
    expect(start!.Condition).to.deep.equal({ StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker", "aws:ResourceTag/encache:environment": "prod" } });
    const ssm = ingestStatements(access).window.filter((s) => s.Action.some((a) => a.startsWith("ssm:")));
    expect(ssm.map((s) => s.Resource)).to.deep.equal(["arn:param"]);
  });

  it("lets the window consumer change visibility on its own queue only", () => {
    const retry = ingestStatements(access).window.filter((s) => s.Action.includes("sqs:ChangeMessageVisibility"));
    expect(retry.map((s) => [s.Sid, s.Resource])).to.deep.equal([["RetryWindowSoon", "arn:ingest"]]);
  });

  it("never uses a wildcard action", () => {
    const { window, dlq } = ingestStatements(access);
    for (const a of allowedActions([...window, ...dlq, ...gpuEc2Statements({ region: "r", accountId: "123456789012", nameTag: "n", environment: "dev" })]))
      expect(a).to.match(/^[a-z0-9]+:[A-Za-z]+$/);
  });
});
