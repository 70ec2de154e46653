/**
 * The first-preview model (policy/testing/engine.ts) against the Pulumi SDK itself. The same
 * program is planned twice: once as `--first-preview` derives it from an ordinary plan, and once
 * with the SDK in preview mode and the mocks answering as providers do for a resource about to be
 * created (inputs and auto-name only), so that the SDK leaves every other output unknown and
 * propagates it. The model may be more pessimistic than the SDK, never less: every value the SDK
 * leaves unknown, the model does too.
 */
import { expect } from "chai";
import type { PlanDocument } from "../../plan/render";
import { UNKNOWN_IN_JSON } from "../../plan/render";
import { planJson } from "../infra/helpers/run-plan";

function unknownPaths(value: unknown, at = ""): string[] {
  if (value === UNKNOWN_IN_JSON) return [at];
  if (Array.isArray(value)) return value.flatMap((v, i) => unknownPaths(v, `${at}[${i}]`));
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([k, v]) => unknownPaths(v, `${at}.${k}`));
  return [];
}

const byUrn = (doc: PlanDocument) => new Map(doc.resources.map((r) => [r.urn, r]));

describe("the first-preview model against the SDK's own preview", function () {
  this.timeout(240_000);

  for (const stack of ["dev", "prod"]) {
    it(`${stack}: the same resources, and every input the SDK leaves unknown is unknown in the model`, async () => {
      // Act
      const [model, sdk] = await Promise.all([planJson(stack, ["--first-preview"]), planJson(stack, ["--first-preview"], { PLAN_SDK_PREVIEW: "1" })]);
      // Assess
      for (const { run } of [model, sdk]) expect(run.code, run.stderr).to.equal(0);
      const [m, s] = [byUrn(model.doc), byUrn(sdk.doc)];
      expect([...m.keys()].sort()).to.deep.equal([...s.keys()].sort());
      const missed: string[] = [];
      let sdkUnknowns = 0;
      for (const [urn, r] of s) {
        const modelled = new Set(unknownPaths(m.get(urn)!.inputs));
        for (const p of unknownPaths(r.inputs)) {
          sdkUnknowns++;
          if (!modelled.has(p)) missed.push(`${urn}${p}`);
        }
      }
      expect(sdkUnknowns, "the SDK preview left nothing unknown: the comparison would prove nothing").to.be.greaterThan(100);
      expect(missed).to.deep.equal([]);
      // Both modes judge the real program clean on a first preview.
      expect(model.doc.summary.mandatory + sdk.doc.summary.mandatory).to.equal(0);
    });
  }
});
