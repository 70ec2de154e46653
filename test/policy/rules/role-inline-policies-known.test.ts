/** policy/rules/role-inline-policies-known.ts: a Role's inline policies are known on this preview (judged on its inputs). */
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import { UNKNOWN_STRING } from "../../../policy/testing/engine";
import type { PolicyPackConfig } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { T, add, doc, lambdaTrust, queueArn, role, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "role-inline-policies-known";
const MODES: Mode[] = ["update", "first-preview"];
const packConfig = (stack: string) => JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy", `config.${stack}.json`), "utf8")) as PolicyPackConfig;

/** A role whose inline policy names the ingest queue: built from its ARN, so unknown on a first preview. */
function withInlineFromOutput() {
  const rs = ingestRecording();
  add(
    rs,
    role(
      "reader",
      {
        assumeRolePolicy: lambdaTrust,
        inlinePolicies: [{ name: "read", policy: JSON.stringify(doc({ Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: queueArn("ingest") })) }],
      },
      { deps: { inlinePolicies: [U.ingest] } },
    ),
  );
  return rs;
}

describe(POLICY, () => {
  for (const mode of MODES) {
    // Every role of the program leaves inlinePolicies unset: its OUTPUT is then unknown on a first
    // preview (Optional+Computed), which must not read as an undeclared policy.
    it(`${mode}: passes the ingest recording, whose roles declare no inline policy`, async () => {
      // Prepare
      const rs = ingestRecording();
      // Act
      const violations = await evaluate(rs, { mode, config: packConfig("prod") });
      // Assess
      expectNoViolations(violations);
    });
  }

  it("passes a literal inline policy on a first preview: the IAM rules read it", async () => {
    // Prepare
    const rs = ingestRecording();
    add(
      rs,
      role("reader", {
        assumeRolePolicy: lambdaTrust,
        inlinePolicies: [{ name: "read", policy: JSON.stringify(doc({ Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: queueArn("shared") })) }],
      }),
    );
    // Act
    const violations = await evaluate(rs, { mode: "first-preview", config: packConfig("prod") });
    // Assess
    expectNoViolations(violations);
  });

  for (const [stack, level] of [
    ["prod", "mandatory"],
    ["dev", "advisory"],
  ] as const) {
    it(`${stack}, first preview: an inline policy built from an output is ${level === "mandatory" ? "a mandatory" : "an advisory"} violation`, async () => {
      // Prepare
      const rs = withInlineFromOutput();
      // Act
      const violations = await evaluate(rs, { mode: "first-preview", config: packConfig(stack) });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level,
        urn: urnOf(T.role, "reader"),
        message: /inlinePolicies\[0\] has a document unknown on this preview/,
      });
    });
  }

  it("fails an inlinePolicies input unknown as a whole", async () => {
    // Prepare
    const rs = ingestRecording();
    add(rs, role("reader", { assumeRolePolicy: lambdaTrust, inlinePolicies: UNKNOWN_STRING }));
    // Act
    const violations = await evaluate(rs, { mode: "first-preview", config: packConfig("prod") });
    // Assess
    expectViolation(violations, { policy: POLICY, level: "mandatory", urn: urnOf(T.role, "reader"), message: /declares inline policies that are unknown/ });
  });

  it("update: the same role is judged by the IAM rules once its policy is known, and this rule says nothing", async () => {
    // Prepare
    const rs = withInlineFromOutput();
    // Act
    const violations = await evaluate(rs, { mode: "update", config: packConfig("prod") });
    // Assess
    expectNoViolations(violations);
  });
});
