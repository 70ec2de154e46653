/**
 * `npm run chaos`: the whole platform on moto with faults injected into the calls its code makes,
 * driven by generated traffic, every message checked against a ledger of side effects.
 *
 *   npm run chaos -- [options]   (CHAOS_USAGE below lists them, with their defaults)
 *
 * --seeds runs once per seed, one after another, each on a fresh platform (`.local/chaos-<stack>-seed-<n>`):
 * a comma-separated list, or a count of seeds from --seed on (`--seeds 5` is seeds 1–5). One
 * seed fixes the traffic and the faults drawn, not the interleaving of calls, so several show more.
 *
 * --crash-rate: per AWS call a process makes mid-work (a Lambda invocation, a worker task's job, a
 * GPU gateway's request; never a poll), the chance that the process is killed with SIGKILL right
 * after the call reached AWS, before its answer: it dies between two side effects. Seeded like the
 * faults. The Lambda host then starts a fresh sandbox, the worker service a fresh task, the instance
 * a fresh gateway; each kill is journalled with the faults.
 *
 * --worker-tasks: the worker service's tasks (3, the dev stack's maximum): 5 % of the worker's
 * jobs each run four heartbeats, and one task's two slots would take the run's whole wall time.
 *
 * --speed 20, not npm start's 60: SQS timers run sped up while Lambda invocations, SDK retries
 * and injected latency take real time, and at 60 the shortest visibility timeout (180 s) is 3 real
 * seconds, short enough for a slowed invocation to see its batch handed to a second one: a
 * duplicate the run would make, not the platform. At 20 it is 9 s.
 *
 * With --json, run `npm run -s chaos`: npm prints its script banner to stdout otherwise.
 * Exit codes: 0 nothing lost, duplicated or leaked and no worker job run twice, at every seed, each drained in its settle time; 1
 * something was, or a seed did not drain (inconclusive), at some seed; 2 a run could not start. With --json, stdout holds only the
 * summary document (totals, faults, and each seed's totals, byConsumer and faults); progress goes to stderr.
 */
import * as path from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { flushAndExit } from "../../functions/shared/exit";
import { spawn } from "node:child_process";
import { anyFailed, renderSeeds, renderSummary, type RunsDocument, runsDocument, type SeedRun, seedRun } from "./report";
import { type ChaosOptions, chaosWorkDir, runChaos } from "./run";

export const CHAOS_OPTIONS = {
  messages: { type: "string", default: "10000" },
  "fault-rate": { type: "string", default: "0.1" },
  "crash-rate": { type: "string", default: "0" },
  seed: { type: "string", default: "1" },
  seeds: { type: "string" },
  speed: { type: "string", default: "20" },
  stack: { type: "string", default: "dev" },
  "settle-seconds": { type: "string" },
  claimers: { type: "string", default: "4" },
  "worker-tasks": { type: "string", default: "3" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

export const CHAOS_USAGE =
  "usage: npm run chaos -- [--messages 10000] [--fault-rate 0.1] [--crash-rate 0] [--seed 1] [--seeds 1,2,3 | --seeds <count>] [--speed 20] [--stack dev] [--settle-seconds <s>] [--claimers 4] [--worker-tasks 3] [--json] [-h|--help]";

const MAX_SEED = 2 ** 31 - 1;
/** More seeds than this in one run is a mistake (each is minutes). */
const MAX_SEEDS = 100;

/** The run's options as parsed (ChaosOptions without where it writes), and `seeds`: those to run, in order ([seed] without --seeds). */
export type ChaosArgs = Required<Omit<ChaosOptions, "workDir" | "note">> & { seeds: number[]; json: boolean };

/** Pure: `--seeds` as a list (`1,2,11`) or a count of seeds from `first` on (`5`). */
export function parseSeeds(raw: string, first: number): number[] {
  const integer = (text: string, min: number, max: number): number => {
    const n = Number(text);
    if (text.trim() === "" || !Number.isInteger(n) || n < min || n > max)
      throw new Error(`--seeds ${raw}: ${JSON.stringify(text)} must be an integer from ${min} to ${max}`);
    return n;
  };
  if (!raw.includes(",")) {
    const count = integer(raw, 1, MAX_SEEDS);
    if (first + count - 1 > MAX_SEED) throw new Error(`--seeds ${raw}: seeds from ${first} would pass ${MAX_SEED}`);
    return Array.from({ length: count }, (_, i) => first + i);
  }
  const seeds = raw.split(",").map((t) => integer(t, 0, MAX_SEED));
  if (new Set(seeds).size !== seeds.length) throw new Error(`--seeds ${raw}: a seed is listed twice`);
  if (seeds.length > MAX_SEEDS) throw new Error(`--seeds ${raw}: at most ${MAX_SEEDS} seeds`);
  return seeds;
}

/** Pure: argv → validated arguments, or an Error naming the flag. */
export function parseChaosArgs(argv: string[]): ChaosArgs | "help" {
  const { values } = parseArgs({ args: argv, options: CHAOS_OPTIONS, strict: true });
  if (values.help) return "help";
  const number = (flag: keyof typeof CHAOS_OPTIONS, min: number, max: number, integer = false): number => {
    const raw = String(values[flag]);
    const n = Number(raw);
    if (raw === "" || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n)))
      throw new Error(`--${flag} ${raw}: must be ${integer ? "an integer" : "a number"} from ${min} to ${max}`);
    return n;
  };
  const stack = String(values.stack);
  if (!/^[A-Za-z0-9_.-]+$/.test(stack)) throw new Error(`--stack ${stack}: not a stack name`);
  const messages = number("messages", 16, 1_000_000, true);
  const seed = number("seed", 0, MAX_SEED, true);
  const faultRate = number("fault-rate", 0, 1);
  return {
    messages,
    faultRate,
    crashRate: number("crash-rate", 0, 1),
    seed,
    seeds: values.seeds === undefined ? [seed] : parseSeeds(String(values.seeds), seed),
    speed: number("speed", 1, 3600),
    stack,
    settleSeconds: values["settle-seconds"] === undefined ? defaultSettleSeconds(messages, faultRate) : number("settle-seconds", 1, 86_400),
    claimers: number("claimers", 1, 50, true),
    workerTasks: number("worker-tasks", 1, 10, true),
    json: Boolean(values.json),
  };
}

