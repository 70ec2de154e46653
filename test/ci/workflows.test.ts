/**
 * The CI workflows (.github/workflows): actionlint finds nothing (and does find a broken workflow),
 * and each workflow keeps the promises docs/ci.md makes of it.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";

interface Step {
  id?: string;
  if?: string;
  uses?: string;
  run?: string;
  name?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  if?: string;
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
        const granted = Object.entries(job.permissions ?? {})
          .filter(([, v]) => v === "write")
          .map(([k]) => k);
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
    expect(plan.steps.find((s) => s.uses?.startsWith("github/codeql-action/upload-sarif@"))?.with?.category).to.equal(
      "plan-${{ matrix.stack }}-${{ matrix.mode }}",
    );
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

  it("preview: each stack previewed with the pack and its config, after OIDC credentials, commented on the PR", () => {
    const job = workflow("preview.yml").jobs.preview!;
    expect(job.concurrency).to.deep.equal({ group: "preview-${{ github.event.pull_request.number }}-${{ matrix.stack }}", "cancel-in-progress": true });
    const order = job.steps.map((s) => s.uses?.split("@")[0] ?? s.run);
    expect(order.indexOf("aws-actions/configure-aws-credentials")).to.be.lessThan(order.indexOf("pulumi/actions"));
    expect(order).to.include("npm ci --omit=dev --prefix policy");
    const [preview] = pulumiSteps(job);
    expect(preview?.with).to.deep.include({
      command: "preview",
      "comment-on-pr": true,
      policyPacks: "policy",
      policyPackConfigs: "policy/config.${{ matrix.stack }}.json",
    });
  });

  it("preview: a pull request's run gets no secret, no environment and only the read-only preview roles", () => {
    const text = fs.readFileSync(path.join(DIR, "preview.yml"), "utf8");
    const w = workflow("preview.yml");
    // Nothing that could change a stack or decrypt its config: no secret at all, no real backend.
    expect(JSON.stringify(w)).to.not.match(/secrets\.|PULUMI_ACCESS_TOKEN|PULUMI_BACKEND_URL|AWS_ROLE_ARN_(DEV|PROD)\b/);
    expect(text).to.not.match(/^\s*(environment|secrets):/m);
    const job = w.jobs.preview!;
    // A job that names an environment gets the `environment:<name>` subject, which the deploy roles trust.
    expect(job.environment).to.equal(undefined);
    expect(job.strategy?.matrix?.include).to.deep.equal([
      { stack: "dev", role: "AWS_ROLE_ARN_PREVIEW_DEV" },
      { stack: "prod", role: "AWS_ROLE_ARN_PREVIEW_PROD" },
    ]);
    expect(job.steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"))?.with?.["role-to-assume"]).to.equal("${{ vars[matrix.role] }}");
    const [preview] = pulumiSteps(job);
    // A throwaway file backend under the runner's temp directory, its stack created for the run,
    // under a passphrase generated (and masked) in the run.
    expect(preview?.with).to.deep.include({ "cloud-url": "file://${{ runner.temp }}/pulumi-state", upsert: true, "secrets-provider": "passphrase" });
    const throwaway = job.steps.find((s) => s.run?.includes("PULUMI_CONFIG_PASSPHRASE"))?.run ?? "";
    expect(throwaway).to.contain("openssl rand").and.contain("::add-mask::").and.contain('mkdir -p "$RUNNER_TEMP/pulumi-state"');
    // A first preview does not build the worker image (awsx builds inside an apply on the repository URL).
    expect(job.steps.some((s) => s.uses?.startsWith("docker/setup-buildx-action@"))).to.equal(false);
  });

  it("preview: the stack file loses the real stack's secrets manager (a committed encryptionsalt) before the throwaway preview", () => {
    // Prepare
    const job = workflow("preview.yml").jobs.preview!;
    const order = job.steps.map((s) => s.uses?.split("@")[0] ?? s.run);
    // Act
    const ready = job.steps.find((s) => s.run?.includes("scripts/preview-stack-file.ts"));
    // Assess: it runs on this matrix stack's file, after the throwaway passphrase and before the preview
    expect(ready?.run).to.equal('npx tsx scripts/preview-stack-file.ts "$STACK"');
    expect(ready?.env).to.deep.equal({ STACK: "${{ matrix.stack }}" });
    const at = order.indexOf(ready?.run);
    expect(at).to.be.greaterThan(job.steps.findIndex((s) => s.run?.includes("PULUMI_CONFIG_PASSPHRASE")));
    expect(at).to.be.lessThan(order.indexOf("pulumi/actions"));
  });

  it("preview: a fork's pull request (or a repository without the preview roles) skips the cloud preview with a notice and a summary", () => {
    const w = workflow("preview.yml");
    const sameRepo = "github.event.pull_request.head.repo.full_name == github.repository";
    const roles = ["vars.AWS_ROLE_ARN_PREVIEW_DEV != ''", "vars.AWS_ROLE_ARN_PREVIEW_PROD != ''"];
    const preview = w.jobs.preview!.if!.replace(/\s+/g, " ");
    for (const c of [sameRepo, ...roles]) expect(preview).to.contain(c);
    // The skip job runs exactly when the preview does not: each of its conditions negates one of the preview's.
    const skipped = w.jobs["preview-skipped"]!;
    const negation = skipped.if!.replace(/\s+/g, " ");
    for (const c of [sameRepo, ...roles]) expect(negation).to.contain(c.replace(/ == /, " != ").replace(/ != ''$/, " == ''"));
    expect(negation.split("||")).to.have.length(3);
    expect(preview.split("&&")).to.have.length(3);
    expect(skipped.permissions).to.equal(undefined);
    const say = skipped.steps.map((s) => s.run ?? "").join("\n");
    expect(say).to.contain("::notice title=Cloud preview skipped::").and.contain("$GITHUB_STEP_SUMMARY");
    expect(say).to.not.match(/exit [1-9]/);
  });

  it("ci: a fork's pull request keeps the plan's SARIF as an artifact instead of uploading it (its token cannot), with a notice", () => {
    const plan = workflow("ci.yml").jobs.plan!;
    const upload = plan.steps.find((s) => s.uses?.startsWith("github/codeql-action/upload-sarif@"))!;
    expect(upload.if!.replace(/\s+/g, " ")).to.contain(
      "(github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository)",
    );
    const notice = plan.steps.find((s) => s.name === "Code scanning skipped (fork)")!;
    expect(notice.if!.replace(/\s+/g, " ")).to.contain(
      "github.event_name == 'pull_request' && github.event.pull_request.head.repo.full_name != github.repository",
    );
    expect(notice.run).to.contain("::notice");
  });

  it("every job that configures AWS credentials takes the region from its stack's Pulumi.<stack>.yaml, never a literal", () => {
    for (const file of fs.readdirSync(DIR)) {
      expect(fs.readFileSync(path.join(DIR, file), "utf8"), file).to.not.match(/\b(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d\b/);
      for (const [name, job] of Object.entries(workflow(file).jobs)) {
        const creds = job.steps.findIndex((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"));
        if (creds < 0) continue;
        const region = job.steps[creds]!.with?.["aws-region"];
        const id = /^\$\{\{ steps\.([\w-]+)\.outputs\.region \}\}$/.exec(String(region))?.[1];
        expect(id, `${file} ${name}: aws-region ${String(region)}`).to.be.a("string");
        const source = job.steps.findIndex((s) => s.id === id);
        expect(source, `${file} ${name}`).to.be.within(0, creds - 1);
        const stack = name === "preview" ? '"$STACK"' : name;
        expect(job.steps[source]!.run, `${file} ${name}`).to.equal(`npx tsx scripts/stack-region.ts ${stack} >> "$GITHUB_OUTPUT"`);
        if (name === "preview") expect(job.steps[source]!.env).to.deep.equal({ STACK: "${{ matrix.stack }}" });
        // npm ci first: tsx is a project dependency.
        expect(
          job.steps.findIndex((s) => s.run === "npm ci"),
          `${file} ${name}`,
        ).to.be.within(0, source - 1);
      }
    }
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
      expect(
        steps.map((s) => s.with?.command),
        stack,
      ).to.deep.equal(["up", "preview"]);
      expect(steps[1]!.with?.["expect-no-changes"], stack).to.equal(true);
      // The first run on a new backend creates the stack; the settled check runs on what `up` left.
      expect(steps[0]!.with?.upsert, stack).to.equal(true);
      // The environment makes the OIDC subject `environment:<stack>`, the only one the deploy role trusts.
      expect(job.environment, stack).to.equal(stack);
      expect(job.steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"))?.with?.["role-to-assume"], stack).to.equal(
        `\${{ vars.AWS_ROLE_ARN_${stack.toUpperCase()} }}`,
      );
      for (const s of steps)
        expect(s.with, stack).to.deep.include({ "stack-name": stack, policyPacks: "policy", policyPackConfigs: `policy/config.${stack}.json` });
    }
    expect(JSON.stringify(w)).to.not.match(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
  });
});
