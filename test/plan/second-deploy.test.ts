/**
 * A second `pulumi up` after a change to the worker's code changes only what must change: the
 * image (and its content tag), the worker's task definition that runs it, and the service that
 * points at the new revision. Everything else, every Lambda included, plans the same. The plan
 * runs twice in a copy of the checkout, with one line of worker code changed in between.
 */
import { expect } from "chai";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../../infra/bundle";
import type { PlanDocument } from "../../plan/render";

function copyCheckout(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "encache-second-deploy-"));
  const files = execFileSync("git", ["ls-files"], { cwd: REPO_ROOT, encoding: "utf8" })
    .split("\n")
    .filter((f) => f.length > 0);
  for (const file of files) {
    const target = path.join(dir, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, file), target);
  }
  fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  return dir;
}

function plan(dir: string): PlanDocument {
  const run = spawnSync(process.execPath, ["--import", "tsx", "plan/cli.ts", "--stack", "dev", "--json"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) throw new Error(`plan exited ${run.status}:\n${run.stderr}`);
  return JSON.parse(run.stdout) as PlanDocument;
}

/** `type name` of every resource whose inputs differ between the two plans. */
function changed(before: PlanDocument, after: PlanDocument): string[] {
  const prior = new Map(before.resources.map((r) => [r.urn, JSON.stringify(r.inputs)]));
  expect(after.resources.map((r) => r.urn).sort()).to.deep.equal([...prior.keys()].sort());
  return after.resources
    .filter((r) => prior.get(r.urn) !== JSON.stringify(r.inputs))
    .map((r) => `${r.type} ${r.name}`)
    .sort();
}

describe("a second deploy after a worker code change", function () {
  this.timeout(240_000);
  let dir: string;

  before(() => {
    dir = copyCheckout();
  });
  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("changes the image and its tag, the worker's task definition and the service, and nothing else", () => {
    // Prepare
    const before = plan(dir);
    const main = path.join(dir, "functions/worker/main.ts");
    fs.appendFileSync(main, '\nprocess.env.WORKER_BUILD_MARK ??= "second deploy";\n');

    // Act
    const after = plan(dir);

    // Assess
    expect(changed(before, after)).to.deep.equal([
      "aws:ecs/service:Service worker",
      "aws:ecs/taskDefinition:TaskDefinition worker",
      "awsx:ecr:Image worker-image",
      // The declaration of the task definition's containers (for the policy pack); it creates nothing in AWS.
      "encache:policy:DeclaredDocument worker-declared",
    ]);
    const tag = (doc: PlanDocument) => doc.resources.find((r) => r.type === "awsx:ecr:Image" && r.name === "worker-image")!.inputs.imageTag;
    expect(tag(after)).to.match(/^sha-[0-9a-f]{32}$/);
    expect(tag(after)).to.not.equal(tag(before));
  });

  it("plans the same twice when nothing changed", () => {
    expect(changed(plan(dir), plan(dir))).to.deep.equal([]);
  });
});
