/**
 * One Node major everywhere production is described (.nvmrc, engines, the Lambdas' runtime, the
 * esbuild target, the worker image, the local run's sandboxes), and scripts/with-node.sh, through
 * which `npm start` and `npm test` run on it.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { NODE_RUNTIME, REPO_ROOT } from "../../infra/bundle";
import { RUNTIME as LAMBDA_HOST_RUNTIME } from "../../local/hosts/lambda-host";

const read = (file: string) => fs.readFileSync(path.join(REPO_ROOT, file), "utf8");
const WANT = read(".nvmrc").trim();
const LAUNCHER = path.join(REPO_ROOT, "scripts/with-node.sh");
const major = (v: string) => Number(/\d+/.exec(v)?.[0]);

describe("the Node version", function () {
  this.timeout(120_000);

  it("is one major everywhere: .nvmrc, engines, the Lambdas' runtime, esbuild's target, the worker image, the local sandboxes", () => {
    expect(WANT).to.match(/^\d+$/);
    const pkg = JSON.parse(read("package.json")) as { engines: { node: string }; scripts: Record<string, string> };
    expect(pkg.engines.node).to.equal(`>=${WANT}`);
    expect(NODE_RUNTIME).to.equal(`nodejs${WANT}.x`);
    expect(LAMBDA_HOST_RUNTIME).to.equal(NODE_RUNTIME);
    expect(read("infra/bundle.ts")).to.contain(`target: "node${WANT}"`);
    // The worker image's base is the stacks' encache:worker.baseImage, a digest-pinned node:<major>-alpine.
    expect(read("functions/worker/Dockerfile")).to.match(/^FROM \$\{BASE_IMAGE\}$/m);
    for (const stack of ["dev", "prod"])
      expect(read(`Pulumi.${stack}.yaml`)).to.match(new RegExp(`^    baseImage: node:${WANT}-alpine@sha256:[0-9a-f]{64}$`, "m"));
  });

  it("npm start and npm test go through scripts/with-node.sh, the test tiers under it", () => {
    const { scripts } = JSON.parse(read("package.json")) as { scripts: Record<string, string> };
    expect(scripts.start).to.equal("bash scripts/with-node.sh tsx local/cli.ts");
    expect(scripts.test).to.equal("bash scripts/with-node.sh npm run test:tiers");
    expect(scripts["test:tiers"]).to.match(/^npm run typecheck && /);
  });

  describe("scripts/with-node.sh", () => {
    it("on a new enough Node runs the command itself: arguments (after --, with spaces), stdin, stdout and the exit code pass through", function () {
      if (major(process.version) < major(WANT)) this.skip();
      const r = spawnSync(
        "bash",
        [
          LAUNCHER,
          process.execPath,
          "-e",
          "process.stdout.write(JSON.stringify(process.argv.slice(1)) + require('fs').readFileSync(0, 'utf8')); process.exit(7)",
          "--",
          "a b",
          "--scenario",
          "x",
        ],
        {
          cwd: REPO_ROOT,
          input: "from stdin",
          encoding: "utf8",
        },
      );
      expect(r.status, r.stderr).to.equal(7);
      expect(r.stdout).to.equal('["a b","--scenario","x"]from stdin');
      expect(r.stderr).to.not.contain("with-node:");
    });

    it("replaces itself with the command (exec), so a signal reaches the command directly", async function () {
      if (major(process.version) < major(WANT)) this.skip();
      const child = spawn(
        "bash",
        [LAUNCHER, process.execPath, "-e", "process.on('SIGINT', () => process.exit(42)); console.log(process.pid); setInterval(() => {}, 1000)"],
        {
          cwd: REPO_ROOT,
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const pid = await new Promise<number>((resolve) => child.stdout.once("data", (c: Buffer) => resolve(Number(c.toString().trim()))));
      expect(pid).to.equal(child.pid);
      child.kill("SIGINT");
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code).to.equal(42);
    });

    it(`below Node ${WANT}, runs the command on Node ${WANT} from the registry, once: nested calls find it on PATH`, () => {
      // A `node` that reports itself as Node 20 to the version probes and is the real one otherwise
      // (npx and npm are `env node` scripts and need a working node).
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "old-node-"));
      fs.writeFileSync(
        path.join(dir, "node"),
        `#!/bin/sh\ncase "$*" in\n  *process.versions.node*) echo 20.0.0 ;;\n  --version) echo v20.0.0 ;;\n  *) exec "${process.execPath}" "$@" ;;\nesac\n`,
        { mode: 0o755 },
      );
      const nested = `bash ${JSON.stringify(LAUNCHER)} sh -c 'command -v node; node --version'`;
      const r = spawnSync("bash", [LAUNCHER, "sh", "-c", `${nested}; exit 3`], {
        cwd: REPO_ROOT,
        env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
        encoding: "utf8",
      });
      fs.rmSync(dir, { recursive: true, force: true });
      expect(r.status, r.stderr).to.equal(3);
      const [nodeOnPath, version] = r.stdout.trim().split("\n");
      expect(nodeOnPath, "the registry's node, from npx's cache, first on PATH").to.match(/[\\/]_npx[\\/]/);
      expect(major(version!), r.stdout).to.equal(major(WANT));
      const switches = r.stderr.split("\n").filter((l) => l.startsWith("with-node:"));
      expect(switches, r.stderr).to.have.length(1);
      expect(switches[0]).to.match(new RegExp(`the default Node here is v20\\.0\\.0, older than ${WANT} \\(\\.nvmrc\\); running on Node v${WANT}\\.`));
    });
  });
});
