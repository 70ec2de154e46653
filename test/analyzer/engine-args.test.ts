/**
 * What the engine hands a policy, resource by resource, against what the offline evaluator hands it:
 * the engine probe (probe-pack/: two advisory policies that report their whole arguments) runs on the
 * dev stack's export in the real CLI and on the same update view in the evaluator. Props, options,
 * dependencies and property dependencies must be identical; the only differences allowed are the
 * ones the evaluator's model leaves out on purpose, listed in MODEL_GAPS (docs/policy-pack.md,
 * "What the real analyzer showed").
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { evaluatePolicies } from "../../policy/testing/evaluate";
import type { RecordedResource } from "../../policy/testing/types";
import { type UntypedDeployment, engineUrns, stackUrn } from "../../plan/export";
import { probePolicies } from "./probe-pack/policies";
import { type Cli, POLICY_DIR, cliOrSkip, plan, pulumi } from "./helpers/cli";

const PROBE = path.join(__dirname, "probe-pack");
type Seen = Record<string, unknown> & { opts: Record<string, unknown> };

/**
 * What the evaluator leaves out, put back: the root Stack parents every top-level resource, and each
 * resource of a provider package names its default provider. Nothing else may differ.
 */
const MODEL_GAPS = "the root Stack as parent of top-level resources; each resource's default provider";

/** JSON with every object's keys sorted: the engine hands objects over with their keys in sorted order (Go's property maps), the evaluator in the program's order, and no rule may read meaning into that order. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : typeof v === "object" && v !== null
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sort(value));
}

function withModelGaps(seen: Seen, root: string, provider: { urn: string; type: string; name: string } | null, stackPolicy: boolean): Seen {
  const out: Seen = { ...seen, opts: { ...seen.opts, parent: seen.opts.parent ?? root }, provider };
  if (stackPolicy) out.parent = seen.parent ?? root;
  return out;
}

describe("analyzer tier: what the engine hands a policy, against the evaluator", function () {
  this.timeout(180_000);
  let cli: Cli;
  const real = new Map<string, Seen>();
  const offline = new Map<string, Seen>();
  /** Recorded URN → the default provider the export names for it (engine URN, type, name), or null. */
  const providerOf = new Map<string, { urn: string; type: string; name: string } | null>();
  let root = "";

  before(async function () {
    cli = cliOrSkip(this);
    // The probe resolves @pulumi/policy from the pack's own install, as the CLI loads a pack.
    const link = path.join(PROBE, "node_modules");
    if (!fs.existsSync(link)) fs.symlinkSync(path.relative(PROBE, path.join(POLICY_DIR, "node_modules")), link);
    const viewFile = path.join(cli.scratch, "probe-view.json");
    const exportFile = path.join(cli.scratch, "probe-export.json");
    const run = await plan(cli, ["--stack", "dev", "--export", exportFile], { PLAN_VIEW_FILE: viewFile });
    expect(run.code, run.stderr).to.equal(0);
    const view = JSON.parse(fs.readFileSync(viewFile, "utf8")) as RecordedResource[];
    const doc = JSON.parse(fs.readFileSync(exportFile, "utf8")) as UntypedDeployment;
    root = stackUrn("encache", "dev");
    const inExport = new Map(doc.deployment.resources.map((r) => [r.urn, r]));
    for (const [recorded, engine] of engineUrns(view)) {
      const ref = inExport.get(engine)?.provider?.split("::").slice(0, -1).join("::");
      const p = ref ? inExport.get(ref) : undefined;
      providerOf.set(recorded, p ? { urn: p.urn, type: p.type, name: p.urn.split("::").pop() ?? "" } : null);
    }

    // The real side, with the engine's URNs turned back into the recording's wherever they occur.
    const back = new Map([...engineUrns(view)].map(([recorded, engine]) => [engine, recorded]));
    const unurn = (v: unknown): unknown =>
      typeof v === "string"
        ? (back.get(v) ?? v)
        : Array.isArray(v)
          ? v.map(unurn)
          : typeof v === "object" && v !== null
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unurn(x)]))
            : v;
    const analyzed = await pulumi(cli, ["policy", "analyze", "--file", exportFile, "--policy-pack", PROBE, "--json"]);
    expect(analyzed.code, analyzed.stderr).to.equal(0);
    for (const line of analyzed.stdout.trim().split("\n")) {
      const event = JSON.parse(line) as { policyEvent?: { policyName: string; resourceUrn: string; message: string } };
      if (!event.policyEvent) continue;
      const { policyName, resourceUrn, message } = event.policyEvent;
      // The SDK sends the description, a newline, then the message.
      real.set(`${policyName} ${back.get(resourceUrn) ?? resourceUrn}`, unurn(JSON.parse(message.slice(message.indexOf("\n") + 1))) as Seen);
    }
    for (const v of await evaluatePolicies(view, probePolicies)) offline.set(`${v.policy} ${v.urn}`, JSON.parse(v.message) as Seen);
  });

  it("the engine hands over every resource the evaluator does, and besides only the root Stack and the default providers", () => {
    // Assess
    expect([...offline.keys()].filter((k) => !real.has(k))).to.deep.equal([]);
    const extra = [...real.keys()].filter((k) => !offline.has(k));
    const expected = ["probe-resource-args", "probe-stack-args"].flatMap((p) =>
      [root, "urn:pulumi:dev::encache::pulumi:providers:aws::default_7_48_0", "urn:pulumi:dev::encache::pulumi:providers:awsx::default_3_9_0"].map(
        (u) => `${p} ${u}`,
      ),
    );
    expect(extra.sort()).to.deep.equal(expected.sort());
  });

  for (const policy of ["probe-resource-args", "probe-stack-args"]) {
    it(`${policy}: props, options, dependencies identical on every resource, once the model's gaps are put back (${MODEL_GAPS})`, () => {
      // Prepare
      const differing: string[] = [];
      for (const [key, seen] of offline) {
        if (!key.startsWith(`${policy} `)) continue;
        const mine = real.get(key);
        const provider = providerOf.get(String(seen.urn)) ?? null;
        // Assess, resource by resource (collected, so one failure shows every difference).
        const expected = withModelGaps(seen, root, provider, policy === "probe-stack-args");
        if (canonical(mine) !== canonical(expected))
          differing.push(`${key}\n  evaluator+gaps: ${canonical(expected).slice(0, 400)}\n  engine:         ${canonical(mine).slice(0, 400)}`);
      }
      expect(differing, differing.slice(0, 5).join("\n")).to.deep.equal([]);
      expect([...offline.keys()].filter((k) => k.startsWith(`${policy} `)).length).to.be.greaterThan(200);
    });
  }
});
