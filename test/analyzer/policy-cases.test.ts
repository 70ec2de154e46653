/**
 * Every view the rule tests (test/policy/rules) judge as the state after a deploy, judged again by the
 * real engine's analyzer: the rule tests run once with POLICY_CASE_LOG set, each `evaluate` logs its
 * view and the offline verdict (test/policy/helpers/case-log.ts), and the views go into few stack
 * exports (helpers/cases.ts) for `pulumi policy analyze --file`. Both verdicts must be the same
 * (policy, resource, level) lists.
 *
 * Not replayed: first-preview cases (a first preview has no state to export; its unknowns exist only
 * in the engine's requests) and cases with stack tags (`policy analyze --file` has no stack, so no tags).
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  type Batch,
  type Case,
  analyzerMessages,
  analyzerVerdict,
  batchExport,
  batches,
  expectSameVerdict,
  offlineMessages,
  offlineVerdict,
  recordedUrns,
  replayable,
} from "./helpers/cases";
import { type Cli, ROOT, analyze, cliOrSkip, writeJson } from "./helpers/cli";
import type { LoggedCase } from "../policy/helpers/case-log";

/** Cases per analyze run: each run costs about 2.5 s whatever its size, the offline check of a merge grows with it. */
const BATCH_SIZE = 60;

function captureRuleTests(log: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const mocha = path.join(ROOT, "node_modules", ".bin", "mocha");
    const child = spawn(mocha, ["--import=tsx", "--require", "test/analyzer/helpers/case-hooks.ts", "--reporter", "dot", "test/policy/rules/**/*.test.ts"], {
      cwd: ROOT,
      env: { ...process.env, POLICY_CASE_LOG: log },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`the rule tests failed (exit ${code}):\n${stderr}`))));
  });
}

describe("analyzer tier: the rule tests' cases under the real Pulumi CLI", function () {
  this.timeout(600_000);
  let cli: Cli;
  let cases: Case[] = [];
  let runs: Batch[] = [];

  before(async function () {
    cli = cliOrSkip(this);
    const log = path.join(cli.scratch, "cases.jsonl");
    await captureRuleTests(log);
    const logged = fs
      .readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as LoggedCase);
    cases = replayable(logged);
    runs = await batches(cases, "c", BATCH_SIZE);
  });

  it("replays most of the rule tests' cases, in a handful of analyze runs", () => {
    // Assess: the capture worked (a broken log would make the comparison below vacuous).
    expect(cases.length).to.be.greaterThan(150);
    expect(runs.length).to.be.lessThan(30);
    process.stdout.write(`      ${cases.length} distinct cases in ${runs.length} analyze runs\n`);
  });

  it("the real analyzer's verdict on every replayed case is the offline evaluator's: same policies, resources and levels", async () => {
    // Act: the runs two at a time (the language host compiles the pack once per run).
    const results: Array<{ batch: Batch; real: string[]; expected: string[]; realMessages: string[]; expectedMessages: string[] }> = [];
    const queue = runs.map((b, i) => ({ b, i }));
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const file = writeJson(cli, `cases-${next.i}.json`, batchExport(next.b));
        const run = await analyze(cli, file, next.b.config);
        const violations = recordedUrns(
          run.violations,
          next.b.cases.map((c) => c.view),
        );
        results.push({
          batch: next.b,
          real: analyzerVerdict(violations),
          expected: await offlineVerdict(next.b),
          realMessages: analyzerMessages(violations),
          expectedMessages: await offlineMessages(next.b),
        });
      }
    };
    await Promise.all([worker(), worker()]);
    // Assess
    for (const r of results) expectSameVerdict(r.batch, r.real, r.expected);
    for (const r of results) expectSameVerdict(r.batch, r.realMessages, r.expectedMessages);
  });
});
