import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import type { PlanDocument } from "../../../plan/render";

export interface PlanRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the offline plan exactly as `npm run plan -- …` does, in its own process (asynchronously, so plans can overlap). */
export function runPlan(args: string[], env: Record<string, string> = {}): Promise<PlanRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "plan/cli.ts"), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => stdout.push(b));
    child.stderr.on("data", (b: Buffer) => stderr.push(b));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(stdout).toString("utf8"), stderr: Buffer.concat(stderr).toString("utf8") });
    });
  });
}

export async function planJson(stack: string, extra: string[] = [], env: Record<string, string> = {}): Promise<{ run: PlanRun; doc: PlanDocument }> {
  const run = await runPlan(["--stack", stack, "--json", ...extra], env);
  let doc: PlanDocument;
  try {
    doc = JSON.parse(run.stdout) as PlanDocument;
  } catch {
    throw new Error(`plan --json did not print JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  return { run, doc };
}

/** The committed stacks every mocks test reads. */
export const STACKS = ["dev", "prod"] as const;

const stackPlans = new Map<string, Promise<{ run: PlanRun; doc: PlanDocument }>>();

/**
 * The plan of a committed stack, run once per test process: every part's mocks test reads the
 * same dev and prod plans, and each run costs seconds. The first call starts it; later calls
 * share it. Callers must not mutate the document.
 */
export function stackPlan(stack: string): Promise<{ run: PlanRun; doc: PlanDocument }> {
  let plan = stackPlans.get(stack);
  if (!plan) {
    plan = planJson(stack, [], { PLAN_VIEW_FILE: viewFile(stack) });
    // Reported by whichever test awaits it; never an unhandled rejection meanwhile.
    plan.catch(() => undefined);
    stackPlans.set(stack, plan);
  }
  return plan;
}

/** Where a committed stack's plan writes the view the pack judged (PLAN_VIEW_FILE): outputs included, components' registered ones too. */
function viewFile(stack: string): string {
  return path.join(os.tmpdir(), `encache-mocks-view-${process.pid}-${stack}.json`);
}

/** The recording of a committed stack's plan, outputs included: what the parts registered (their inventory) can be read from it. */
export async function stackView(
  stack: string,
): Promise<Array<{ urn: string; type: string; name: string; parent: string | null; outputs: Record<string, unknown> }>> {
  const { run } = await stackPlan(stack);
  if (run.code !== 0) throw new Error(`plan --stack ${stack} exited ${run.code}:\n${run.stderr}`);
  return JSON.parse(fs.readFileSync(viewFile(stack), "utf8")) as Array<{
    urn: string;
    type: string;
    name: string;
    parent: string | null;
    outputs: Record<string, unknown>;
  }>;
}

/**
 * Root hooks of the mocks tier (`--require`): both stacks' plans start at once, in two child
 * processes, before the first test; each test file's `before` awaits the one it reads.
 */
export const mochaHooks = {
  beforeAll(): void {
    for (const stack of STACKS) void stackPlan(stack);
  },
};

/**
 * Both committed stacks' plans, filled by a `before` hook registered in the calling suite; a plan
 * that did not exit 0 fails that hook with its stderr.
 */
export function useStackPlans(): Record<string, PlanDocument> {
  const docs: Record<string, PlanDocument> = {};
  before(async () => {
    for (const stack of STACKS) {
      const { run, doc } = await stackPlan(stack);
      if (run.code !== 0) throw new Error(`plan --stack ${stack} exited ${run.code}:\n${run.stderr}`);
      docs[stack] = doc;
    }
  });
  return docs;
}
