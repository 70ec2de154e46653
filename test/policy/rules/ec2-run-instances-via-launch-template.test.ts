/** policy/rules/ec2-run-instances-via-launch-template.ts: RunInstances only through named launch templates. */
import type { RecordedResource } from "../../../policy/testing/types";
import { P, poolRecording } from "../helpers/pool";
import { editInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "ec2-run-instances-via-launch-template";
type Doc = { Statement: Array<Record<string, unknown>> };
const runTagged = (d: Doc) => d.Statement.find((s) => s.Sid === "RunTaggedPoolInstances")!;
const runFromTemplates = (d: Doc) => d.Statement.find((s) => s.Sid === "RunFromPoolTemplates")!;
const conditionOf = (s: Record<string, unknown>) => s.Condition as Record<string, unknown>;

describe(POLICY, () => {
  for (const mode of ["update", "first-preview"] as Mode[]) {
    it(`passes the pool's refill grants, every RunInstances from its template (${mode})`, async () => {
      expectNoViolations(await evaluate(poolRecording(), { mode }));
    });
  }

  const cases: Array<{ title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      title: "a RunInstances grant without the ec2:LaunchTemplate condition",
      message: /RunTaggedPoolInstances allows ec2:RunInstances without an ec2:LaunchTemplate condition/,
      mutate: (rs) => editInput<Doc>(rs, P.refillPolicy, "policy", (d) => delete (runTagged(d).Condition as Record<string, unknown>).ArnLike),
    },
    {
      title: "a condition that names every launch template of the account",
      message: /from any launch template \(arn:aws:ec2:eu-west-1:123456789012:launch-template\/\*\)/,
      mutate: (rs) =>
        editInput<Doc>(
          rs,
          P.refillPolicy,
          "policy",
          (d) =>
            ((runTagged(d).Condition as Record<string, unknown>).ArnLike = { "ec2:LaunchTemplate": "arn:aws:ec2:eu-west-1:123456789012:launch-template/*" }),
        ),
    },
    {
      title: "a grant on every image without ec2:IsLaunchTemplateResource (a request could override the template's AMI)",
      message: /RunFromPoolTemplates allows ec2:RunInstances on arn:aws:ec2:eu-west-1::image\/\* without Bool ec2:IsLaunchTemplateResource "true"/,
      mutate: (rs) => editInput<Doc>(rs, P.refillPolicy, "policy", (d) => delete conditionOf(runFromTemplates(d)).Bool),
    },
    {
      title: "ec2:IsLaunchTemplateResource required false",
      message: /RunFromPoolTemplates allows ec2:RunInstances on arn:aws:ec2:eu-west-1::image\/\* without Bool ec2:IsLaunchTemplateResource "true"/,
      mutate: (rs) =>
        editInput<Doc>(rs, P.refillPolicy, "policy", (d) => (conditionOf(runFromTemplates(d)).Bool = { "ec2:IsLaunchTemplateResource": "false" })),
    },
    {
      title: "a grant on `*` (every image among the rest) without ec2:IsLaunchTemplateResource",
      message: /RunTaggedPoolInstances allows ec2:RunInstances on \* without Bool ec2:IsLaunchTemplateResource/,
      mutate: (rs) => editInput<Doc>(rs, P.refillPolicy, "policy", (d) => (runTagged(d).Resource = "*")),
    },
  ];
  for (const c of cases) {
    it(`fails ${c.title}`, async () => {
      // Prepare
      const rs = poolRecording();
      c.mutate(rs);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, { policy: POLICY, level: "mandatory", urn: P.refillPolicy, message: c.message });
    });
  }

  it("passes a grant on one named image without ec2:IsLaunchTemplateResource (nothing to override it with)", async () => {
    // Prepare
    const rs = poolRecording();
    editInput<Doc>(rs, P.refillPolicy, "policy", (d) => {
      const s = runFromTemplates(d);
      s.Resource = ["arn:aws:ec2:eu-west-1::image/ami-0123456789abcdef0"];
      delete conditionOf(s).Bool;
    });
    // Act, Assess
    expectNoViolations(await evaluate(rs));
  });
});
