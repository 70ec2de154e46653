import { expect } from "chai";
import { actionPatternMatches, isActionAllowed, isWildcardAction, readPolicyDocument, wildcardGrants } from "../../../policy/lib/iam";

describe("policy/lib/iam", () => {
  it("matches IAM action globs case-insensitively", () => {
    expect(actionPatternMatches("ec2:Start*", "ec2:StartInstances")).to.equal(true);
    expect(actionPatternMatches("EC2:*", "ec2:DescribeInstances")).to.equal(true);
    expect(actionPatternMatches("*", "ec2:StartInstances")).to.equal(true);
    expect(actionPatternMatches("ec2:Sta?tInstances", "ec2:StartInstances")).to.equal(true);
    expect(actionPatternMatches("ec2:Stop*", "ec2:StartInstances")).to.equal(false);
    expect(actionPatternMatches("ec2:StartInstances.", "ec2:StartInstancesX")).to.equal(false);
  });

  it("reads a document given as a JSON string or an object, with a single Statement object", () => {
    const doc = { Version: "2012-10-17", Statement: { Effect: "Allow", Action: "ec2:StartInstances", Resource: "*" } };
    const expected = [{ effect: "Allow", actions: ["ec2:StartInstances"], sid: undefined }];
    expect(readPolicyDocument(doc, "d")).to.deep.equal(expected);
    expect(readPolicyDocument(JSON.stringify(doc), "d")).to.deep.equal(expected);
    expect(() => readPolicyDocument("{not json", "doc-x")).to.throw(/doc-x: policy document is not valid JSON/);
  });

  it("a matching Deny overrides an Allow; NotAction grants everything it does not list", () => {
    const allowAll = readPolicyDocument({ Statement: [{ Effect: "Allow", NotAction: "iam:*" }] }, "d");
    expect(isActionAllowed(allowAll, "ec2:StartInstances")).to.equal(true);
    expect(isActionAllowed(allowAll, "iam:PassRole")).to.equal(false);
    const denied = [...allowAll, ...readPolicyDocument({ Statement: [{ Effect: "Deny", Action: ["ec2:*"] }] }, "d")];
    expect(isActionAllowed(denied, "ec2:StartInstances")).to.equal(false);
  });

  it("treats `*`, `service:*` and Allow+NotAction as wildcards, not narrower globs", () => {
    expect(isWildcardAction("*")).to.equal(true);
    expect(isWildcardAction("sqs:*")).to.equal(true);
    expect(isWildcardAction("ec2:Start*")).to.equal(false);
    const statements = readPolicyDocument(
      {
        Statement: [
          { Effect: "Allow", Action: ["logs:*", "sqs:*"] },
          { Effect: "Deny", Action: "*" },
        ],
      },
      "d",
    );
    expect(wildcardGrants(statements, ["LOGS:*"])).to.deep.equal(["sqs:*"]);
  });
});
