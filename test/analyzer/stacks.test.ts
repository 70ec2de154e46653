/**
 * The real Pulumi CLI judges both stacks: `npm run plan -- --export` writes each as `pulumi stack
 * export` would after `pulumi up`, the engine's own `stack import` accepts the file on a file backend,
 * and `pulumi policy analyze --file` with the stack's pack config finds nothing. A queue planted
 * without a redrive policy makes the analyzer fail the run with queue-has-dlq, mandatory.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { type Cli, analyze, analyzeStack, cliOrSkip, plan, pulumi, writeJson } from "./helpers/cli";
import { ingestRecording } from "../policy/helpers/ingest";
import { T, add, queue, urnOf, withDeclarations } from "../policy/helpers/recording";
import { updateView } from "../../policy/testing/engine";
import { type UntypedDeployment, stackExport } from "../../plan/export";
import { installedProviderVersion } from "../../plan/export-file";

const STACKS = ["dev", "prod"] as const;
/** Secret values in each stack's state: dev's GPU instance-id parameter (pulumi-aws makes `value` secret), as input and output; prod has no such parameter. */
const SECRETS: Record<(typeof STACKS)[number], number> = { dev: 2, prod: 0 };
const count = (text: string, what: string) => text.split(what).length - 1;

describe("analyzer tier: the stacks under the real Pulumi CLI", function () {
  // Each plan takes seconds, each analyze run a few more (docs/policy-pack.md has the timings).
  this.timeout(180_000);
  let cli: Cli;
  const exports: Partial<Record<(typeof STACKS)[number], string>> = {};

  before(async function () {
    cli = cliOrSkip(this);
    // Prepare: both stacks exported, side by side.
    const runs = await Promise.all(STACKS.map((s) => plan(cli, ["--stack", s, "--export", path.join(cli.scratch, `${s}.json`)])));
    STACKS.forEach((stack, i) => {
      expect(runs[i]?.code, runs[i]?.stderr).to.equal(0);
      exports[stack] = path.join(cli.scratch, `${stack}.json`);
    });
  });

  for (const stack of STACKS) {
    it(`${stack}: the export loads with \`pulumi stack import\` on a file backend, every resource and secret intact, and the live state is clean too`, async () => {
      // Prepare
      const file = exports[stack] as string;
      const doc = JSON.parse(fs.readFileSync(file, "utf8")) as UntypedDeployment;
      const project = path.join(cli.scratch, `project-${stack}`);
      fs.mkdirSync(project, { recursive: true });
      fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: encache\nruntime: nodejs\n");
      const init = await pulumi(cli, ["stack", "init", stack], { cwd: project });
      expect(init.code, init.stderr).to.equal(0);
      // Act
      const imported = await pulumi(cli, ["stack", "import", "--file", file], { cwd: project });
      const back = await pulumi(cli, ["stack", "export", "--show-secrets"], { cwd: project });
      // Assess
      expect(imported.code, imported.stderr + imported.stdout).to.equal(0);
      const state = JSON.parse(back.stdout) as UntypedDeployment;
      expect(state.deployment.resources.map((r) => r.urn)).to.deep.equal(doc.deployment.resources.map((r) => r.urn));
      // Each secret sealed with the passphrase manager in the file, and each readable once imported.
      expect(count(JSON.stringify(doc.deployment.resources), '"ciphertext"')).to.equal(SECRETS[stack]);
      expect(count(JSON.stringify(state.deployment.resources), '"plaintext"')).to.equal(SECRETS[stack]);
      if (SECRETS[stack] > 0) expect(doc.deployment.secrets_providers?.type).to.equal("passphrase");
      // The imported stack judged from the backend (`policy analyze --stack`, as after a deploy): nothing.
      const config = JSON.parse(fs.readFileSync(path.join(__dirname, `../../policy/config.${stack}.json`), "utf8")) as object;
      const live = await analyzeStack(cli, stack, project, config);
      expect([live.exitCode, live.result, live.violations]).to.deep.equal([0, "succeeded", []]);
    });

    it(`${stack}: the real analyzer with policy/config.${stack}.json finds 0 mandatory and 0 advisory violations`, async () => {
      // Prepare
      const config = JSON.parse(fs.readFileSync(path.join(__dirname, `../../policy/config.${stack}.json`), "utf8")) as object;
      // Act
      const run = await analyze(cli, exports[stack] as string, config);
      // Assess
      expect(run.violations, JSON.stringify(run.violations, null, 2)).to.deep.equal([]);
      expect([run.exitCode, run.result]).to.deep.equal([0, "succeeded"]);
    });
  }

  it("a queue planted without a redrive policy fails the real analyzer's run with queue-has-dlq, mandatory", async () => {
    // Prepare: the good ingest fixture, and one queue added that declares no DLQ.
    const rs = withDeclarations(ingestRecording());
    add(rs, queue("planted", { visibilityTimeoutSeconds: 60 }, { state: {} }));
    const doc = stackExport({ project: "encache", stack: "dev", resources: updateView(rs), providerVersions: { aws: installedProviderVersion("aws") } });
    const file = writeJson(cli, "planted.json", doc);
    // Act
    const run = await analyze(cli, file);
    // Assess
    expect(run.violations.map((v) => [v.policyName, v.enforcementLevel, v.resourceUrn])).to.deep.equal([
      ["queue-has-dlq", "mandatory", urnOf(T.queue, "planted")],
    ]);
    expect([run.exitCode, run.result]).to.deep.equal([1, "failed"]);
    expect(run.stderr).to.match(/mandatory policy violations were found/);
  });
});
