/**
 * The CI workflows (.github/workflows): actionlint finds nothing (and does find a broken workflow),
 * and each workflow keeps the promises the README makes of it.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";

interface Step {
  uses?: string;
  run?: string;
  name?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  permissions?: Record<string, string>;
  concurrency?: { group: string; "cancel-in-progress": boolean };
  environment?: string;
  needs?: string | string[];
  strategy?: { "fail-fast"?: boolean; matrix?: Record<string, unknown> };
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const DIR = path.join(REPO_ROOT, ".github/workflows");
const workflow = (file: string) => parse(fs.readFileSync(path.join(DIR, file), "utf8")) as Workflow;
const lint = (...files: string[]) => spawnSync("bash", [path.join(REPO_ROOT, "scripts/lint-workflows.sh"), ...files], { cwd: REPO_ROOT, encoding: "utf8" });
const pulumiSteps = (job: Job) => job.steps.filter((s) => s.uses?.startsWith("pulumi/actions@"));

describe("CI workflows", function () {
  this.timeout(300_000);

  it("pass actionlint", () => {
    const run = lint();
    expect(run.status, run.stdout + run.stderr).to.equal(0);
  });

  it("the lint fails a broken workflow (the check can fail)", () => {
    const file = path.join(os.tmpdir(), `broken-${process.pid}.yml`);
    fs.writeFileSync(file, "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such_property }}\n");
    const run = lint(file);
    fs.rmSync(file, { force: true });
    expect(run.status).to.equal(1);
    expect(run.stdout).to.contain("no_such_property");
  });

  it("grant every workflow read-only contents by default, and each job only what it uses", () => {
    for (const file of fs.readdirSync(DIR)) {
      const w = workflow(file);
      expect(w.permissions, file).to.deep.equal({ contents: "read" });
      for (const [name, job] of Object.entries(w.jobs)) {
        const granted = Object.entries(job.permissions ?? {}).filter(([, v]) => v === "write").map(([k]) => k);
        const needs = new Set<string>();
        if (job.steps.some((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"))) needs.add("id-token");
        if (job.steps.some((s) => s.uses?.startsWith("github/codeql-action/upload-sarif@"))) needs.add("security-events");
        if (pulumiSteps(job).some((s) => s.with?.["comment-on-pr"] === true)) needs.add("pull-requests");
        expect(granted.sort(), `${file} ${name}`).to.deep.equal([...needs].sort());
      }
    }
  });

  it("ci: tests and the offline plan of every stack in both modes, kept as artifacts and SARIF, with no cloud credentials", () => {
    const w = workflow("ci.yml");
    expect(Object.keys(w.on).sort()).to.deep.equal(["pull_request", "push"]);
    expect(w.jobs.test!.steps.map((s) => s.run).filter(Boolean)).to.include("npm test");
    const plan = w.jobs.plan!;
    expect(plan.strategy?.matrix).to.deep.include({ stack: ["dev", "prod"], mode: ["update", "first-preview"] });
    const script = plan.steps.find((s) => s.run?.includes("npm run --silent plan"));
    expect(script?.run).to.contain("--sarif plan.sarif").and.contain("--json");
    expect(plan.steps.some((s) => s.uses?.startsWith("actions/upload-artifact@"))).to.equal(true);
    expect(plan.steps.find((s) => s.uses?.startsWith("github/codeql-action/upload-sarif@"))?.with?.category).to.equal("plan-${{ matrix.stack }}-${{ matrix.mode }}");
    expect(JSON.stringify(w)).to.not.match(/secrets\.|configure-aws-credentials/);
  });

  it("ci: the tests run on Node 22 and 24, each leg to the end; every other job on .nvmrc's Node, as production", () => {
    const test = workflow("ci.yml").jobs.test!;
    expect(test.strategy).to.deep.include({ "fail-fast": false, matrix: { node: ["22", "24"] } });
    expect(test.steps.find((s) => s.uses?.startsWith("actions/setup-node@"))?.with?.["node-version"]).to.equal("${{ matrix.node }}");
    for (const file of fs.readdirSync(DIR)) {
      for (const [name, job] of Object.entries(workflow(file).jobs)) {
        if (file === "ci.yml" && name === "test") continue;
        for (const s of job.steps.filter((s) => s.uses?.startsWith("actions/setup-node@"))) {
          expect(s.with, `${file} ${name}`).to.deep.include({ "node-version-file": ".nvmrc" }).and.not.have.property("node-version");
        }
      }
    }
  });

  it("preview: each stack previewed with the pack and its config, after buildx and OIDC credentials, commented on the PR", () => {
    const job = workflow("preview.yml").jobs.preview!;
    expect(job.concurrency).to.deep.equal({ group: "pulumi-${{ matrix.stack }}", "cancel-in-progress": false });
    const order = job.steps.map((s) => s.uses?.split("@")[0] ?? s.run);
    expect(order.indexOf("docker/setup-buildx-action")).to.be.lessThan(order.indexOf("pulumi/actions"));
    expect(order.indexOf("aws-actions/configure-aws-credentials")).to.be.lessThan(order.indexOf("pulumi/actions"));
    expect(order).to.include("npm ci --omit=dev --prefix policy");
    const [preview] = pulumiSteps(job);
    expect(preview?.with).to.deep.include({ command: "preview", "comment-on-pr": true, policyPacks: "policy", policyPackConfigs: "policy/config.${{ matrix.stack }}.json" });
  });

  it("deploy: dev then prod behind its protected environment, each `up` with the pack and followed by preview --expect-no-changes", () => {
    const w = workflow("deploy.yml");
    expect(Object.keys(w.on)).to.include("push");
    expect(w.jobs.prod!.needs).to.equal("dev");
    expect(w.jobs.prod!.environment).to.equal("prod");
    for (const stack of ["dev", "prod"]) {
      const job = w.jobs[stack]!;
      expect(job.concurrency, stack).to.deep.equal({ group: `pulumi-${stack}`, "cancel-in-progress": false });
      const steps = pulumiSteps(job);
      expect(steps.map((s) => s.with?.command), stack).to.deep.equal(["up", "preview"]);
      expect(steps[1]!.with?.["expect-no-changes"], stack).to.equal(true);
      for (const s of steps) expect(s.with, stack).to.deep.include({ "stack-name": stack, policyPacks: "policy", policyPackConfigs: `policy/config.${stack}.json` });
    }
    expect(JSON.stringify(w)).to.not.match(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
  });
});
