/** policy/rules/ec2-stop-scoped-to-stack.ts: StopInstances only on this stack's instances. */
import { ingestRecording } from "../helpers/ingest";
import { doc, managedPolicy, rolePolicy, role, urnOf, T } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "ec2-stop-scoped-to-stack";
const INSTANCES = "arn:aws:ec2:eu-west-1:123456789012:instance/*";
const stop = (condition?: Record<string, unknown>) => ({
  Sid: "StopStackGpu",
  Effect: "Allow",
  Action: ["ec2:StopInstances"],
  Resource: INSTANCES,
  ...(condition ? { Condition: condition } : {}),
});

describe(POLICY, () => {
  it("passes a stop grant conditioned on the GPU's Name and the stack's environment tag", async () => {
    const rs = [
      ...ingestRecording(),
      rolePolicy("idle", {
        policy: doc(stop({ StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker-dev", "aws:ResourceTag/encache:environment": "dev" } })),
      }),
    ];
    expectNoViolations(await evaluate(rs));
  });

  const failing: Array<[string, Record<string, unknown> | undefined]> = [
    ["no condition at all", undefined],
    ["only the Name tag (another stack's GPU could share a name)", { StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker-dev" } }],
    ["the environment tag matched by a wildcard only", { StringLike: { "aws:ResourceTag/encache:environment": "*" } }],
    ["the environment tag under IfExists, which passes untagged instances", { StringEqualsIfExists: { "aws:ResourceTag/encache:environment": "dev" } }],
  ];
  for (const [what, condition] of failing) {
    it(`fails ${what}`, async () => {
      // Act
      const violations = await evaluate([rolePolicy("idle", { policy: doc(stop(condition)) })]);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.rolePolicy, "idle"),
        message: /allows ec2:StopInstances without a condition on aws:ResourceTag\/encache:environment/,
      });
    });
  }

  it("fails a pattern that covers StopInstances (ec2:Stop*) in a Role's inline policy", async () => {
    const rs = [
      role("idle", { inlinePolicies: [{ name: "stop", policy: JSON.stringify(doc({ Effect: "Allow", Action: "ec2:Stop*", Resource: INSTANCES })) }] }),
    ];
    expectViolation(await evaluate(rs), { policy: POLICY, level: "mandatory", urn: urnOf(T.role, "idle"), message: /ec2:StopInstances/ });
  });

  it("leaves a Deny alone", async () => {
    expectNoViolations(await evaluate([managedPolicy("fence", { policy: doc({ Effect: "Deny", Action: ["ec2:StopInstances"], Resource: INSTANCES }) })]));
  });
});
