/** policy/rules/iam-arns-name-account.ts: no `*` in an ARN's account field. */
import { P, poolRecording } from "../helpers/pool";
import { doc, editInput, managedPolicy, urnOf, T } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "iam-arns-name-account";
type Doc = { Statement: Array<Record<string, unknown>> };

describe(POLICY, () => {
  it("passes the pool's grants, images and public parameters included (they belong to no account)", async () => {
    const rs = poolRecording();
    rs.push(
      managedPolicy("amis", {
        policy: doc({
          Effect: "Allow",
          Action: ["ssm:GetParameters"],
          Resource: "arn:aws:ssm:eu-west-1::parameter/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
        }),
      }),
    );
    expectNoViolations(await evaluate(rs));
  });

  it("fails StartInstances on instances of any account", async () => {
    // Prepare
    const rs = poolRecording();
    editInput<Doc>(
      rs,
      P.claimPolicy,
      "policy",
      (d) => (d.Statement.find((s) => [s.Action].flat().includes("ec2:StartInstances"))!.Resource = "arn:aws:ec2:eu-west-1:*:instance/*"),
    );
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, {
      policy: POLICY,
      level: "mandatory",
      urn: P.claimPolicy,
      message: /grants on arn:aws:ec2:eu-west-1:\*:instance\/\*, in any account/,
    });
  });

  it("fails a partial wildcard in the account field", async () => {
    const rs = [managedPolicy("queues", { policy: doc({ Effect: "Allow", Action: ["sqs:SendMessage"], Resource: "arn:aws:sqs:eu-west-1:1234*:orders" }) })];
    expectViolation(await evaluate(rs), { policy: POLICY, level: "mandatory", urn: urnOf(T.policy, "queues"), message: /1234\*/ });
  });
});
