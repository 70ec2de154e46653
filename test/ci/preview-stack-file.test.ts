/**
 * scripts/preview-stack-file.ts: the pull-request preview's stack file without the real stack's
 * secrets manager, so the throwaway stack's random passphrase never meets a committed salt
 * ("incorrect passphrase", pkg/secrets/passphrase/manager.go in pulumi/pulumi).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";
import { PreviewStackFileError, readyStackFile, throwawayStackFile } from "../../scripts/preview-stack-file";

const CONFIG = "config:\n  aws:region: us-east-1\n  # the environment's name\n  encache:environment: demo\n";
const SALT = "encryptionsalt: v1:c2FsdA==:v1:aXY=:Y2lwaGVy\n";

describe("scripts/preview-stack-file.ts", function () {
  this.timeout(60_000);

  const cases: Array<{ case: string; text: string; removed: string[] }> = [
    { case: "a committed passphrase salt", text: SALT + CONFIG, removed: ["encryptionsalt"] },
    { case: "no salt (unchanged)", text: CONFIG, removed: [] },
    {
      case: "a KMS secrets provider and its data key",
      text: `secretsprovider: awskms://alias/encache\nencryptedkey: AQIDAHg=\n${CONFIG}`,
      removed: ["encryptedkey", "secretsprovider"],
    },
  ];
  for (const c of cases) {
    it(`takes out ${c.case}, keeping the config and its comments`, () => {
      // Act
      const out = throwawayStackFile(c.text, "Pulumi.demo.yaml");
      // Assess
      expect(out.removed).to.deep.equal(c.removed);
      expect(parse(out.text)).to.deep.equal({ config: { "aws:region": "us-east-1", "encache:environment": "demo" } });
      expect(out.text).to.contain("# the environment's name");
    });
  }

  const refused: Array<{ case: string; stack: string; text: string | undefined; message: RegExp }> = [
    { case: "a secure value", stack: "demo", text: `${SALT + CONFIG}  encache:token:\n    secure: v1:abc\n`, message: /holds a `secure:` config value/ },
    { case: "no stack file", stack: "demo", text: undefined, message: /Pulumi\.demo\.yaml: no such stack file/ },
    { case: "a path for a stack name", stack: "../x", text: CONFIG, message: /not a stack name/ },
  ];
  for (const r of refused) {
    it(`refuses ${r.case}, leaving the file as it was`, () => {
      // Prepare
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "preview-stack-file-"));
      if (r.text !== undefined) fs.writeFileSync(path.join(root, "Pulumi.demo.yaml"), r.text);
      // Act / Assess
      expect(() => readyStackFile(r.stack, root)).to.throw(PreviewStackFileError, r.message);
      if (r.text !== undefined) expect(fs.readFileSync(path.join(root, "Pulumi.demo.yaml"), "utf8")).to.equal(r.text);
      fs.rmSync(root, { recursive: true, force: true });
    });
  }

  for (const stack of ["dev", "prod"]) {
    it(`passes ${stack}'s committed stack file (no secure value), as the workflow runs it`, () => {
      // Prepare: a copy of the repository's stack files, so the committed ones stay as they are
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "preview-stack-file-"));
      const committed = fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8");
      fs.writeFileSync(path.join(root, `Pulumi.${stack}.yaml`), SALT + committed);
      // Act
      const removed = readyStackFile(stack, root);
      // Assess
      expect(removed).to.deep.equal(["encryptionsalt"]);
      expect(parse(fs.readFileSync(path.join(root, `Pulumi.${stack}.yaml`), "utf8"))).to.deep.equal(parse(committed));
      fs.rmSync(root, { recursive: true, force: true });
    });
  }

  it("exits 2 with the reason from the command line", () => {
    // Act
    const run = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "scripts/preview-stack-file.ts"), "No Such"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    });
    // Assess
    expect(run.status).to.equal(2);
    expect(run.stderr).to.contain('preview-stack-file: not a stack name: "No Such"');
  });
});
