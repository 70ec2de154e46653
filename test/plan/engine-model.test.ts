/**
 * The first-preview model (policy/testing/engine.ts) against the Pulumi SDK itself. The same
 * program is planned twice: once as `--first-preview` derives it from an ordinary plan, and once
 * with the SDK in preview mode and the mocks answering as providers do for a resource about to be
 * created (inputs and auto-name only), so that the SDK leaves every other output unknown and
 * propagates it. The model may be more pessimistic than the SDK, never less: every value the SDK
 * leaves unknown, the model does too.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { byteOrder } from "../../policy/lib/provider-normal-form";
import { UNKNOWN_STRING } from "../../policy/testing/engine";
import { PROVIDER_SCHEMA, computedUnsetAttributes, isAwsCustom } from "../../policy/testing/provider-model";
import type { RecordedResource } from "../../policy/testing/types";
import { type PlanDocument, UNKNOWN_IN_JSON } from "../../plan/render";
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

/** The view the pack judged, as the plan wrote it (PLAN_VIEW_FILE). */
async function planView(stack: string, extra: string[]): Promise<RecordedResource[]> {
  const file = path.join(os.tmpdir(), `plan-view-${process.pid}-${stack}-${extra.join("")}.json`);
  const { run } = await planJson(stack, extra, { PLAN_VIEW_FILE: file });
  expect(run.code, run.stderr).to.equal(0);
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as RecordedResource[];
  } finally {
    fs.rmSync(file, { force: true });
  }
}

describe("the plan's views against the provider schema table", function () {
  this.timeout(240_000);

  for (const stack of ["dev", "prod"]) {
    it(`${stack}: every AWS type the plan declares is in the table`, async () => {
      const view = await planView(stack, []);
      const types = [...new Set(view.filter(isAwsCustom).map((r) => r.type))];
      expect(types.length).to.be.greaterThan(20);
      expect(types.filter((t) => !(t in PROVIDER_SCHEMA.types))).to.deep.equal([]);
    });

    it(`${stack}, first preview: every attribute the provider computes and the program leaves unset is unknown`, async () => {
      const view = await planView(stack, ["--first-preview"]);
      const known: string[] = [];
      let checked = 0;
      for (const r of view.filter(isAwsCustom)) {
        for (const key of computedUnsetAttributes(r)) {
          checked++;
          if (r.outputs[key] !== UNKNOWN_STRING) known.push(`${r.urn} ${key}`);
        }
      }
      expect(checked).to.be.greaterThan(500);
      expect(known).to.deep.equal([]);
      // What the first preview turned on: every role's inline policies, every queue's redrive policy left unset.
      const roles = view.filter((r) => r.type === "aws:iam/role:Role");
      expect(roles.every((r) => r.outputs.inlinePolicies === UNKNOWN_STRING)).to.equal(true);
    });

    it(`${stack}, update: the worker's container definitions are stored in byte order, and each role lists its RolePolicies as inline policies`, async () => {
      const view = await planView(stack, []);
      const td = view.find((r) => r.type === "aws:ecs/taskDefinition:TaskDefinition" && r.name === "worker");
      const [container] = JSON.parse(String(td?.outputs.containerDefinitions)) as Array<{ environment: Array<{ name: string }>; cpu: number }>;
      const names = container!.environment.map((e) => e.name);
      expect(names.length).to.be.greaterThan(5);
      expect(names).to.deep.equal([...names].sort(byteOrder));
      // The program lists them in that order too, so the declaration equals the stored definition to the letter.
      const [declared] = JSON.parse(String(td?.inputs.containerDefinitions)) as Array<{ environment: Array<{ name: string }> }>;
      expect(declared!.environment.map((e) => e.name)).to.deep.equal(names);
      expect(container!.cpu).to.be.a("number");
      for (const role of view.filter((r) => r.type === "aws:iam/role:Role")) {
        const own = view.filter((p) => p.type === "aws:iam/rolePolicy:RolePolicy" && (p.propertyDependencies.role ?? []).includes(role.urn));
        expect((role.outputs.inlinePolicies as unknown[]).length, role.urn).to.equal(own.length);
      }
    });
  }
});
