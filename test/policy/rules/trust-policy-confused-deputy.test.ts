/** policy/rules/trust-policy-confused-deputy.ts: ECS and Scheduler trust policies pin the source account and ARN. */
import type { RecordedResource } from "../../../policy/testing/types";
import { T, add, doc, editInput, role, urnOf } from "../helpers/recording";
import { W, workerRecording } from "../helpers/worker";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "trust-policy-confused-deputy";
type Doc = { Statement: Array<Record<string, unknown>> };

const trust = (service: string, condition?: Record<string, unknown>) =>
  doc({ Effect: "Allow", Principal: { Service: service }, Action: "sts:AssumeRole", ...(condition ? { Condition: condition } : {}) });

describe(POLICY, () => {
  it("passes the worker's roles, whose trust pins the account and ECS as the source", async () => {
    expectNoViolations(await evaluate(workerRecording()));
  });

  describe("passes", () => {
    const cases: Array<[string, RecordedResource]> = [
      ["a Lambda role (AWS documents no condition for Lambda)", role("fn-role", { assumeRolePolicy: trust("lambda.amazonaws.com") })],
      ["an EC2 instance role (none for EC2 either)", role("instance-role", { assumeRolePolicy: trust("ec2.amazonaws.com") })],
      [
        "a Scheduler role pinned to the account and its schedule group",
        role("schedule-role", {
          assumeRolePolicy: trust("scheduler.amazonaws.com", {
            StringEquals: { "aws:SourceAccount": "123456789012" },
            ArnLike: { "aws:SourceArn": "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/default" },
          }),
        }),
      ],
    ];
    for (const [title, r] of cases) {
      it(title, async () => {
        const rs = workerRecording();
        add(rs, r);
        expectNoViolations(await evaluate(rs));
      });
    }
  });

  describe("fails", () => {
    const cases: Array<{ title: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
      {
        title: "an ECS task role without conditions",
        urn: W.taskRole,
        message: /without aws:SourceAccount and aws:SourceArn/,
        mutate: (rs) => editInput<Doc>(rs, W.taskRole, "assumeRolePolicy", (d) => delete d.Statement[0]!.Condition),
      },
      {
        title: "an ECS execution role pinned to the account only",
        urn: W.executionRole,
        message: /without aws:SourceArn/,
        mutate: (rs) =>
          editInput<Doc>(
            rs,
            W.executionRole,
            "assumeRolePolicy",
            (d) => (d.Statement[0]!.Condition = { StringEquals: { "aws:SourceAccount": "123456789012" } }),
          ),
      },
      {
        title: "a Scheduler role without conditions",
        urn: urnOf(T.role, "schedule-role"),
        message: /trusts scheduler\.amazonaws\.com/,
        mutate: (rs) => add(rs, role("schedule-role", { assumeRolePolicy: trust("scheduler.amazonaws.com") })),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = workerRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn, message: c.message });
      });
    }
  });
});
