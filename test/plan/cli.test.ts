/**
 * The CLI contract of the offline plan (docs/plan.md): exit codes, stdout/stderr, the human tree
 * and the --json document on a pipe. At least one real child process per exit code; what needs
 * no process (config and input validation, rendering) runs in process.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { REPO_ROOT } from "../../infra/bundle";
import { loadStackConfig } from "../../infra/config";
import { renderHuman, type PlanDocument } from "../../plan/render";
import { PlanInputError, readStackFiles, resolveProgram } from "../../plan/stack-files";
import { planJson, runPlan } from "../infra/helpers/run-plan";

/** A stack file next to the committed ones, made from dev's with `edit` applied; removed after each test. */
const tmpStack = `zz-invalid-${process.pid}`;
const tmpFile = path.join(REPO_ROOT, `Pulumi.${tmpStack}.yaml`);
function writeTmpStack(edit: (dev: string) => string): void {
  const dev = fs.readFileSync(path.join(REPO_ROOT, "Pulumi.dev.yaml"), "utf8");
  const edited = edit(dev);
  expect(edited, "the edit must change the dev stack file").to.not.equal(dev);
  fs.writeFileSync(tmpFile, edited);
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a throw");
}

describe("plan CLI (child processes)", function () {
  this.timeout(120_000);
  afterEach(() => fs.rmSync(tmpFile, { force: true }));

  it("exits 0 and prints the human tree for the dev stack", async () => {
    const run = await runPlan(["--stack", "dev"]);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/encache:parts:Ingest {2}ingest/);
    expect(run.stdout).to.match(/└─ aws:lambda\/eventSourceMapping:EventSourceMapping {2}ingest-dlq-consumer-mapping/);
    expect(run.stdout).to.contain("Policy violations: none");
  });

  it("exits 1 with a violation naming the function when a DLQ consumer lacks ec2:StartInstances", async () => {
    const { run, doc } = await planJson("dev", ["--program", "test/infra/fixtures/dlq-consumer-without-ec2.ts"]);
    expect(run.code).to.equal(1);
    const v = doc.violations.filter((x) => x.policy === "dlq-consumer-can-start-gpu");
    expect(v).to.have.length(1);
    expect(v[0]!.enforcementLevel).to.equal("mandatory");
    expect(v[0]!.urn).to.match(/aws:lambda\/function:Function::orders-dlq-consumer$/);
    expect(v[0]!.message).to.contain("ec2:StartInstances");
  });

  for (const stack of ["dev", "prod"]) {
    for (const mode of [[], ["--first-preview"]]) {
      it(`exits 1 on ${stack}${mode.length ? " on a first preview" : ""} when a DLQ consumer lacks ec2:StartInstances, through dlq-consumer-can-start-gpu at mandatory level`, async () => {
        const { run, doc } = await planJson(stack, [...mode, "--program", "test/infra/fixtures/dlq-consumer-without-ec2.ts"]);
        expect(run.code).to.equal(1);
        expect(doc.mode).to.equal(mode.length ? "first-preview" : "update");
        // Decided from the declared policy on a first preview, from the policy itself after: never
        // through the fail-closed rule, never as "can't run during preview".
        expect(doc.violations.map((x) => [x.policy, x.enforcementLevel, x.urn?.split("::").pop()])).to.deep.equal([
          ["dlq-consumer-can-start-gpu", "mandatory", "orders-dlq-consumer"],
        ]);
      });
    }
  }

  // A first preview of the real program under the provider model (policy/testing/provider-model.ts):
  // every output the provider computes, and every Optional+Computed one left unset, is unknown.
  for (const stack of ["dev", "prod"]) {
    it(`a first preview of ${stack} is clean: no violation of any level, exit 0`, async () => {
      const { run, doc } = await planJson(stack, ["--first-preview"]);
      expect(run.code, run.stderr).to.equal(0);
      expect(doc.violations, JSON.stringify(doc.violations, null, 2)).to.deep.equal([]);
      expect(doc.summary).to.include({ mandatory: 0, advisory: 0 });
    });
  }

  it("clean is not blind: on prod's first preview each literal fact is a mandatory violation of the rule that owns it", async () => {
    const { run, doc } = await planJson("prod", ["--first-preview", "--program", "test/infra/fixtures/blind-spots.ts"]);
    expect(run.code).to.equal(1);
    const fired = doc.violations.map((v) => [v.policy, v.enforcementLevel, v.urn?.split("::").pop()]);
    expect(fired).to.deep.equal([
      ["iam-star-resource-unscopable-only", "mandatory", "blind-policy-declared"],
      ["job-table-ttl", "mandatory", "blind-jobs"],
      ["queue-has-dlq", "mandatory", "blind-orphan"],
      ["role-inline-policies-known", "mandatory", "blind-role"],
    ]);
  });

  it("fails closed when PULUMI_NODEJS_SKIP_COMPONENT_INPUTS hides every declaration's inputs from the resource rules", async () => {
    const { run, doc } = await planJson("prod", ["--first-preview"], { PULUMI_NODEJS_SKIP_COMPONENT_INPUTS: "1" });
    expect(run.code).to.equal(1);
    const declarations = doc.resources.filter((r) => r.type === "encache:policy:DeclaredDocument").length;
    expect(declarations).to.be.greaterThan(20);
    expect(doc.violations.filter((v) => v.policy === "declared-documents-have-inputs" && v.enforcementLevel === "mandatory")).to.have.length(declarations);
  });

  it("--sarif writes the violations as SARIF 2.1.0, each at the TypeScript line that declared its resource", async () => {
    const file = path.join(os.tmpdir(), `plan-${process.pid}.sarif`);
    const run = await runPlan(["--stack", "prod", "--first-preview", "--program", "test/infra/fixtures/dlq-consumer-without-ec2.ts", "--sarif", file]);
    expect(run.code).to.equal(1);
    const log = JSON.parse(fs.readFileSync(file, "utf8")) as {
      version: string;
      runs: Array<{
        results: Array<{
          ruleId: string;
          level: string;
          locations: Array<{ physicalLocation: { artifactLocation: { uri: string }; region: { startLine: number } } }>;
        }>;
      }>;
    };
    fs.rmSync(file, { force: true });
    expect(log.version).to.equal("2.1.0");
    const [result] = log.runs[0]!.results;
    expect(result).to.deep.include({ ruleId: "dlq-consumer-can-start-gpu", level: "error" });
    const at = result!.locations[0]!.physicalLocation;
    const line = fs.readFileSync(path.join(REPO_ROOT, at.artifactLocation.uri), "utf8").split("\n")[at.region.startLine - 1];
    expect(line).to.contain("new aws.lambda.Function(");
  });

  it("exits 1 on a program that breaks each hardening rule, naming all eleven", async () => {
    const { run, doc } = await planJson("prod", ["--program", "test/infra/fixtures/hardening-broken.ts"]);
    expect(run.code).to.equal(1);
    const mandatory = [...new Set(doc.violations.filter((v) => v.enforcementLevel === "mandatory").map((v) => v.policy))].sort();
    expect(mandatory).to.include.members([
      "ec2-run-instances-via-launch-template",
      "iam-arns-name-account",
      "instance-role-no-managed-policies",
      "trust-policy-confused-deputy",
      "ecs-container-least-privilege",
      "sg-egress-restricted",
      "vpc-flow-logs",
      "vpc-default-sg-closed",
      "alarms-have-actions",
      "iam-star-resource-unscopable-only",
      "ec2-stop-scoped-to-stack",
    ]);
  });

  it("a first preview of a program without declarations: prod fails closed, dev only warns, and an update judges the policy", async () => {
    const program = ["--program", "test/infra/fixtures/dlq-consumer-undeclared.ts"];
    const [prodFirst, devFirst, devUpdate] = await Promise.all([
      planJson("prod", ["--first-preview", ...program]),
      planJson("dev", ["--first-preview", ...program]),
      planJson("dev", program),
    ]);
    const levels = (d: typeof prodFirst.doc) => d.violations.map((x) => `${x.policy} ${x.enforcementLevel}`).sort();
    expect([prodFirst.run.code, levels(prodFirst.doc)]).to.deep.equal([1, ["dlq-consumer-can-start-gpu advisory", "documents-visible-on-preview mandatory"]]);
    expect([devFirst.run.code, levels(devFirst.doc)]).to.deep.equal([0, ["dlq-consumer-can-start-gpu advisory", "documents-visible-on-preview advisory"]]);
    // The fixture grants StartInstances on `*`: unscoped by tag, and on a resource AWS lets it name.
    expect([devUpdate.run.code, levels(devUpdate.doc)]).to.deep.equal([
      1,
      ["ec2-launch-grants-scoped mandatory", "iam-star-resource-unscopable-only mandatory"],
    ]);
  });

  it("exits 2 and names the key when the stack config holds an invalid value", async () => {
    writeTmpStack((dev) => dev.replace(/maxReceiveCount: 3/, "maxReceiveCount: 1"));
    const run = await runPlan(["--stack", tmpStack]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.contain("encache:queues.maxReceiveCount");
    expect(run.stdout).to.equal("");
  });

  it("exits 2 naming encache:worker.baseImage when the worker's base image is not pinned by digest", async () => {
    writeTmpStack((dev) => dev.replace(/^( {4}baseImage: node:\d+-alpine)@sha256:[0-9a-f]{64}$/m, "$1"));
    const run = await runPlan(["--stack", tmpStack]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/encache:worker\.baseImage: must pin the image by digest/);
    expect(run.stdout).to.equal("");
  });

  it("exits 2 naming encache:gpu.capacity.fleet.drainSeconds when prod's drain is below the lifecycle hook's 30 s", async () => {
    // Prepare: prod (the fleet) with a 20 s drain, which the schema took before and AWS refuses (PutLifecycleHook: 30–7200).
    const prod = fs.readFileSync(path.join(REPO_ROOT, "Pulumi.prod.yaml"), "utf8");
    const edited = prod.replace(/^( {8}drainSeconds:) \d+$/m, "$1 20");
    expect(edited).to.not.equal(prod);
    fs.writeFileSync(tmpFile, edited);
    // Act
    const run = await runPlan(["--stack", tmpStack]);
    // Assess
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/encache:gpu\.capacity\.fleet\.drainSeconds: must be at least 30/);
    expect(run.stdout).to.equal("");
  });

  it("exits 2 naming aws:allowedAccountIds when a stack does not name its account, and a GPU parameter shared across stacks", async () => {
    writeTmpStack((dev) =>
      dev
        .replace(/ {2}aws:allowedAccountIds:\n {4}- "\d{12}"\n/, "")
        .replace("    instanceType: g5.xlarge\n", "    instanceType: g5.xlarge\n    instanceIdParameter: /encache/gpu/instance_id\n"),
    );
    const run = await runPlan(["--stack", tmpStack]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.contain("aws:allowedAccountIds: is required");
    expect(run.stderr).to.match(/encache:gpu\.instanceIdParameter: "\/encache\/gpu\/instance_id" must contain the environment "dev"/);
  });

  it("exits 2 naming encache:network.availabilityZoneIds when a pinned zone is not one of the account's", async () => {
    writeTmpStack((dev) => dev.replace("availabilityZoneIds: [use1-az1, use1-az2]", "availabilityZoneIds: [use1-az1, use1-az9]"));
    const run = await runPlan(["--stack", tmpStack]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/encache:network\.availabilityZoneIds: use1-az9: not an available zone of us-east-1/);
  });

  it("wires the stack's extra egress into its group, and a hardening waiver into the container's label, which the pack accepts", async () => {
    writeTmpStack((dev) =>
      dev
        .replace(
          "  encache:network:\n",
          "  encache:network:\n    extraEgress:\n      ingestGpu:\n        - { protocol: tcp, fromPort: 443, toPort: 443, cidrBlocks: [203.0.113.0/24], description: model mirror }\n",
        )
        .replace("    strategy:\n", "    strategy:\n      hardening:\n        user: null\n"),
    );
    const { run, doc } = await planJson(tmpStack);
    expect(run.code, run.stderr).to.equal(0);
    expect(doc.summary.mandatory).to.equal(0);
    const gpuSg = doc.resources.find((r) => r.type === "aws:ec2/securityGroup:SecurityGroup" && r.name === "ingest-gpu-sg");
    expect(gpuSg?.inputs.egress).to.deep.include({ protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["203.0.113.0/24"], description: "model mirror" });
    const strategy = doc.resources.find((r) => r.type === "aws:ecs/taskDefinition:TaskDefinition" && r.name === "retraining-strategy");
    const [container] = JSON.parse(String(strategy?.inputs.containerDefinitions)) as Array<Record<string, unknown>>;
    expect(container).to.not.have.property("user");
    expect(container!.dockerLabels).to.deep.equal({ "encache.hardening-waived": "user" });
    expect(container!.readonlyRootFilesystem).to.equal(true);
  });

  it("exits 2 for no --stack", async () => {
    const run = await runPlan([]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/--stack is required/);
    expect(run.stdout).to.equal("");
  });

  it("exits 2 for --export with --first-preview: a first preview has no state to export", async () => {
    const run = await runPlan(["--stack", "dev", "--first-preview", "--export", "x.json"]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/--export writes the state after a deploy/);
    expect(run.stdout).to.equal("");
  });

  it("exits 2 and names a bad flag, with the usage", async () => {
    const run = await runPlan(["--stak", "dev"]);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/Unknown option '--stak'/);
    expect(run.stderr).to.match(/usage: npm run plan -- --stack <name>/);
    expect(run.stdout).to.equal("");
  });

  it("delivers the whole --json document to a slow reader on a pipe (no truncation at exit)", () => {
    const cli = path.join(REPO_ROOT, "plan/cli.ts");
    const r = spawnSync("sh", ["-c", `"${process.execPath}" --import tsx "${cli}" --stack prod --json | (sleep 2; cat)`], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      timeout: 120_000,
    });
    const doc = JSON.parse(r.stdout) as PlanDocument;
    expect(r.stdout.length).to.be.greaterThan(131_072);
    expect(doc.summary.resources).to.equal(doc.resources.length);
  });
});

