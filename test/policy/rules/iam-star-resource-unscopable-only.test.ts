/** policy/rules/iam-star-resource-unscopable-only.ts: `*` only for actions AWS cannot scope. */
import { expect } from "chai";
import { UNSCOPABLE_ACTIONS } from "../../../policy/rules/iam-star-resource-unscopable-only";
import { U, ingestRecording } from "../helpers/ingest";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import { DECLARED_DOCUMENT_TYPE } from "../../../policy/contract";
import { firstPreview, UNKNOWN_STRING } from "../../../policy/testing/engine";
import type { PolicyPackConfig } from "../../../policy/testing/types";
import { doc, editInput, managedPolicy, queue, queueArn, urnOf, withDeclarations, T } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "iam-star-resource-unscopable-only";
type Doc = { Statement: Array<Record<string, unknown>> };
const onStar = (name: string, statement: Record<string, unknown>) => managedPolicy(name, { policy: doc({ Effect: "Allow", Resource: "*", ...statement }) });

describe(POLICY, () => {
  it("passes the ingest part, whose only `*` grant is DescribeInstances", async () => {
    expectNoViolations(await evaluate(ingestRecording()));
  });

  const passing: Array<[string, Record<string, unknown>]> = [
    ["the EC2 Describe calls without a resource type", { Action: ["ec2:DescribeInstances", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"] }],
    [
      "ECR's token, Session Manager's channels and the flow-log group lookup",
      { Action: ["ecr:GetAuthorizationToken", "ssmmessages:OpenDataChannel", "logs:DescribeLogGroups"] },
    ],
    [
      "a scopable action narrowed by a condition (ListTasks by cluster)",
      { Action: ["ecs:ListTasks"], Condition: { ArnEquals: { "ecs:cluster": "arn:aws:ecs:eu-west-1:123456789012:cluster/c" } } },
    ],
    ["a Deny on `*`", { Effect: "Deny", Action: ["ec2:TerminateInstances"] }],
  ];
  for (const [what, statement] of passing) {
    it(`passes ${what}`, async () => {
      expectNoViolations(await evaluate([onStar("p", statement)]));
    });
  }

  const failing: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      "the Lambda VPC actions that name an interface",
      { Action: ["ec2:DescribeSubnets", "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface"] },
      /grants ec2:CreateNetworkInterface, ec2:DeleteNetworkInterface on "\*"/,
    ],
    ["a parameter read", { Action: "ssm:GetParameter" }, /grants ssm:GetParameter on "\*"/],
    ["`*` among named resources", { Action: ["sqs:SendMessage"], Resource: ["arn:aws:sqs:eu-west-1:123456789012:q", "*"] }, /sqs:SendMessage/],
    ["a look-alike of a Describe prefix", { Action: ["ec2:DeleteSubnet"] }, /ec2:DeleteSubnet/],
    // The reference gives these resource types (optional ones), so they can be named.
    [
      "an EC2 Describe call that has a resource type",
      { Action: ["ec2:DescribeInstances", "ec2:DescribeInstanceAttribute"] },
      /grants ec2:DescribeInstanceAttribute on "\*"/,
    ],
    [
      "the SSM agent's heartbeat (resource types instance, managed-instance)",
      { Action: ["ssm:UpdateInstanceInformation", "ssmmessages:OpenDataChannel"] },
      /grants ssm:UpdateInstanceInformation on "\*"/,
    ],
    ["a metric write (resource type dataset)", { Action: ["cloudwatch:PutMetricData"] }, /grants cloudwatch:PutMetricData on "\*"/],
    ["an action of a service the generated list does not cover", { Action: ["kms:ListAliases"] }, /grants kms:ListAliases on "\*"/],
  ];
  for (const [what, statement, message] of failing) {
    it(`fails ${what}`, async () => {
      // Act
      const violations = await evaluate([onStar("p", statement)]);
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.policy, "p"), message });
    });
  }

  it("fails a scopable action added to the GPU policy's `*` statement", async () => {
    // Prepare
    const rs = ingestRecording();
    editInput<Doc>(
      rs,
      U.gpuPolicy,
      "policy",
      (d) => (d.Statement.find((s) => s.Sid === "DescribeInstances")!.Action = ["ec2:DescribeInstances", "ec2:StopInstances"]),
    );
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectViolation(violations, {
      policy: POLICY,
      level: "mandatory",
      urn: U.gpuPolicy,
      message: /statement DescribeInstances grants ec2:StopInstances on "\*"/,
      also: [["ec2-stop-scoped-to-stack", U.gpuPolicy]],
    });
  });

  it("takes its default list from the generated reference file, without prefixes or hand-kept entries", () => {
    expect(UNSCOPABLE_ACTIONS.length).to.be.greaterThan(100);
    expect(UNSCOPABLE_ACTIONS.every((a) => /^[a-z0-9-]+:[A-Za-z0-9]+$/.test(a))).to.equal(true);
    expect(UNSCOPABLE_ACTIONS).to.include.members([
      "ec2:DescribeInstances",
      "logs:DescribeLogGroups",
      "ssmmessages:CreateControlChannel",
      "sts:GetCallerIdentity",
    ]);
    expect(UNSCOPABLE_ACTIONS).to.not.include.members([
      "ec2:CreateNetworkInterface",
      "ssm:UpdateInstanceInformation",
      "cloudwatch:PutMetricData",
      "ec2:DescribeInstanceAttribute",
    ]);
  });

  describe("on a first preview, where ARNs built from outputs are unknown elements of a declared document", () => {
    const prod = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy", "config.prod.json"), "utf8")) as PolicyPackConfig;
    // A policy whose Resource list holds a queue's ARN: an output, so unknown on a first preview.
    const withQueueArn = (resource: string[], action: string[]) => [
      queue("q", { visibilityTimeoutSeconds: 60 }),
      managedPolicy("p", { policy: doc({ Effect: "Allow", Action: action, Resource: resource }) }, { deps: { policy: [urnOf(T.queue, "q")] } }),
    ];
    const declaredUrn = urnOf(DECLARED_DOCUMENT_TYPE, "p-declared");
    const cases: Array<[string, string[], string[], boolean]> = [
      ["an unknown element beside a literal `*`, with a scopable action", [queueArn("q"), "*"], ["sqs:SendMessage"], true],
      ["a literal `*` before an unknown element, with a scopable action", ["*", queueArn("q")], ["sqs:SendMessage"], true],
      ["only unknown elements, with a scopable action", [queueArn("q")], ["sqs:SendMessage"], false],
      ["an unknown element beside `*`, with an unscopable action only", [queueArn("q"), "*"], ["sts:GetCallerIdentity"], false],
      // An Action element unknown on this preview (none is in the program, but the rule must not stop at one).
      ["an unknown Action element beside a scopable one, on `*` and an unknown element", [queueArn("q"), "*"], [UNKNOWN_STRING, "sqs:SendMessage"], true],
    ];
    for (const [what, resource, action, reported] of cases) {
      it(`${reported ? "reports" : "passes"} ${what}, at prod's level, and runs (no "can't run during preview")`, async () => {
        // Prepare
        const rs = withQueueArn(resource, action);
        // The premise: the declaration the rule judges holds an unknown Resource element.
        const declared = firstPreview(withDeclarations(rs)).find((r) => r.urn === declaredUrn)!;
        expect(JSON.stringify(declared.inputs.document)).to.include(UNKNOWN_STRING);
        // Act
        const violations = await evaluate(rs, { mode: "first-preview", config: prod });
        // Assess
        const mine = violations.filter((v) => v.policy === POLICY);
        expect(
          mine.map((v) => [v.urn, v.enforcementLevel]),
          JSON.stringify(violations, null, 2),
        ).to.deep.equal(reported ? [[declaredUrn, "mandatory"]] : []);
        if (reported) expect(mine[0]!.message).to.match(/'p \(declared\)' Statement\[0\] grants sqs:SendMessage on "\*"/);
      });
    }
  });
});
