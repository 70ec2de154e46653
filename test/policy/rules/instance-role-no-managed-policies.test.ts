/** policy/rules/instance-role-no-managed-policies.ts: instance roles carry their own grants, not AWS's broad ones. */
import { ingestRecording } from "../helpers/ingest";
import { T, attachment, doc, role, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "instance-role-no-managed-policies";
const ec2Trust = doc({ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" });
const SSM_CORE = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore";
const attach = (name: string, roleName: string, policyArn: string) =>
  attachment(name, { role: roleName, policyArn }, { deps: { role: [urnOf(T.role, roleName)] } });

describe(POLICY, () => {
  it("passes an instance role with its own policy, and a Lambda role attaching an AWS-managed one", async () => {
    const rs = ingestRecording();
    rs.push(role("gpu-role", { assumeRolePolicy: ec2Trust }));
    rs.push(
      role("fn-role", { assumeRolePolicy: doc({ Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" }, Action: "sts:AssumeRole" }) }),
      attach("fn-basic", "fn-role", "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"),
    );
    expectNoViolations(await evaluate(rs));
  });

  it("fails an instance role attaching AmazonSSMManagedInstanceCore", async () => {
    // Prepare
    const rs = ingestRecording();
    rs.push(role("gpu-role", { assumeRolePolicy: ec2Trust }), attach("gpu-ssm-core", "gpu-role", SSM_CORE));
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, {
      policy: POLICY,
      level: "mandatory",
      urn: urnOf(T.role, "gpu-role"),
      message: /attaches the AWS-managed arn:aws:iam::aws:policy\/AmazonSSMManagedInstanceCore/,
    });
  });

  it("passes it when the stack's config allows that policy", async () => {
    const rs = ingestRecording();
    rs.push(role("gpu-role", { assumeRolePolicy: ec2Trust }), attach("gpu-ssm-core", "gpu-role", SSM_CORE));
    expectNoViolations(await evaluate(rs, { config: { [POLICY]: { enforcementLevel: "mandatory", allowedPolicyArns: [SSM_CORE] } } }));
  });
});
