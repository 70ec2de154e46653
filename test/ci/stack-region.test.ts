/**
 * scripts/stack-region.ts: the region every workflow gives configure-aws-credentials is the stack's
 * own `aws:region`, and a missing or malformed one stops the job before it assumes a role.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";
import { StackRegionError, stackRegion } from "../../scripts/stack-region";

const withStackFile = (body: string | undefined, act: (root: string) => void) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "stack-region-"));
  try {
    if (body !== undefined) fs.writeFileSync(path.join(root, "Pulumi.demo.yaml"), body);
    act(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
};

describe("scripts/stack-region.ts", function () {
  this.timeout(60_000);

  for (const stack of ["dev", "prod"]) {
    it(`reads ${stack}'s aws:region from Pulumi.${stack}.yaml`, () => {
      const want = (parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, unknown> }).config["aws:region"];
      expect(stackRegion(stack)).to.equal(want);
    });
  }

  it("follows the file: another region in the config is the region printed", () => {
    withStackFile("config:\n  aws:region: eu-west-3\n", (root) => expect(stackRegion("demo", root)).to.equal("eu-west-3"));
  });

  const refused: { name: string; stack: string; body: string | undefined; message: RegExp }[] = [
    { name: "no stack file", stack: "demo", body: undefined, message: /Pulumi\.demo\.yaml: no such stack file/ },
    { name: "no aws:region", stack: "demo", body: "config:\n  encache:environment: demo\n", message: /"aws:region" must be a region name/ },
    { name: "an empty file", stack: "demo", body: "", message: /"aws:region"/ },
    { name: "a region that is not a name", stack: "demo", body: 'config:\n  aws:region: "us-east-1; rm -rf /"\n', message: /"aws:region"/ },
    { name: "a path instead of a stack name", stack: "../demo", body: "config:\n  aws:region: us-east-1\n", message: /not a stack name/ },
  ];
  for (const { name, stack, body, message } of refused) {
    it(`refuses ${name}`, () => {
      withStackFile(body, (root) => expect(() => stackRegion(stack, root)).to.throw(StackRegionError, message));
    });
  }

  it("as a command prints region=<name> for $GITHUB_OUTPUT, and exits 2 naming the problem", () => {
    const run = (stack: string) => spawnSync(process.execPath, ["--import", "tsx", "scripts/stack-region.ts", stack], { cwd: REPO_ROOT, encoding: "utf8" });
    const ok = run("prod");
    expect(ok.status, ok.stderr).to.equal(0);
    expect(ok.stdout).to.equal(`region=${stackRegion("prod")}\n`);
    const bad = run("nope");
    expect(bad.status).to.equal(2);
    expect(bad.stdout).to.equal("");
    expect(bad.stderr).to.contain("Pulumi.nope.yaml: no such stack file");
  });
});
