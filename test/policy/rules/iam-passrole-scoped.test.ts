/** policy/rules/iam-passrole-scoped.ts: iam:PassRole on named role ARNs, under iam:PassedToService. */
import type { RecordedResource } from "../../../policy/testing/types";
import { R, retrainingRecording } from "../helpers/retraining";
import { T, doc, editInput, rolePolicy, roleArn, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "iam-passrole-scoped";

type Statement = Record<string, unknown>;
/** The launcher policy's PassStrategyTaskRoles statement. */
const passRole = (policy: Record<string, unknown>): Statement => (policy.Statement as Statement[])[1] as Statement;
const toEcs = { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } };

describe(POLICY, () => {
  it("passes the good retraining recording (PassRole on the two task roles, to ECS tasks)", async () => {
    // Prepare
    const rs = retrainingRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("passes PassRole on role ARNs that are still unknown (first preview)", async () => {
    // Prepare
    const rs = retrainingRecording();
    // Act
    const violations = await evaluate(rs, { mode: "first-preview" });
    // Assess
    expectNoViolationOf(violations, POLICY);
  });

  it("passes PassRole without PassedToService when requirePassedToService is false", async () => {
    // Prepare
    const rs = retrainingRecording();
    editInput(rs, R.launcherPolicy, "policy", (p) => delete passRole(p).Condition);
    // Act
    const violations = await evaluate(rs, { config: { [POLICY]: { enforcementLevel: "mandatory", requirePassedToService: false } } });
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes PassRole on one named role, to one service", async () => {
      // Prepare
      const rs = [rolePolicy("launcher", { policy: doc({ Effect: "Allow", Action: "iam:PassRole", Resource: roleArn("task"), Condition: toEcs }) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("fails PassRole on a role path wildcard", async () => {
      // Prepare
      const rs = [rolePolicy("launcher", { policy: doc({ Effect: "Allow", Action: "iam:PassRole", Resource: roleArn("tasks/*"), Condition: toEcs }) })];
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: urnOf(T.rolePolicy, "launcher"),
        message: /'launcher' Statement\[0\] grants iam:PassRole on arn:aws:iam::123456789012:role\/tasks\/\*/,
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "PassRole on *",
        message: /PassStrategyTaskRoles grants iam:PassRole on \*/,
        mutate: (rs) => editInput(rs, R.launcherPolicy, "policy", (p) => (passRole(p).Resource = "*")),
      },
      {
        title: "PassRole on a wildcard role pattern",
        message: /role\/retraining-\*/,
        mutate: (rs) => editInput(rs, R.launcherPolicy, "policy", (p) => (passRole(p).Resource = ["arn:aws:iam::123456789012:role/retraining-*"])),
      },
      {
        title: "PassRole through iam:Pass* without iam:PassedToService",
        message: /without an iam:PassedToService condition/,
        mutate: (rs) =>
          editInput(rs, R.launcherPolicy, "policy", (p) => {
            passRole(p).Action = ["iam:Pass*"];
            delete passRole(p).Condition;
          }),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = retrainingRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: R.launcherPolicy, message: c.message });
      });
    }
  });
});
