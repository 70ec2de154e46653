/**
 * `npm run chaos`: the whole platform on moto with faults injected into the calls its code makes,
 * driven by generated traffic, every message checked against a ledger of side effects.
 *
 *   npm run chaos -- [--messages 10000] [--fault-rate 0.1] [--seed 1] [--speed 20] [--stack dev]
 *                    [--settle-seconds <s>] [--claimers 4] [--json] [-h|--help]
 *
 * --speed 20, not npm start's 60: SQS timers run sped up while Lambda invocations, SDK retries
 * and injected latency take real time, and at 60 the shortest visibility timeout (180 s) is 3 real
 * seconds, short enough for a slowed invocation to see its batch handed to a second one: a
 * duplicate the run would make, not the platform. At 20 it is 9 s.
 *
 * Exit codes: 0 nothing lost, duplicated or leaked; 1 something was; 2 the run could not start.
 * With --json, stdout holds only the summary document; progress goes to stderr.
 */
import * as path from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { flushAndExit } from "../../functions/shared/exit";
import { failed } from "./ledger";
import { renderSummary, summaryDocument } from "./report";
import { chaosWorkDir, runChaos } from "./run";

export const CHAOS_OPTIONS = {
  messages: { type: "string", default: "10000" },
  "fault-rate": { type: "string", default: "0.1" },
  seed: { type: "string", default: "1" },
  speed: { type: "string", default: "20" },
  stack: { type: "string", default: "dev" },
  "settle-seconds": { type: "string" },
  claimers: { type: "string", default: "4" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

export const CHAOS_USAGE =
  "usage: npm run chaos -- [--messages 10000] [--fault-rate 0.1] [--seed 1] [--speed 20] [--stack dev] [--settle-seconds <s>] [--claimers 4] [--json] [-h|--help]";

export interface ChaosArgs {
  messages: number;
  faultRate: number;
  seed: number;
  speed: number;
  stack: string;
  settleSeconds: number;
  claimers: number;
  json: boolean;
}

/** Pure: argv → validated arguments, or an Error naming the flag. */
export function parseChaosArgs(argv: string[]): ChaosArgs | "help" {
  const { values } = parseArgs({ args: argv, options: CHAOS_OPTIONS, strict: true });
  if (values.help) return "help";
  const number = (flag: keyof typeof CHAOS_OPTIONS, min: number, max: number, integer = false): number => {
    const raw = String(values[flag]);
    const n = Number(raw);
    if (raw === "" || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) throw new Error(`--${flag} ${raw}: must be ${integer ? "an integer" : "a number"} from ${min} to ${max}`);
    return n;
  };
  const stack = String(values.stack);
  if (!/^[A-Za-z0-9_.-]+$/.test(stack)) throw new Error(`--stack ${stack}: not a stack name`);
  const messages = number("messages", 16, 1_000_000, true);
  return {
    messages,
    faultRate: number("fault-rate", 0, 1),
    seed: number("seed", 0, 2 ** 31 - 1, true),
    speed: number("speed", 1, 3600),
    stack,
    // Draining takes about a second per 20 messages on moto; leave room for retries and parks.
    settleSeconds: values["settle-seconds"] === undefined ? Math.round(120 + messages / 10) : number("settle-seconds", 1, 86_400),
    claimers: number("claimers", 1, 50, true),
    json: Boolean(values.json),
  };
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
  const workDir = chaosWorkDir(args.stack);
  let result;
  try {
    result = await runChaos({ ...args, workDir, note: (line) => out.write(`${line}\n`) });
  } catch (err) {
    const e = err as Error;
    process.stderr.write(`chaos: the run failed: ${e.stack ?? e.message}\n`);
    return 2;
  }
  out.write(`\n${renderSummary(result, args)}\n`);
  out.write(`logs: ${path.relative(process.cwd(), path.join(workDir, "logs"))}/, faults: ${path.relative(process.cwd(), `${workDir}-faults.jsonl`)}\n`);
  if (args.json) process.stdout.write(`${JSON.stringify(summaryDocument(result), null, 2)}\n`);
  return failed(result.totals) ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(flushAndExit, (err: unknown) => {
    process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
    flushAndExit(2);
  });
}
