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
  "working-directory"?: string;
  if?: string;
  uses?: string;
  run?: string;
  name?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  if?: string;
  "timeout-minutes"?: number;
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

interface StepRun {
  status: number | null;
  stdout: string;
  summary: string;
  output: string;
  /** Each call of the fake `pulumi`, its arguments joined by spaces. */
  calls: string[];
}

/**
 * Runs a step's `run` script as GitHub does (`bash --noprofile --norc -eo pipefail`), in `cwd`, with
 * a fake `pulumi` first on PATH: it records its arguments, prints `PULUMI_OUT` and exits
 * `PULUMI_CODE` for `preview` and `policy`, prints `PULUMI_STACK_NAME` for `stack`, and succeeds otherwise.
 */
function runStep(script: string, env: Record<string, string>, cwd?: string): StepRun {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "step-"));
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  const calls = path.join(dir, "calls");
  fs.writeFileSync(
    path.join(bin, "pulumi"),
    [
      "#!/usr/bin/env bash",
      `echo "$*" >> ${JSON.stringify(calls)}`,
      'case "$1" in',
      '  preview|policy) printf "%s\\n" "$PULUMI_OUT"; exit "${PULUMI_CODE:-0}" ;;',
      '  stack) echo "$PULUMI_STACK_NAME" ;;',
      "esac",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  const summary = path.join(dir, "summary");
  const output = path.join(dir, "output");
  fs.writeFileSync(summary, "");
  fs.writeFileSync(output, "");
  const file = path.join(dir, "step.sh");
  fs.writeFileSync(file, script);
  const run = spawnSync("bash", ["--noprofile", "--norc", "-eo", "pipefail", file], {
    cwd: cwd ?? dir,
    encoding: "utf8",
    env: { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: dir, GITHUB_STEP_SUMMARY: summary, GITHUB_OUTPUT: output, ...env },
  });
  const result = {
    status: run.status,
    stdout: run.stdout + run.stderr,
    summary: fs.readFileSync(summary, "utf8"),
    output: fs.readFileSync(output, "utf8"),
    calls: fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trim().split("\n") : [],
  };
  fs.rmSync(dir, { recursive: true, force: true });
  return result;
}

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
        const matrix = job.strategy?.matrix !== undefined;
        const stack = matrix ? '"$STACK"' : name;
        expect(job.steps[source]!.run, `${file} ${name}`).to.equal(`npx tsx scripts/stack-region.ts ${stack} >> "$GITHUB_OUTPUT"`);
        if (matrix) expect(job.steps[source]!.env, `${file} ${name}`).to.deep.equal({ STACK: "${{ matrix.stack }}" });
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

  it("every workflow that runs Pulumi uses pulumi/actions@v7 (v7.0.0: node24), and none an older major", () => {
    // Prepare
    const want = ["deploy.yml", "drift.yml", "policy-publish.yml", "preview.yml"];
    // Act
    const uses = fs
      .readdirSync(DIR)
      .flatMap((file) => Object.values(workflow(file).jobs).flatMap((job) => pulumiSteps(job).map((s) => ({ file, uses: s.uses }))));
    // Assess
    expect([...new Set(uses.map((u) => u.file))].sort()).to.deep.equal(want);
    for (const { file, uses: u } of uses) expect(u, file).to.equal("pulumi/actions@v7");
  });

  it("drift: daily and on demand, each stack in its own drift environment with its read-only drift role", () => {
    // Prepare
    const w = workflow("drift.yml");
    // Act
    const job = w.jobs.drift!;
    const creds = job.steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"));
    // Assess
    expect(w.on.schedule).to.deep.equal([{ cron: "0 5 * * *" }]);
    expect(Object.keys(w.on).sort()).to.deep.equal(["schedule", "workflow_dispatch"]);
    expect(job.strategy).to.deep.equal({
      "fail-fast": false,
      matrix: {
        include: [
          { stack: "dev", role: "AWS_ROLE_ARN_DRIFT_DEV" },
          { stack: "prod", role: "AWS_ROLE_ARN_DRIFT_PROD" },
        ],
      },
    });
    // The environment makes the subject environment:drift-<stack>, which only the drift role trusts
    // (test/ci/roles.test.ts), and holds the backend secrets without prod's reviewers.
    expect(job.environment).to.equal("drift-${{ matrix.stack }}");
    expect(job.permissions).to.deep.equal({ contents: "read", "id-token": "write" });
    expect(creds?.with?.["role-to-assume"]).to.equal("${{ vars[matrix.role] }}");
    expect(JSON.stringify(w)).to.not.match(/AWS_ROLE_ARN_(PREVIEW_)?(DEV|PROD)\b|AWS_ACCESS_KEY_ID/);
    // Never deploy.yml's group: a queued check would cancel a pending deploy.
    expect(job.concurrency).to.deep.equal({ group: "drift-${{ matrix.stack }}", "cancel-in-progress": false });
    // The CLI only: no command, so the script below runs the preview and writes the summary.
    const [install] = pulumiSteps(job);
    expect(install?.with).to.equal(undefined);
    const order = job.steps.map((s) => s.uses?.split("@")[0] ?? s.run);
    const check = job.steps.findIndex((s) => s.run?.includes("pulumi preview"));
    expect(check).to.be.greaterThan(order.indexOf("pulumi/actions"));
    expect(order.indexOf("pulumi/actions")).to.be.greaterThan(order.indexOf("aws-actions/configure-aws-credentials"));
    expect(job.steps[check]!.env).to.deep.include({
      STACK: "${{ matrix.stack }}",
      PULUMI_ACCESS_TOKEN: "${{ secrets.PULUMI_ACCESS_TOKEN }}",
      PULUMI_CONFIG_PASSPHRASE: "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}",
    });
  });

  describe("drift: the check's script", () => {
    const script = workflow("drift.yml").jobs.drift!.steps.find((s) => s.run?.includes("pulumi preview"))!.run!;
    const DIFF = "~ aws:sqs/queue:Queue: (update)\n    ~ visibilityTimeoutSeconds: 30 => 60\nerror: no changes were expected but changes were proposed";
    const cases: { name: string; code: string; out: string; status: number; summary: RegExp[]; annotation?: RegExp }[] = [
      {
        name: "no drift: a green run and a line in the summary",
        code: "0",
        out: "Resources:\n    54 unchanged",
        status: 0,
        summary: [/^### No drift in dev$/m],
      },
      {
        name: "drift: a failed run, the diff in the summary",
        code: "255",
        out: DIFF,
        status: 255,
        summary: [/^### Drift in dev$/m, /^```diff$/m, /visibilityTimeoutSeconds: 30 => 60/],
        annotation: /::error title=Drift in dev::/,
      },
      {
        name: "a preview that could not compare (credentials, a broken program): a failed run, said as such",
        code: "255",
        out: "error: failed to decrypt: incorrect passphrase",
        status: 255,
        summary: [/^### Drift check of dev failed$/m, /incorrect passphrase/],
        annotation: /::error title=Drift check of dev failed::/,
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare
        const env = { STACK: "dev", PULUMI_BACKEND_URL: "", PULUMI_OUT: c.out, PULUMI_CODE: c.code };
        // Act
        const run = runStep(script, env);
        // Assess
        expect(run.status, run.stdout).to.equal(c.status);
        for (const m of c.summary) expect(run.summary).to.match(m);
        if (c.annotation) expect(run.stdout).to.match(c.annotation);
        expect(run.calls).to.deep.equal([
          "login",
          "preview --stack dev --refresh --expect-no-changes --diff --non-interactive --color never --suppress-outputs",
        ]);
      });
    }

    it("logs in to PULUMI_BACKEND_URL when it is set (a DIY backend), to Pulumi Cloud when it is empty", () => {
      // Prepare
      const env = { STACK: "prod", PULUMI_BACKEND_URL: "s3://state-bucket", PULUMI_OUT: "", PULUMI_CODE: "0" };
      // Act
      const run = runStep(script, env);
      // Assess
      expect(run.calls[0]).to.equal("login s3://state-bucket");
      expect(run.calls[1]).to.match(/^preview --stack prod /);
    });
  });

  describe("policy-publish: on a policy-v* tag, only when the tag names policy/package.json's version", () => {
    const w = workflow("policy-publish.yml");
    const job = w.jobs.publish!;
    const check = job.steps.find((s) => s.id === "version")!;
    const version = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy/package.json"), "utf8")) as { version: string }).version;

    it("runs on policy-v* tags only, in the policy environment, the check before the publish", () => {
      // Prepare
      const order = job.steps.map((s) => s.id ?? s.uses?.split("@")[0] ?? s.run);
      // Act
      const publish = job.steps.find((s) => s.run?.includes("pulumi policy publish"));
      // Assess
      expect(w.on).to.deep.equal({ push: { tags: ["policy-v*"] } });
      expect(job.environment).to.equal("policy");
      expect(check.env).to.deep.equal({ TAG: "${{ github.ref_name }}" });
      expect(publish?.["working-directory"]).to.equal("policy");
      expect(publish?.run).to.contain('pulumi policy publish "$PULUMI_ORG"');
      expect(publish?.env).to.deep.include({ PULUMI_ACCESS_TOKEN: "${{ secrets.PULUMI_ACCESS_TOKEN }}", PULUMI_ORG: "${{ vars.PULUMI_ORG }}" });
      expect(order.indexOf("version")).to.be.lessThan(order.indexOf("pulumi/actions"));
      expect(order.indexOf("npm ci --omit=dev --prefix policy")).to.be.within(0, order.indexOf(publish?.run) - 1);
    });

    const cases: { tag: string; status: number }[] = [
      { tag: `policy-v${version}`, status: 0 },
      { tag: "policy-v999.0.0", status: 1 },
      { tag: `v${version}`, status: 1 },
      { tag: `policy-v${version}-rc.1`, status: 1 },
    ];
    for (const { tag, status } of cases) {
      it(`tag ${tag} against version ${version}: ${status === 0 ? "published" : "refused before anything is published"}`, () => {
        // Prepare
        const env = { TAG: tag };
        // Act
        const run = runStep(check.run!, env, REPO_ROOT);
        // Assess
        expect(run.status, run.stdout).to.equal(status);
        if (status === 0) expect(run.output).to.equal(`version=${version}\n`);
        else expect(run.stdout).to.contain(`::error title=Tag and pack version differ::tag ${tag}`);
      });
    }
  });

  describe("deploy: `pulumi policy analyze --stack <org/project/stack>` on the deployed state after each up", () => {
    const w = workflow("deploy.yml");
    for (const stack of ["dev", "prod"]) {
      it(`${stack}: after up and before the settled preview, with the stack's pack config, on its fully qualified name`, () => {
        // Prepare
        const job = w.jobs[stack]!;
        const at = job.steps.findIndex((s) => s.run?.includes("pulumi policy analyze"));
        const step = job.steps[at]!;
        // Act
        const run = runStep(step.run!, { PULUMI_STACK_NAME: `acme/encache/${stack}` });
        // Assess
        const up = job.steps.findIndex((s) => s.with?.command === "up");
        const settled = job.steps.findIndex((s) => s.with?.command === "preview");
        expect(at).to.be.greaterThan(up).and.lessThan(settled);
        expect(run.status, run.stdout).to.equal(0);
        expect(run.calls).to.deep.equal([
          `stack --stack ${stack} --show-name --fully-qualify-stack-names`,
          `policy analyze --stack acme/encache/${stack} --policy-pack policy --policy-pack-config policy/config.${stack}.json --non-interactive`,
        ]);
        expect(step.env).to.deep.equal({
          PULUMI_ACCESS_TOKEN: "${{ secrets.PULUMI_ACCESS_TOKEN }}",
          PULUMI_CONFIG_PASSPHRASE: "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}",
        });
      });

      it(`${stack}: a mandatory violation on the deployed state fails the job`, () => {
        // Prepare
        const step = w.jobs[stack]!.steps.find((s) => s.run?.includes("pulumi policy analyze"))!;
        const env = { PULUMI_STACK_NAME: `acme/encache/${stack}`, PULUMI_OUT: "queue-has-dlq (mandatory)", PULUMI_CODE: "1" };
        // Act
        const run = runStep(step.run!, env);
        // Assess
        expect(run.status).to.equal(1);
      });
    }
  });
});
