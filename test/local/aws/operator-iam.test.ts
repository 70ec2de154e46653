import { expect } from "chai";
import { type Check, denialMessage, firstDenied, type PolicyStatement, statementAllows, wildcardMatch } from "../../../local/aws/operator-iam";

const STOP: PolicyStatement = {
  Sid: "StopStackGpu",
  Effect: "Allow",
  Action: ["ec2:StopInstances"],
  Resource: "arn:aws:ec2:us-east-1:123456789012:instance/*",
  Condition: { StringEquals: { "aws:ResourceTag/Name": "gpu-dev", "aws:ResourceTag/encache:environment": "dev" } },
};
const HOLD: PolicyStatement = {
  Sid: "HoldStackGpu",
  Effect: "Allow",
  Action: ["ec2:CreateTags"],
  Resource: "arn:aws:ec2:us-east-1:123456789012:instance/*",
  Condition: { StringEquals: { "aws:ResourceTag/Name": "gpu-dev" }, "ForAllValues:StringEquals": { "aws:TagKeys": ["encache:gpu-hold"] } },
};
const instance = "arn:aws:ec2:us-east-1:123456789012:instance/i-1";
const devTags = { "aws:ResourceTag/Name": "gpu-dev", "aws:ResourceTag/encache:environment": "dev" };

describe("the local judge of the operator's calls (IAM's evaluation, as the program's policies need it)", () => {
  it("matches IAM's wildcards, actions without regard to case", () => {
    // Act / Assess
    expect(wildcardMatch("arn:aws:sqs:*:123456789012:worker-?", "arn:aws:sqs:us-east-1:123456789012:worker-1")).to.equal(true);
    expect(wildcardMatch("arn:aws:sqs:*:123456789012:worker-?", "arn:aws:sqs:us-east-1:123456789012:worker-12")).to.equal(false);
    expect(wildcardMatch("sqs:SendMessage", "sqs:sendmessage", true)).to.equal(true);
  });

  it("allows a tag-conditioned stop on the stack's GPU only", () => {
    // Act
    const own = statementAllows(STOP, { action: "ec2:StopInstances", resource: instance, context: devTags });
    const other = statementAllows(STOP, {
      action: "ec2:StopInstances",
      resource: instance,
      context: { ...devTags, "aws:ResourceTag/encache:environment": "prod" },
    });
    const untagged = statementAllows(STOP, { action: "ec2:StopInstances", resource: instance, context: {} });
    // Assess
    expect([own, other, untagged]).to.deep.equal([true, false, false]);
  });

  it("lets a hold write the hold tag and no other key", () => {
    // Act
    const hold = statementAllows(HOLD, { action: "ec2:CreateTags", resource: instance, context: { ...devTags, "aws:TagKeys": ["encache:gpu-hold"] } });
    const rename = statementAllows(HOLD, {
      action: "ec2:CreateTags",
      resource: instance,
      context: { ...devTags, "aws:TagKeys": ["encache:gpu-hold", "Name"] },
    });
    // Assess
    expect([hold, rename]).to.deep.equal([true, false]);
  });

  it("fails closed on a condition operator it cannot evaluate", () => {
    // Prepare
    const odd: PolicyStatement = { ...STOP, Condition: { NumericLessThan: { "aws:MultiFactorAuthAge": "3600" } } };
    // Act / Assess
    expect(statementAllows(odd, { action: "ec2:StopInstances", resource: instance, context: { "aws:MultiFactorAuthAge": "1" } })).to.equal(false);
  });

  it("names the first check no statement allows, in AWS's words", () => {
    // Prepare
    const checks: Check[] = [
      { action: "ec2:StopInstances", resource: instance, context: devTags },
      { action: "ec2:TerminateInstances", resource: instance, context: devTags },
    ];
    // Act
    const denied = firstDenied([STOP, HOLD], checks);
    // Assess
    expect(denied?.action).to.equal("ec2:TerminateInstances");
    expect(denialMessage("arn:aws:sts::123456789012:assumed-role/operator/x", denied!)).to.equal(
      `User: arn:aws:sts::123456789012:assumed-role/operator/x is not authorized to perform: ec2:TerminateInstances on resource: ${instance} because no identity-based policy allows the ec2:TerminateInstances action`,
    );
  });
});
