import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { expect } from "chai";
import { nodeNote, parseRunArgs, RUN_OPTIONS, USAGE, UsageError } from "../../local/cli";
import { SCENARIOS } from "../../local/scenarios";

describe("local run: command-line arguments", () => {
  it("names the Node it runs on, and says so when it is not the Lambdas' major (their sandboxes run on it)", () => {
    expect(nodeNote("v22.23.3")).to.equal("running on Node v22.23.3, as the Lambdas (nodejs22.x)");
    expect(nodeNote("v24.21.0")).to.equal("running on Node v24.21.0; the Lambdas run nodejs22.x, so the local sandboxes differ from them");
  });

  it("defaults to the dev stack, every scenario but the opt-in ones, speed 60, the default size", () => {
    const args = parseRunArgs([], true);
    expect(args).to.deep.include({ stack: "dev", speed: 60, size: "default", tty: true, json: false });
    expect(args !== "help" && args.scenarios).to.deep.equal(SCENARIOS.filter((s) => !s.optIn).map((s) => s.name));
    expect(args !== "help" && args.scenarios).to.not.include("gpu-idle");
  });

  it("runs an opt-in scenario when named", () => {
    expect(parseRunArgs(["--scenario", "gpu-idle"], false)).to.deep.include({ scenarios: ["gpu-idle"] });
  });

  it("--json keeps stdout for the document, so the live view is plain", () => {
    const args = parseRunArgs(["--json"], true);
    expect(args).to.deep.include({ tty: false, json: true });
  });

  it("--no-tty and a non-terminal both give plain output", () => {
    expect(parseRunArgs(["--no-tty"], true)).to.deep.include({ tty: false });
    expect(parseRunArgs([], false)).to.deep.include({ tty: false });
  });

  it("takes one or more --scenario", () => {
    const first = SCENARIOS[0]?.name ?? "";
    const args = parseRunArgs(["--scenario", first, "--size", "small", "--speed", "120"], false);
    expect(args).to.deep.include({ scenarios: [first], size: "small", speed: 120 });
  });

  it("--report takes the page's file, resolved against the working directory; without it there is none", () => {
    expect(parseRunArgs(["--report", "out/run.html"], false)).to.deep.include({ report: path.resolve("out/run.html") });
    expect(parseRunArgs([], false)).not.to.have.property("report");
  });

  const bad: Array<[string[], RegExp]> = [
    [["--scenario", "nope"], /--scenario nope: unknown \(have: /],
    [["--speed", "0"], /--speed 0: must be a number from 1 to 3600/],
    [["--speed", "fast"], /--speed fast/],
    [["--size", "huge"], /--size huge: must be small or default/],
    [["--stack", "../etc"], /--stack \.\.\/etc: not a stack name/],
    [["--frobnicate"], /frobnicate/],
    [["--report", "reports/"], /--report reports\/: must name a file/],
  ];
  for (const [argv, message] of bad) {
    it(`refuses ${argv.join(" ")} with a message naming the flag`, () => {
      expect(() => parseRunArgs(argv, false)).to.throw(UsageError, message);
    });
  }

  it("answers --help", () => {
    expect(parseRunArgs(["--help"], false)).to.equal("help");
  });

  // Each long flag the parser takes, and its short form when it has one.
  const accepted = Object.entries(RUN_OPTIONS).flatMap(([name, option]) => [`--${name}`, ...("short" in option ? [`-${option.short}`] : [])]);

  it("the usage text names every flag the parser accepts", () => {
    // A whole flag: --size must not pass on the strength of a --size-x.
    const missing = accepted.filter((flag) => !new RegExp(`(^|[\\s\\[|])${flag}(?=[\\s\\]|])`).test(USAGE));
    expect(missing, USAGE).to.deep.equal([]);
    expect(accepted).to.include.members(["--gpu-boot-seconds", "--task-seconds", "-h"]);
  });

  it("the usage text names no flag the parser refuses", () => {
    const named = [...USAGE.matchAll(/(?<=[\s[|])--?[a-z][a-z-]*/g)].map((m) => m[0]);
    expect(named).to.have.length.above(5);
    expect(named.filter((flag) => !accepted.includes(flag))).to.deep.equal([]);
  });

  it("npm start exits 2 on a bad flag, naming it, before starting anything", function () {
    this.timeout(30_000);
    // Act: the real entry point, as `npm start -- --speed 0` runs it.
    const out = spawnSync(process.execPath, ["--import", "tsx", "local/cli.ts", "--speed", "0"], { cwd: path.resolve(__dirname, "../.."), encoding: "utf8" });
    // Assert
    expect(out.status).to.equal(2);
    expect(out.stderr).to.match(/^start: --speed 0: must be a number from 1 to 3600\nusage: npm start/m);
    expect(out.stdout).to.equal("");
  });

  it("npm start exits 2 when the report's directory does not exist, before starting anything", function () {
    this.timeout(30_000);
    // Act
    const out = spawnSync(process.execPath, ["--import", "tsx", "local/cli.ts", "--report", "/nonexistent-dir/run.html"], {
      cwd: path.resolve(__dirname, "../.."),
      encoding: "utf8",
    });
    // Assess
    expect(out.status).to.equal(2);
    expect(out.stderr).to.equal("start: --report /nonexistent-dir/run.html: no directory /nonexistent-dir\n");
  });
});