// What the CLI prints for exit 2 is `plan: ` and the message of these errors (see the child tests).
describe("plan inputs (in process)", function () {
  this.timeout(30_000);
  afterEach(() => fs.rmSync(tmpFile, { force: true }));

  it("names the key when a required key is missing", () => {
    writeTmpStack((dev) => dev.replace(/^\s+servicePort: 8080\n/m, ""));
    const files = readStackFiles(REPO_ROOT, tmpStack);
    pulumi.runtime.setAllConfig(files.config, files.secretKeys);
    const err = thrown(() => loadStackConfig());
    expect(err.name).to.equal("StackConfigError");
    expect(err.message).to.match(/encache:gpu\.servicePort: is required/);
  });

  it("names an unknown stack and the known ones", () => {
    const err = thrown(() => readStackFiles(REPO_ROOT, "nope"));
    expect(err).to.be.instanceOf(PlanInputError);
    expect(err.message).to.match(/Pulumi\.nope\.yaml does not exist \(stacks: .*dev.*\)/);
  });

  it("refuses a program outside the checkout, a missing one and a non-TypeScript one", () => {
    expect(thrown(() => resolveProgram(REPO_ROOT, "/etc/hostname")).message).to.match(/inside the checkout/);
    expect(thrown(() => resolveProgram(REPO_ROOT, "nope.ts")).message).to.match(/no such file/);
    expect(thrown(() => resolveProgram(REPO_ROOT, "package.json")).message).to.match(/must be a TypeScript file/);
    expect(resolveProgram(REPO_ROOT, path.join(REPO_ROOT, "test/infra/fixtures/dlq-consumer-without-ec2.ts"))).to.match(/dlq-consumer-without-ec2\.ts$/);
  });
});

