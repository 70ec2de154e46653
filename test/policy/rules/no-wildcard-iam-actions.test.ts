/** policy/rules/no-wildcard-iam-actions.ts: no `*`, `service:*` or NotAction Allow in identity policies. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { T, doc, editInput, managedPolicy, role, rolePolicy, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "no-wildcard-iam-actions";

type Doc = { Statement: Record<string, unknown>[] };

describe(POLICY, () => {
  it("passes the good ingest recording (every role lists its actions)", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    const cases: { title: string; resources: () => RecordedResource[]; urn?: string; message?: RegExp }[] = [
      {
        title: "passes a RolePolicy that lists its actions",
        resources: () => [rolePolicy("reader", { policy: doc({ Effect: "Allow", Action: ["s3:GetObject"], Resource: "arn:aws:s3:::bucket/*" }) })],
      },
      { title: "passes a Deny of `*`", resources: () => [managedPolicy("fence", { policy: doc({ Effect: "Deny", Action: "*", Resource: "*" }) })] },
      {
        title: "fails a RolePolicy granting s3:*",
        resources: () => [rolePolicy("reader", { policy: doc({ Effect: "Allow", Action: "s3:*", Resource: "*" }) })],
        urn: urnOf(T.rolePolicy, "reader"),
        message: /'reader' allows wildcard action s3:\*/,
      },
      {
        title: "fails a Role whose inline policy is an Allow with NotAction",
        resources: () => [
          role("admin", { inlinePolicies: [{ name: "all", policy: JSON.stringify(doc({ Effect: "Allow", NotAction: ["iam:*", "ec2:*"], Resource: "*" })) }] }),
        ],
        urn: urnOf(T.role, "admin"),
        message: /'admin' allows wildcard action NotAction \[iam:\*, ec2:\*\]/,
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = c.resources();
        // Act
        const violations = await evaluate(rs);
        // Assess
        if (c.urn === undefined) expectNoViolations(violations);
        else expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message?: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a wildcard sqs:* in a RolePolicy",
        urn: U.windowPolicy,
        message: /sqs:\*/,
        mutate: (rs) => editInput<Doc>(rs, U.windowPolicy, "policy", (d) => (d.Statement[0].Action = ["sqs:*"])),
      },
      {
        title: "`*` in the attached customer-managed Policy",
        urn: U.gpuPolicy,
        // `*` also grants RunInstances/StartInstances on every instance, unconditioned, and not from a template.
        also: [
          ["ec2-launch-grants-scoped", U.gpuPolicy],
          ["ec2-run-instances-via-launch-template", U.gpuPolicy],
        ],
        mutate: (rs) => editInput<Doc>(rs, U.gpuPolicy, "policy", (d) => (d.Statement[1].Action = "*")),
      },
      {
        title: "a wildcard in a Role's inline policy given as a JSON string",
        urn: U.windowRole,
        mutate: (rs) =>
          setInput(rs, U.windowRole, "inlinePolicies", [
            { name: "extra", policy: JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "S3:*", Resource: "*" }] }) },
          ]),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message, also: c.also });
      });
    }
  });
});
