import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import type { PlanDocument } from "../../../plan/render";

export interface PlanRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the offline plan exactly as `npm run plan -- …` does, in its own process. */
export function runPlan(args: string[]): PlanRun {
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "plan/cli.ts"), ...args], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function planJson(stack: string, extra: string[] = []): { run: PlanRun; doc: PlanDocument } {
  const run = runPlan(["--stack", stack, "--json", ...extra]);
  let doc: PlanDocument;
  try {
    doc = JSON.parse(run.stdout) as PlanDocument;
  } catch {
    throw new Error(`plan --json did not print JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  return { run, doc };
}

const stackPlans = new Map<string, { run: PlanRun; doc: PlanDocument }>();

/**
 * The plan of a committed stack, run once per test process: every part's mocks test reads the
 * same dev and prod plans, and each run costs seconds. Callers must not mutate the document.
 */
export function stackPlan(stack: string): { run: PlanRun; doc: PlanDocument } {
  let plan = stackPlans.get(stack);
  if (!plan) {
    plan = planJson(stack);
    stackPlans.set(stack, plan);
  }
  return plan;
}
