/** policy/rules/ec2-launch-grants-scoped.ts: RunInstances/StartInstances on broad resources only under a tag condition. */
import type { RecordedResource } from "../../../policy/testing/types";
import { U } from "../helpers/ingest";
import { P, poolRecording, refillStatements } from "../helpers/pool";
import { T, doc, managedPolicy, rolePolicy, setInput, setStatements, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ec2-launch-grants-scoped";

const start = (extra: Record<string, unknown> = {}) => ({
  Effect: "Allow",
  Action: "ec2:StartInstances",
  Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*",
  ...extra,
});

describe(POLICY, () => {
  it("passes the good pool recording (with ingest's tag-conditioned StartInstances)", async () => {
    // Prepare
    const rs = poolRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("passes", () => {
    const cases: { title: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "a StartInstances grant on one named instance, without a condition (scoped resource)",
        mutate: (rs) =>
          setStatements(rs, P.claimPolicy, [
            { Effect: "Allow", Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/i-0123456789abcdef0" },
          ]),
      },
      {
        title: "a Deny statement, which is never a grant",
        mutate: (rs) => setStatements(rs, P.claimPolicy, [refillStatements()[1], { Effect: "Deny", Action: ["ec2:RunInstances"], Resource: "*" }]),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = poolRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectNoViolations(violations);
      });
    }
  });

  describe("built in one line", () => {
    it("passes StartInstances on every instance under a resource-tag condition", async () => {
      // Prepare
      const rs = [rolePolicy("starter", { policy: doc(start({ Condition: { StringEquals: { "aws:ResourceTag/encache:pool": "p" } } })) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails the same grant without the condition", async () => {
      // Prepare
      const rs = [managedPolicy("starter", { policy: doc(start()) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.policy, "starter"),
        message: /'starter' grants ec2:StartInstances on arn:aws:ec2:eu-west-1:123456789012:instance\/\* without a tag condition/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn: string; message: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "RunInstances on every instance without a tag condition (RolePolicy)",
        urn: P.refillPolicy,
        message: /statement RunTaggedPoolInstances grants ec2:RunInstances on arn:aws:ec2:eu-west-1:123456789012:instance\/\* without a tag condition/,
        // Dropping the whole condition drops the launch-template one too.
        also: [["ec2-run-instances-via-launch-template", P.refillPolicy]],
        mutate: (rs) => {
          const statements = refillStatements();
          delete (statements[2] as { Condition?: unknown }).Condition;
          setStatements(rs, P.refillPolicy, statements);
        },
      },
      {
        title: "StartInstances on `*` (managed Policy)",
        urn: P.claimPolicy,
        message: /grants ec2:StartInstances on \*/,
        also: [["iam-star-resource-unscopable-only", P.claimPolicy]],
        mutate: (rs) => setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: "ec2:StartInstances", Resource: "*" }]),
      },
      {
        title: "a non-tag condition, which does not count (ec2:Region)",
        urn: P.claimPolicy,
        message: /ec2:StartInstances/,
        mutate: (rs) =>
          setStatements(rs, P.claimPolicy, [
            {
              Effect: "Allow",
              Action: ["ec2:StartInstances"],
              Resource: "arn:aws:ec2:*:123456789012:instance/*",
              Condition: { StringEquals: { "ec2:Region": "eu-west-1" } },
            },
          ]),
      },
      {
        title: "a wildcard action that covers both (ec2:*Instances) on an instance wildcard",
        urn: P.claimPolicy,
        message: /ec2:RunInstances, ec2:StartInstances/,
        // ec2:*Instances covers ec2:TerminateInstances too, unconditioned.
        also: [
          ["ec2-terminate-tag-condition", P.claimPolicy],
          ["ec2-run-instances-via-launch-template", P.claimPolicy],
          ["ec2-stop-scoped-to-stack", P.claimPolicy],
        ],
        mutate: (rs) =>
          setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: ["ec2:*Instances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*" }]),
      },
      {
        title: "an unconditioned grant in a Role's inlinePolicies given as a JSON string",
        urn: P.refillRole,
        message: /'pool-refill-role' grants ec2:RunInstances on \*/,
        also: [
          ["ec2-run-instances-via-launch-template", P.refillRole],
          ["iam-star-resource-unscopable-only", P.refillRole],
        ],
        mutate: (rs) =>
          setInput(rs, P.refillRole, "inlinePolicies", [
            { name: "run", policy: JSON.stringify({ Version: "2012-10-17", Statement: { Effect: "Allow", Action: "ec2:RunInstances", Resource: "*" } }) },
          ]),
      },
      {
        title: "ingest's GPU StartInstances grant losing its Name-tag condition",
        urn: U.gpuPolicy,
        message: /statement StartGpu grants ec2:StartInstances/,
        mutate: (rs) =>
          setStatements(rs, U.gpuPolicy, [
            { Sid: "StartGpu", Effect: "Allow", Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*" },
            { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" },
          ]),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = poolRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message, also: c.also });
      });
    }
  });
});