describe("renderHuman (the plan's human output)", () => {
  const doc: PlanDocument = {
    project: "encache",
    stack: "dev",
    mode: "update",
    resources: [
      { urn: "urn:c", type: "encache:parts:Ingest", name: "ingest", parent: null, inputs: {}, dependencies: [], protect: false },
      { urn: "urn:q", type: "aws:sqs/queue:Queue", name: "ingest-q", parent: "urn:c", inputs: {}, dependencies: [], protect: false },
      { urn: "urn:f", type: "aws:lambda/function:Function", name: "ingest-f", parent: "urn:c", inputs: {}, dependencies: [], protect: false },
    ],
    violations: [
      { policy: "rule-a", enforcementLevel: "mandatory", urn: "urn:f", message: "first line\nsecond line" },
      { policy: "rule-b", enforcementLevel: "advisory", urn: null, message: "stack-wide" },
    ],
    summary: { resources: 3, mandatory: 1, advisory: 1 },
  };

  it("prints the tree by component, the bundles and each violation with its URN", () => {
    const out = renderHuman(doc, { bundles: { "functions/ingest/window-handler.ts": 2048 }, wallMs: 1234 });
    expect(out.split("\n")).to.include.members([
      "Plan: project encache, stack dev (offline, Pulumi mocks)",
      "encache:parts:Ingest  ingest",
      "├─ aws:sqs/queue:Queue  ingest-q",
      "└─ aws:lambda/function:Function  ingest-f",
      "Resources: 3",
      "  functions/ingest/window-handler.ts  2.0 KiB",
      "  ✖ mandatory  rule-a",
      "      urn:f",
      "      first line",
      "      second line",
      "  ! advisory   rule-b",
      "      stack-wide",
      "1 mandatory, 1 advisory violation(s); planned in 1.2 s",
    ]);
  });

  it("says so when there is no violation", () => {
    const out = renderHuman({ ...doc, violations: [], summary: { resources: 3, mandatory: 0, advisory: 0 } }, { bundles: {}, wallMs: 0 });
    expect(out).to.contain("Policy violations: none");
    expect(out).to.not.contain("Function bundles:");
  });
});
