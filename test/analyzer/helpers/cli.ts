/**
 * The real Pulumi CLI for the analyzer tier: found by scripts/ensure-pulumi.sh, run with a home, a
 * backend and a passphrase of the test's own, never the user's.
 *
 * Where no CLI is found the tier is skipped with the script's one line, unless
 * ENCACHE_ANALYZER_REQUIRED=1 (.ci/run sets it): there a missing CLI fails the run.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Context } from "mocha";

export const ROOT = path.resolve(__dirname, "../../..");
export const POLICY_DIR = path.join(ROOT, "policy");
export const PASSPHRASE = "analyzer-tier";

export interface Cli {
  bin: string;
  /** A scratch directory of this run: PULUMI_HOME, file backends, exports. */
  scratch: string;
  env: NodeJS.ProcessEnv;
}

/** One policy violation as `pulumi policy analyze --json` prints it (an engine event's `policyEvent`). */
export interface AnalyzerViolation {
  resourceUrn: string;
  policyName: string;
  policyPackName: string;
  enforcementLevel: "advisory" | "mandatory" | "remediate" | "disabled";
  message: string;
}

export interface AnalyzeResult {
  exitCode: number;
  violations: AnalyzerViolation[];
  /** The summary event's result: "succeeded" or "failed". */
  result: string | undefined;
  stderr: string;
  ms: number;
}

let cached: Cli | null | undefined;

/** The CLI, or null with the reason printed once (the tier is then skipped). */
export function findCli(): Cli | null {
  if (cached !== undefined) return cached;
  const run = spawnSync("bash", [path.join(ROOT, "scripts/ensure-pulumi.sh")], { encoding: "utf8" });
  if (run.status !== 0) {
    const line = run.stderr.trim().split("\n").pop() ?? "ensure-pulumi failed";
    if (process.env.ENCACHE_ANALYZER_REQUIRED === "1") throw new Error(`the analyzer tier is required here: ${line}`);
    process.stdout.write(`  analyzer tier skipped: ${line}\n`);
    cached = null;
    return cached;
  }
  const bin = run.stdout.trim();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "encache-analyzer-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The language host runs the pack on this Node (22, as the rest of the tests).
    PATH: [bin, path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter),
    PULUMI_HOME: path.join(scratch, "home"),
    PULUMI_SKIP_UPDATE_CHECK: "1",
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    PULUMI_BACKEND_URL: `file://${path.join(scratch, "backend")}`,
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
  };
  // The pack's own copy of NODE_PATH-free resolution: its dependencies come from policy/node_modules.
  delete env.NODE_PATH;
  fs.mkdirSync(path.join(scratch, "backend"), { recursive: true });
  process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));
  cached = { bin, scratch, env };
  return cached;
}

/** Skips the suite (in its `before`) where no CLI is found; else makes sure the pack's dependencies are installed. */
export function cliOrSkip(ctx: Context): Cli {
  const cli = findCli();
  if (!cli) ctx.skip();
  ensurePackInstalled();
  return cli as Cli;
}

/**
 * The language host loads the pack from policy/, with policy/node_modules (its own install, as a user
 * runs `npm ci --prefix policy` before `pulumi preview --policy-pack policy`). .ci/run installs it;
 * elsewhere it is installed here once, from npm's cache when it can.
 */
export function ensurePackInstalled(): void {
  if (fs.existsSync(path.join(POLICY_DIR, "node_modules", "@pulumi", "policy", "package.json"))) return;
  execFileSync("npm", ["ci", "--omit=dev", "--prefix", POLICY_DIR, "--no-audit", "--no-fund", "--prefer-offline"], { stdio: "inherit" });
}

/** `pulumi <args>` with the tier's environment; resolves with its exit code and output. */
export function pulumi(cli: Cli, args: string[], opts: { cwd?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(cli.bin, "pulumi"), [...args, "--non-interactive", "--color", "never"], {
      cwd: opts.cwd ?? ROOT,
      env: cli.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** `pulumi policy analyze --file <file> --policy-pack policy [--policy-pack-config <config>] --json`, parsed. */
export async function analyze(cli: Cli, file: string, config?: object): Promise<AnalyzeResult> {
  return analyzeWith(cli, ["--file", file], `${file}.config.json`, config);
}

/** The same on a stack of the tier's file backend (`--stack`, the live state), from the project directory `cwd`. */
export async function analyzeStack(cli: Cli, stack: string, cwd: string, config?: object): Promise<AnalyzeResult> {
  return analyzeWith(cli, ["--stack", stack], path.join(cwd, `analyze-${stack}.config.json`), config, cwd);
}

async function analyzeWith(cli: Cli, source: string[], configFile: string, config?: object, cwd?: string): Promise<AnalyzeResult> {
  const args = ["policy", "analyze", ...source, "--policy-pack", POLICY_DIR, "--json"];
  if (config) {
    fs.writeFileSync(configFile, JSON.stringify(config));
    args.push("--policy-pack-config", configFile);
  }
  const started = Date.now();
  const run = await pulumi(cli, args, { cwd });
  const ms = Date.now() - started;
  const violations: AnalyzerViolation[] = [];
  let result: string | undefined;
  for (const line of run.stdout.split("\n")) {
    if (!line.trim()) continue;
    let event: { policyEvent?: AnalyzerViolation; summaryEvent?: { result?: string } };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      throw new Error(`pulumi policy analyze printed a line that is not JSON:\n${line}\n${run.stderr}`);
    }
    if (event.policyEvent) violations.push(event.policyEvent);
    if (event.summaryEvent) result = event.summaryEvent.result;
  }
  if (result === undefined) throw new Error(`pulumi policy analyze ended without a summary (exit ${run.code}):\n${run.stderr}${run.stdout}`);
  return { exitCode: run.code, violations, result, stderr: run.stderr, ms };
}

/** The JSON of a stack export, written into the scratch directory. */
export function writeJson(cli: Cli, name: string, value: unknown): string {
  const file = path.join(cli.scratch, name);
  fs.writeFileSync(file, `${JSON.stringify(value)}\n`);
  return file;
}

/** `npm run plan -- <args>` on this Node; resolves with its exit code and output. */
export function plan(cli: Cli, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const tsx = path.join(ROOT, "node_modules", ".bin", "tsx");
    const child = spawn(tsx, [path.join(ROOT, "plan/cli.ts"), ...args], { cwd: ROOT, env: { ...cli.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
