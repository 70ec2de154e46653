/**
 * The fixture programs (test/infra/fixtures: the real program with resources that break rules, the
 * blind-spot fixture among them), each planned as prod's update and exported (`npm run plan --
 * --json --export`), then judged by the real analyzer with prod's pack config: its verdict is the
 * plan's own (the offline evaluator's), violation for violation, messages included.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { type Cli, ROOT, analyze, cliOrSkip, plan } from "./helpers/cli";
import { analyzerMessages, analyzerVerdict, recordedUrns, verdict } from "./helpers/cases";
import { stackUrn } from "../../plan/export";
import type { PlanDocument } from "../../plan/render";

const FIXTURES = fs
  .readdirSync(path.join(ROOT, "test/infra/fixtures"))
  .filter((f) => f.endsWith(".ts"))
  .sort();
const STACK = "prod";

interface Judged {
  doc: PlanDocument;
  real: Awaited<ReturnType<typeof analyze>>;
}

describe("analyzer tier: the fixture programs under the real Pulumi CLI", function () {
  this.timeout(300_000);
  let cli: Cli;
  const judged = new Map<string, Judged>();

  before(async function () {
    cli = cliOrSkip(this);
    const config = JSON.parse(fs.readFileSync(path.join(ROOT, `policy/config.${STACK}.json`), "utf8")) as object;
    // Two at a time: each plan and each analyze run is a process of its own.
    const queue = [...FIXTURES];
    const worker = async () => {
      for (let f = queue.shift(); f; f = queue.shift()) {
        const file = path.join(cli.scratch, `fixture-${f}.json`);
        const run = await plan(cli, ["--stack", STACK, "--json", "--export", file, "--program", `test/infra/fixtures/${f}`]);
        expect([0, 1], run.stderr).to.include(run.code);
        judged.set(f, { doc: JSON.parse(run.stdout) as PlanDocument, real: await analyze(cli, file, config) });
      }
    };
    await Promise.all([worker(), worker()]);
  });

  it("covers every fixture program", () => {
    expect(FIXTURES.length).to.be.greaterThan(3);
    expect([...judged.keys()].sort()).to.deep.equal(FIXTURES);
  });

  for (const f of FIXTURES) {
    it(`${f}: the real analyzer reports exactly the offline plan's violations, and fails the run when one is mandatory`, () => {
      // Prepare
      const { doc, real: run } = judged.get(f) as Judged;
      const root = stackUrn(doc.project, doc.stack);
      const real = { ...run, violations: recordedUrns(run.violations, [doc.resources]) };
      // Assess
      expect(analyzerVerdict(real.violations)).to.deep.equal(verdict(doc.violations, root));
      expect(analyzerMessages(real.violations)).to.deep.equal(doc.violations.map((v) => `${v.policy} ${v.urn ?? root} ${v.message}`).sort());
      expect(real.exitCode === 0).to.equal(doc.summary.mandatory === 0);
    });
  }

  it("blind-spots.ts: the orphan queue planted without a redrive policy is a mandatory queue-has-dlq violation of the real analyzer", () => {
    // Prepare
    const { real } = judged.get("blind-spots.ts") as Judged;
    // Assess
    const dlq = real.violations.filter((v) => v.policyName === "queue-has-dlq").map((v) => [v.enforcementLevel, v.resourceUrn.split("::").pop()]);
    expect(dlq).to.deep.equal([["mandatory", "blind-orphan"]]);
    expect(real.exitCode).to.not.equal(0);
  });
});
