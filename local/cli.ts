/**
 * The main job on the embedded default: the whole platform on moto, deployed from the Pulumi
 * program itself, driven by scenarios. Its flags: USAGE below.
 *
 * --keep: after the scenarios (only those named: with --keep none run by default) the platform
 * stays up for `npm run ops -- <command> --stack <name> --local` until Ctrl-C.
 *
 * Exit codes: 0 every message accounted for and every scenario's expectations held (alarms that
 * would have fired are reported, not failed on: scenarios quarantine messages on purpose); 1 a
 * message was lost or an expectation failed, or the report could not be written; 2 the run could
 * not start (bad arguments or config, no Python, no directory for the report).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { flushAndExit } from "../functions/shared/exit";
import { REPO_ROOT } from "../infra/bundle";
import { RUNTIME as LAMBDA_RUNTIME } from "./hosts/lambda-host";
import { keepForOps } from "./ops-endpoint";
import { LocalPlatform } from "./platform";
import { buildReportData, renderReport } from "./show/report";
import { SCENARIOS } from "./scenarios";
import { newRunId, type ScenarioSize, unavailableReason } from "./scenarios/scenario";
import type { AlarmReport } from "./observe/alarm-watch";
import { renderAlarmReport, renderSummaryTable, summaryDocument } from "./show/summary";
import { type LiveSnapshot, LiveView, type ScenarioSummary } from "./show/view";

/** Every flag `parseRunArgs` accepts (the usage text must name each one; a test checks). */
export const RUN_OPTIONS = {
  stack: { type: "string", default: "dev" },
  scenario: { type: "string", multiple: true },
  speed: { type: "string", default: "60" },
  size: { type: "string", default: "default" },
  "no-tty": { type: "boolean" },
  json: { type: "boolean" },
  "gpu-boot-seconds": { type: "string", default: "90" },
  "task-seconds": { type: "string", default: "300" },
  "gpu-window-seconds": { type: "string", default: "8" },
  "gpu-slots": { type: "string", default: "2" },
  report: { type: "string" },
  keep: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

export const USAGE =
  "usage: npm start -- [--stack dev] [--scenario <name>]... [--speed <n>] [--size small|default] [--gpu-boot-seconds <s>] [--task-seconds <s>] [--gpu-window-seconds <s>] [--gpu-slots <n>] [--no-tty] [--json] [--report <file.html>] [--keep] [-h|--help]";

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The arguments of a run, validated. */
export type RunArgs = Exclude<ReturnType<typeof parseRunArgs>, "help">;

/** Pure: argv → validated arguments, or a UsageError naming the flag. */
export function parseRunArgs(argv: string[], isTty: boolean) {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: RUN_OPTIONS, strict: true }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return "help";
  const number = (flag: string, min: number, max: number): number => {
    const raw = String(values[flag]);
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${flag} ${raw}: must be a number from ${min} to ${max}`);
    return n;
  };
  const size = String(values.size);
  if (size !== "small" && size !== "default") throw new UsageError(`--size ${size}: must be small or default`);
  const known = SCENARIOS.map((s) => s.name);
  // Opt-in scenarios (gpu-idle) run only when named.
  // With --keep the platform is for the operator: only named scenarios run first.
  const scenarios = (values.scenario as string[] | undefined) ?? (values.keep ? [] : SCENARIOS.filter((s) => !s.optIn).map((s) => s.name));
  for (const s of scenarios) if (!known.includes(s)) throw new UsageError(`--scenario ${s}: unknown (have: ${known.join(", ")})`);
  const stack = String(values.stack);
  if (!/^[A-Za-z0-9_.-]+$/.test(stack)) throw new UsageError(`--stack ${stack}: not a stack name`);
  const report = values.report === undefined ? undefined : String(values.report);
  if (report !== undefined && (report === "" || report.endsWith("/"))) throw new UsageError(`--report ${report}: must name a file, e.g. run.html`);
  return {
    stack,
    scenarios,
    /** The scenarios were named with --scenario: one that cannot run here is then a failure, not a skip. */
    named: values.scenario !== undefined,
    speed: number("speed", 1, 3600),
    size: size as ScenarioSize,
    // --json keeps stdout for the document; the live view then goes to stderr, in plain lines.
    tty: isTty && !values["no-tty"] && !values.json,
    json: Boolean(values.json),
    gpuBootSeconds: number("gpu-boot-seconds", 0, 3600),
    taskSeconds: number("task-seconds", 1, 86_400),
    /** The GPU fleet's instances (fleet mode): simulated seconds one window takes, and windows worked on at once. */
    gpuWindowSeconds: number("gpu-window-seconds", 0, 3600),
    gpuSlots: Math.floor(number("gpu-slots", 1, 1024)),
    /** Where to write the HTML report (absolute); absent when not asked for. */
    ...(report !== undefined ? { report: path.resolve(report) } : {}),
    /** Stay up for `npm run ops` after the scenarios. */
    ...(values.keep ? { keep: true } : {}),
  };
}

async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parseRunArgs>;
  try {
    args = parseRunArgs(argv, Boolean(process.stderr.isTTY));
  } catch (err) {
    process.stderr.write(`start: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (args === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Checked now, not after minutes of running: the report is written at the end.
  if (args.report !== undefined && !fs.existsSync(path.dirname(args.report))) {
    process.stderr.write(`start: --report ${args.report}: no directory ${path.dirname(args.report)}\n`);
    return 2;
  }
  const out = args.json ? process.stderr : process.stdout;
  const view = new LiveView({ tty: args.tty, stream: out, color: args.tty });
  const note = (line: string) => view.note(line);
  showWarningsAsNotes(note);
  note(nodeNote());
  const started = Date.now();

  const platform = await startPlatform(args, view);
  if (platform === undefined) return 2;
  let rows: ScenarioSummary[];
  try {
    rows = await runScenarios(platform, args, view);
    if (args.keep) await keepForOps(platform, path.join(REPO_ROOT, ".local", args.stack), note);
  } finally {
    view.stop();
    await platform.stop();
  }

  const alarms = platform.alarms.report();
  const doc = summaryDocument({ project: platform.topology.project, stack: args.stack, speed: args.speed, wallMs: Date.now() - started }, rows, alarms);
  out.write(`\n${renderSummaryTable(rows, { color: args.tty })}\n`);
  out.write(`${renderAlarmReport(alarms, { color: args.tty })}\n`);
  out.write(`logs: ${path.relative(process.cwd(), path.join(REPO_ROOT, ".local", args.stack, "logs"))}/\n`);
  const reported =
    args.report === undefined || writeReport(args.report, platform, rows, alarms, { stack: args.stack, speed: args.speed, wallMs: doc.wallMs }, out);
  if (args.json) process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  return doc.ok && reported ? 0 : 1;
}

/** Writes the HTML report of the run; false (and why, on `out`) when it could not. */
function writeReport(
  file: string,
  platform: LocalPlatform,
  rows: ScenarioSummary[],
  alarms: AlarmReport,
  meta: { stack: string; speed: number; wallMs: number },
  out: NodeJS.WritableStream,
): boolean {
  try {
    const data = buildReportData({
      meta: { project: platform.topology.project, ...meta, generatedAt: new Date() },
      rows,
      recorded: platform.recorder.recorded(),
      queues: platform.topology.queues,
      alarms,
      clockT0Ms: platform.clock.t0,
    });
    fs.writeFileSync(file, renderReport(data));
    const relative = path.relative(process.cwd(), file);
    out.write(`report: ${relative.startsWith("..") ? file : relative}\n`);
    return true;
  } catch (err) {
    out.write(`start: the report could not be written to ${file}: ${(err as Error).message}\n`);
    return false;
  }
}

/**
 * Node prints process warnings straight to stderr, through the live view. The AWS SDK's
 * ten-line Node-version notice (only below Node 22, which `npm start` avoids) becomes one line;
 * every other warning is still shown.
 */
function showWarningsAsNotes(note: (line: string) => void): void {
  process.removeAllListeners("warning");
  process.on("warning", (w) =>
    note(
      `${w.name} ${w.message}`.includes("NodeVersionSupportWarning")
        ? `warning: the AWS SDK will require Node ≥ 22 from January 2027 (running ${process.version})`
        : `warning: ${w.name}: ${w.message}`,
    ),
  );
}

/**
 * Which Node runs the platform. The Lambda sandboxes are worker_threads of this process, so this is
 * also the Node they run on; it should be the major of the Lambdas' runtime (`npm start` sees to
 * that through scripts/with-node.sh).
 */
export function nodeNote(version: string = process.version): string {
  const major = (v: string) => Number(/\d+/.exec(v)?.[0]);
  return major(version) === major(LAMBDA_RUNTIME)
    ? `running on Node ${version}, as the Lambdas (${LAMBDA_RUNTIME})`
    : `running on Node ${version}; the Lambdas run ${LAMBDA_RUNTIME}, so the local sandboxes differ from them`;
}

/** The platform, or undefined when it could not start (the reason is on stderr). */
async function startPlatform(args: RunArgs, view: LiveView): Promise<LocalPlatform | undefined> {
  try {
    return await LocalPlatform.start({
      stack: args.stack,
      speed: args.speed,
      workDir: path.join(REPO_ROOT, ".local", args.stack),
      gpuBootSimMs: args.gpuBootSeconds * 1000,
      taskSimMs: args.taskSeconds * 1000,
      gpuWindowSimMs: args.gpuWindowSeconds * 1000,
      gpuSlots: args.gpuSlots,
      note: (line) => view.note(line),
    });
  } catch (err) {
    view.stop();
    const e = err as Error;
    const known = ["StackConfigError", "PlanInputError", "MotoUnavailableError"].includes(e.name);
    process.stderr.write(`start: ${known ? e.message : `the platform failed to start: ${e.stack ?? e.message}`}\n`);
    return undefined;
  }
}

/** Prepares every selected scenario, then runs them in order; Ctrl-C stops after the current one. */
async function runScenarios(platform: LocalPlatform, args: RunArgs, view: LiveView): Promise<ScenarioSummary[]> {
  const note = (line: string) => view.note(line);
  const rows: ScenarioSummary[] = [];
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    note("interrupted: finishing the current scenario's accounting, then stopping");
  };
  process.once("SIGINT", onSigint);
  const selected = args.scenarios.map((name) => SCENARIOS.find((s) => s.name === name)).filter((s) => s !== undefined);
  const context = () => ({ platform, size: args.size, runId: newRunId(), view: (s: LiveSnapshot) => view.update(s), note });
  try {
    for (const scenario of selected) {
      try {
        await scenario.prepare?.(context());
      } catch (err) {
        note(`${scenario.name}: preparation failed: ${(err as Error).message}`);
      }
    }
    for (const scenario of selected) {
      if (interrupted) break;
      const why = unavailableReason(scenario, {
        queues: platform.topology.queues.map((q) => q.logicalName),
        gpuInstance: platform.gpu !== undefined,
        gpuFleet: platform.fleet !== undefined,
      });
      if (why !== undefined) {
        // Named on the command line, it was asked for: not running it is a failure. In the default run it is skipped.
        if (args.named) rows.push(failedRun(scenario.name, 0, new Error(`cannot run on stack ${args.stack}: ${why}`)));
        else note(`skipping ${scenario.name}: ${why}`);
        continue;
      }
      note(`▶ ${scenario.name}: ${scenario.title}`);
      const t0 = Date.now();
      platform.recorder.scenarioStarted({ name: scenario.name, title: scenario.title, queues: scenario.requires }, t0);
      try {
        rows.push(await scenario.run(context()));
      } catch (err) {
        rows.push(failedRun(scenario.name, Date.now() - t0, err));
      } finally {
        platform.recorder.scenarioEnded(scenario.name);
      }
    }
  } finally {
    process.removeListener("SIGINT", onSigint);
  }
  return rows;
}

/** The summary row of a scenario that threw: nothing counted, the error as its failure. */
function failedRun(scenario: string, wallMs: number, err: unknown): ScenarioSummary {
  return {
    scenario,
    wallMs,
    sent: 0,
    processed: 0,
    quarantined: 0,
    inDlq: 0,
    remaining: 0,
    lost: 0,
    timings: {},
    details: {},
    failures: [`the scenario failed: ${(err as Error).message}`],
  };
}

if (require.main === module) {
  main(process.argv.slice(2)).then(flushAndExit, (err: unknown) => {
    process.stderr.write(`start: ${(err as Error).stack ?? String(err)}\n`);
    flushAndExit(2);
  });
}
