/**
 * scripts/ensure-pulumi.sh, on fake CLIs (shell scripts that print a version) in a scratch copy of the
 * script: where it looks, in which order, what is too old, and the one line it prints when nothing
 * is found. Needs no real CLI, so it runs everywhere the tier runs.
 */
import { expect } from "chai";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const SCRIPT = path.resolve(__dirname, "../../scripts/ensure-pulumi.sh");

/** A directory holding a fake `pulumi` of `version`, and the language host when `host`. */
function fakeBin(dir: string, version: string, host = true): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
  if (host) fs.writeFileSync(path.join(dir, "pulumi-language-nodejs"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  return dir;
}

/** A release tarball as shared/tools holds one: `pulumi-<version>/bin/{pulumi,pulumi-language-nodejs}`. */
function fakeTarball(toolsDir: string, version: string): void {
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), "fake-release-"));
  fakeBin(path.join(staging, `pulumi-${version}`, "bin"), version);
  fs.mkdirSync(toolsDir, { recursive: true });
  execFileSync("tar", ["-cJf", path.join(toolsDir, `pulumi-${version}-linux-x64.tar.xz`), "-C", staging, `pulumi-${version}`]);
  fs.rmSync(staging, { recursive: true, force: true });
}

interface Layout {
  /** The checkout: <root>/repo, with scripts/ensure-pulumi.sh. */
  repo: string;
  root: string;
}

function layout(): Layout {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ensure-pulumi-"));
  const repo = path.join(root, "repo");
  fs.mkdirSync(path.join(repo, "scripts"), { recursive: true });
  fs.copyFileSync(SCRIPT, path.join(repo, "scripts", "ensure-pulumi.sh"));
  return { repo, root };
}

/** A PATH with the system's tools (bash, tar, git, xz) but no pulumi of the machine's own. */
function systemPath(): string {
  return ["/usr/local/sbin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"].filter((d) => !fs.existsSync(path.join(d, "pulumi"))).join(":");
}

interface Case {
  title: string;
  arrange: (l: Layout) => { env?: Record<string, string>; pathFirst?: string };
  /** Exit code, and the directory printed (relative to the layout's root) or the stderr's single line. */
  code: number;
  stdout?: string;
  stderr?: RegExp;
}

const CASES: Case[] = [
  {
    title: "nothing anywhere: exit 3 and one line saying what to install",
    arrange: () => ({}),
    code: 3,
    stderr: /^ensure-pulumi: no Pulumi CLI >= 3\.249 .*install it \(https:\/\/www\.pulumi\.com\/docs\/install\/\) or set ENCACHE_PULUMI_BIN/,
  },
  {
    title: "on PATH with the language host beside it",
    arrange: (l) => ({ pathFirst: fakeBin(path.join(l.root, "opt/bin"), "v3.274.1") }),
    code: 0,
    stdout: "opt/bin",
  },
  {
    title: "on PATH but older than 3.249 (no `policy analyze --file`)",
    arrange: (l) => ({ pathFirst: fakeBin(path.join(l.root, "opt/bin"), "v3.248.0") }),
    code: 3,
    stderr: /no Pulumi CLI >= 3\.249/,
  },
  {
    title: "on PATH without the language host",
    arrange: (l) => ({ pathFirst: fakeBin(path.join(l.root, "opt/bin"), "v3.274.1", false) }),
    code: 3,
    stderr: /pulumi-language-nodejs/,
  },
  {
    title: "ENCACHE_PULUMI_BIN wins over PATH",
    arrange: (l) => ({
      pathFirst: fakeBin(path.join(l.root, "opt/bin"), "v3.274.1"),
      env: { ENCACHE_PULUMI_BIN: fakeBin(path.join(l.root, "chosen"), "v3.260.0") },
    }),
    code: 0,
    stdout: "chosen",
  },
  {
    title: "ENCACHE_PULUMI_BIN that does not hold the CLI: exit 3, naming it",
    arrange: (l) => ({ env: { ENCACHE_PULUMI_BIN: path.join(l.root, "nowhere") } }),
    code: 3,
    stderr: /ENCACHE_PULUMI_BIN=.*nowhere does not hold/,
  },
  {
    title: "a release in ../shared/tools beside the checkout, unpacked into .tools/pulumi/",
    arrange: (l) => (fakeTarball(path.join(l.root, "shared/tools"), "v3.274.1"), {}),
    code: 0,
    stdout: "repo/.tools/pulumi/pulumi-v3.274.1/bin",
  },
  {
    title: "a release in $ENCACHE_PULUMI_TOOLS (a clone elsewhere)",
    arrange: (l) => (fakeTarball(path.join(l.root, "elsewhere"), "v3.250.0"), { env: { ENCACHE_PULUMI_TOOLS: path.join(l.root, "elsewhere") } }),
    code: 0,
    stdout: "repo/.tools/pulumi/pulumi-v3.250.0/bin",
  },
];

describe("scripts/ensure-pulumi.sh", function () {
  this.timeout(30_000);
  const made: string[] = [];
  after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  for (const c of CASES) {
    it(c.title, () => {
      // Prepare
      const l = layout();
      made.push(l.root);
      const { env = {}, pathFirst } = c.arrange(l);
      const PATH = [pathFirst, systemPath()].filter(Boolean).join(":");
      // Act
      const run = spawnSync("bash", [path.join(l.repo, "scripts/ensure-pulumi.sh")], { encoding: "utf8", env: { HOME: l.root, PATH, ...env } });
      // Assess
      expect(run.status, run.stderr).to.equal(c.code);
      if (c.stdout !== undefined) expect(run.stdout).to.equal(`${fs.realpathSync(path.join(l.root, c.stdout))}\n`);
      if (c.stderr) {
        expect(run.stdout).to.equal("");
        expect(run.stderr.trim().split("\n")).to.have.length(1);
        expect(run.stderr.trim()).to.match(c.stderr);
      }
    });
  }
});

describe("the analyzer tier where no CLI is found", function () {
  this.timeout(60_000);
  const mocha = path.resolve(__dirname, "../../node_modules/.bin/mocha");
  const suite = path.resolve(__dirname, "stacks.test.ts");
  const nowhere = path.join(os.tmpdir(), "no-pulumi-here");

  const cases: Array<{ title: string; env: Record<string, string>; code: (c: number | null) => boolean; out: RegExp }> = [
    {
      title: "is skipped, with the script's one line, and passes",
      // .ci/run requires the tier for everything it runs: this case is the machine without that requirement.
      env: { ENCACHE_PULUMI_BIN: nowhere, ENCACHE_ANALYZER_REQUIRED: "" },
      code: (c) => c === 0,
      out: /analyzer tier skipped: ensure-pulumi: ENCACHE_PULUMI_BIN=.*no-pulumi-here does not hold[\s\S]*\d+ pending/,
    },
    {
      title: "fails where it is required (ENCACHE_ANALYZER_REQUIRED=1, as .ci/run sets it)",
      env: { ENCACHE_PULUMI_BIN: nowhere, ENCACHE_ANALYZER_REQUIRED: "1" },
      code: (c) => c !== 0,
      out: /the analyzer tier is required here: ensure-pulumi: ENCACHE_PULUMI_BIN=/,
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      // Act
      const run = spawnSync(mocha, ["--import=tsx", "--reporter", "spec", suite], { encoding: "utf8", env: { ...process.env, ...c.env } });
      // Assess
      expect(c.code(run.status), `exit ${run.status}\n${run.stdout}${run.stderr}`).to.equal(true);
      expect(run.stdout + run.stderr).to.match(c.out);
    });
  }
});
