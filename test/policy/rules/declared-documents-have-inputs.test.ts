/** policy/rules/declared-documents-have-inputs.ts: a DeclaredDocument reaches the pack with its inputs, or the gate fails closed. */
import { DECLARED_DOCUMENT_TYPE } from "../../../policy/contract";
import type { RecordedResource } from "../../../policy/testing/types";
import { ingestRecording } from "../helpers/ingest";
import { withDeclarations } from "../helpers/recording";
import { evaluate, expectNoViolations, type Mode } from "../helpers/violations";
import { expect } from "chai";

const POLICY = "declared-documents-have-inputs";
const MODES: Mode[] = ["update", "first-preview"];

/** What PULUMI_NODEJS_SKIP_COMPONENT_INPUTS does: every local component registers `{}` as its inputs (outputs unchanged). */
function withoutComponentInputs(rs: RecordedResource[]): RecordedResource[] {
  return rs.map((r) => (r.type === DECLARED_DOCUMENT_TYPE ? { ...r, inputs: {} } : r));
}

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`${mode}: passes declarations that carry their inputs (unknown leaves included on a first preview)`, async () => {
      // Prepare
      const rs = ingestRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });

    it(`${mode}: fails every declaration that arrives without inputs, naming the environment variable`, async () => {
      // Prepare
      const rs = withoutComponentInputs(withDeclarations(ingestRecording()));
      const declarations = rs.filter((r) => r.type === DECLARED_DOCUMENT_TYPE).map((r) => r.urn);
      // Act
      const violations = await evaluate(rs, { mode, declare: false });
      // Assess
      const mine = violations.filter((v) => v.policy === POLICY);
      expect(declarations.length).to.be.greaterThan(0);
      expect(mine.map((v) => [v.urn, v.enforcementLevel]).sort()).to.deep.equal(declarations.map((u) => [u, "mandatory"]).sort());
      expect(mine[0]!.message).to.match(/without resource, resourceType, property, document.*PULUMI_NODEJS_SKIP_COMPONENT_INPUTS/);
    });
  }

  it("fails a declaration without only its document", async () => {
    // Prepare
    const rs = withDeclarations(ingestRecording()).map((r) => (r.type === DECLARED_DOCUMENT_TYPE ? { ...r, inputs: { ...r.inputs, document: undefined } } : r));
    // Act
    const violations = await evaluate(rs, { declare: false });
    // Assess
    expect(violations.filter((v) => v.policy === POLICY).every((v) => /without document,/.test(v.message) || /without document\b/.test(v.message))).to.equal(
      true,
    );
    expect(violations.filter((v) => v.policy === POLICY).length).to.be.greaterThan(0);
  });
});