/**
 * The longest a seed waits, after its last send, for every message to be judged. It is a cap, not a
 * wait: a seed stops as soon as its queues have drained, so a generous cap costs a healthy run
 * nothing and only delays the verdict on a stuck one, while a tight cap turns a slow drain into an
 * INCONCLUSIVE seed. Draining takes about a second per 20 messages on moto, plus room for retries
 * and parks; each injected fault costs a receive its backoff and, for the worker, a heartbeat, so
 * the cap grows with the fault rate. Measured on 2 cores at 10,000 messages: 30 % seeds drained in
 * 850-1,400 s of wall time, which the old flat cap (1,120 s) cut short on a loaded machine.
 */
export function defaultSettleSeconds(messages: number, faultRate: number): number {
  return Math.round((120 + messages / 10) * (1 + 4 * faultRate));
}

async function main(argv: string[]): Promise<number> {
  let args: ChaosArgs | "help";
  try {
    args = parseChaosArgs(argv);
  } catch (err) {
    process.stderr.write(`chaos: ${(err as Error).message}\n${CHAOS_USAGE}\n`);
    return 2;
  }
  if (args === "help") {
    process.stdout.write(`${CHAOS_USAGE}\n`);
    return 0;
  }
  const out = args.json ? process.stderr : process.stdout;
  if (args.seeds.length === 1) return runOne(args, args.seeds[0] ?? args.seed, out);
  // The program deploys into moto once per process (pulumi's mocks are global): one child per seed.
  const runs: SeedRun[] = [];
  let code = 0;
  for (const seed of args.seeds) {
    const child = await runChild(args, seed, out);
    if (child.run) runs.push(child.run);
    if (child.code === 2 || !child.run) {
      process.stderr.write(`chaos: the run at seed ${seed} failed (exit ${child.code}); the seeds after it were not run\n`);
      code = 2;
      break;
    }
  }
  out.write(`\n${renderSeeds(runs, args)}\n`);
  if (args.json) process.stdout.write(`${JSON.stringify(runsDocument(runs), null, 2)}\n`);
  return code !== 0 ? code : anyFailed(runs) ? 1 : 0;
}

/** One seed in this process: its table, and with --json the document of a run of one seed. */
async function runOne(args: ChaosArgs, seed: number, out: NodeJS.WritableStream): Promise<number> {
  const workDir = chaosWorkDir(args.stack, seed);
  let result;
  try {
    result = await runChaos({ ...args, seed, workDir, note: (line) => out.write(`${line}\n`) });
  } catch (err) {
    const e = err as Error;
    process.stderr.write(`chaos: the run failed: ${e.stack ?? e.message}\n`);
    return 2;
  }
  out.write(`\n${renderSummary(result, { ...args, seed })}\n`);
  out.write(`logs: ${path.relative(process.cwd(), path.join(workDir, "logs"))}/, faults: ${path.relative(process.cwd(), `${workDir}-faults.jsonl`)}\n`);
  const run = seedRun(seed, result);
  if (args.json) process.stdout.write(`${JSON.stringify(runsDocument([run]), null, 2)}\n`);
  return anyFailed([run]) ? 1 : 0;
}

/** One seed in a child process (this CLI, --seed and --json): its progress and table to `out`, its document back. */
function runChild(args: ChaosArgs, seed: number, out: NodeJS.WritableStream): Promise<{ code: number; run?: SeedRun }> {
  // Every flag with a value as this run read it (--seed the child's own), camelCased into ChaosArgs.
  const valued = Object.keys(CHAOS_OPTIONS).filter((flag) => !["seeds", "json", "help"].includes(flag));
  const value = (flag: string) => (flag === "seed" ? seed : args[flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as keyof ChaosArgs]);
  const argv = [...valued.flatMap((flag) => [`--${flag}`, String(value(flag))]), "--json"];
  const child = spawn(process.execPath, [...process.execArgv, __filename, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
  const stdout: Buffer[] = [];
  child.stdout.on("data", (c: Buffer) => stdout.push(c));
  child.stderr.on("data", (c: Buffer) => out.write(c));
  return new Promise((resolve) => {
    child.once("error", () => resolve({ code: 2 }));
    child.once("close", (code) => {
      let run: SeedRun | undefined;
      try {
        run = (JSON.parse(Buffer.concat(stdout).toString("utf8")) as RunsDocument).seeds[0];
      } catch {
        run = undefined;
      }
      resolve({ code: code ?? 2, ...(run ? { run } : {}) });
    });
  });
}

if (require.main === module) {
  main(process.argv.slice(2)).then(flushAndExit, (err: unknown) => {
    process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
    flushAndExit(2);
  });
}
