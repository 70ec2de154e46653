/**
 * The on-call's command, against a deployed stack or the local run:
 *
 *   npm run ops -- <command> --stack <name> [--outputs <file>] [--json] [--yes]
 *     status
 *     dlq peek <queue> [-n N]
 *     dlq redrive <queue> [--rate N] [--cancel]
 *     quarantine list
 *     quarantine release <message-id> | --reason <R>
 *     gpu status | hold [--until <ISO time>] | release | stop | size <N>
 *
 * `--local` reads the outputs and the endpoint `npm start -- --keep` wrote for the stack
 * (.local/<stack>/ops.json). Exit codes: 0 done; 1 refused (not confirmed, a rule of the command,
 * or AWS said no); 2 bad usage or unreadable outputs. docs/operations.md has the commands and the runbooks.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline/promises";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { z } from "zod";
import { awsErrorLine, type OpsClients, opsClients } from "./aws";
import { confirm } from "./confirm";
import { cancelRedrive, DlqRefusal, type MoveTask, parseRate, peek, planRedrive, redrive } from "./dlq";
import { GpuRefusal, holdGpu, holdValue, readGpu, releaseGpu, sizeGpu, sizeRefusal, stopGpu } from "./gpu";
import { loadOutputs, OutputsError, queueNamed, regionOf, type StackOutputs } from "./outputs";
import { callerIdentity, groupByReason, QuarantineRefusal, readQuarantine, release, selectForRelease } from "./quarantine";
import { readStatus, renderStatus } from "./status";

export const OPS_OPTIONS = {
  stack: { type: "string" },
  outputs: { type: "string" },
  local: { type: "boolean" },
  endpoint: { type: "string" },
  json: { type: "boolean" },
  yes: { type: "boolean" },
  n: { type: "string", short: "n" },
  rate: { type: "string" },
  cancel: { type: "boolean" },
  until: { type: "string" },
  reason: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

export const USAGE = [
  "usage: npm run ops -- <command> --stack <name> [--outputs <file> [--endpoint <local url>] | --local] [--json] [--yes]",
  "  status",
  "  dlq peek <queue> [-n N]",
  "  dlq redrive <queue> [--rate N] [--cancel]",
  "  quarantine list",
  "  quarantine release <message-id> | --reason <R>",
  "  gpu status | hold [--until <ISO time>] | release | stop | size <N>",
].join("\n");

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export type OpsCommand =
  | { kind: "status" }
  | { kind: "dlq-peek"; queue: string; n: number }
  | { kind: "dlq-redrive"; queue: string; rate?: number; cancel: boolean }
  | { kind: "quarantine-list" }
  | { kind: "quarantine-release"; id?: string; reason?: string }
  | { kind: "gpu"; action: "status" | "hold" | "release" | "stop"; until?: string }
  | { kind: "gpu-size"; size: number };

export interface OpsArgs {
  stack: string;
  command: OpsCommand;
  outputs?: string;
  endpoint?: string;
  local: boolean;
  json: boolean;
  yes: boolean;
}

/** Pure: argv → the command, or a UsageError naming what is wrong. */
export function parseOpsArgs(argv: string[]): OpsArgs | "help" {
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPS_OPTIONS, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals: p } = parsed;
  if (v.help) return "help";
  const stack = v.stack as string | undefined;
  if (!stack) throw new UsageError("--stack <name> is required: ops never guesses which stack to act on");
  if (!/^[A-Za-z0-9_.-]+$/.test(stack)) throw new UsageError(`--stack ${stack}: not a stack name`);
  if (v.local && (v.outputs !== undefined || v.endpoint !== undefined))
    throw new UsageError("--local reads the outputs and endpoint itself: leave out --outputs and --endpoint");
  const [group, action, target, ...extra] = p;
  const only = (allowed: string[]) => {
    const given = ["n", "rate", "cancel", "until", "reason"].filter((k) => v[k] !== undefined && !allowed.includes(k));
    if (given.length > 0) throw new UsageError(`${[group, action].filter(Boolean).join(" ")}: --${given.join(", --")} does not apply`);
  };
  const noMore = (n: number) => {
    const rest = p.slice(n);
    if (rest.length > 0) throw new UsageError(`unexpected ${rest.join(" ")}`);
  };
  let command: OpsCommand;
  if (group === "status") {
    noMore(1);
    only([]);
    command = { kind: "status" };
  } else if (group === "dlq" && (action === "peek" || action === "redrive")) {
    if (!target) throw new UsageError(`dlq ${action} <queue>: name the queue (ops status lists them)`);
    if (extra.length > 0) noMore(3);
    if (action === "peek") {
      only(["n"]);
      const n = Number(v.n ?? "10");
      if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError(`-n ${String(v.n)}: a whole number from 1 to 100`);
      command = { kind: "dlq-peek", queue: target, n };
    } else {
      only(["rate", "cancel"]);
      if (v.cancel && v.rate !== undefined) throw new UsageError("--cancel and --rate: one or the other");
      let rate: number | undefined;
      try {
        rate = parseRate(v.rate as string | undefined);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      command = { kind: "dlq-redrive", queue: target, cancel: Boolean(v.cancel), ...(rate !== undefined ? { rate } : {}) };
    }
  } else if (group === "quarantine" && action === "list") {
    noMore(2);
    only([]);
    command = { kind: "quarantine-list" };
  } else if (group === "quarantine" && action === "release") {
    noMore(target === undefined ? 2 : 3);
    only(["reason"]);
    if ((target === undefined) === (v.reason === undefined)) throw new UsageError("quarantine release: give a message id or --reason <R>, one of the two");
    command = { kind: "quarantine-release", ...(target !== undefined ? { id: target } : { reason: v.reason as string }) };
  } else if (group === "gpu" && action === "size") {
    if (target === undefined) throw new UsageError("gpu size <N>: give the number of instances (0 or more)");
    noMore(3);
    only([]);
    const size = Number(target);
    if (!/^\d+$/.test(target) || !Number.isSafeInteger(size)) throw new UsageError(`gpu size ${target}: a whole number of instances, 0 or more`);
    command = { kind: "gpu-size", size };
  } else if (group === "gpu" && (action === "status" || action === "hold" || action === "release" || action === "stop")) {
    noMore(2);
    only(action === "hold" ? ["until"] : []);
    command = { kind: "gpu", action, ...(v.until !== undefined ? { until: v.until as string } : {}) };
  } else {
    throw new UsageError(`unknown command ${p.join(" ") || "(none)"}`);
  }
  return {
    stack,
    command,
    local: Boolean(v.local),
    json: Boolean(v.json),
    yes: Boolean(v.yes),
    ...(v.outputs !== undefined ? { outputs: v.outputs as string } : {}),
    ...(v.endpoint !== undefined ? { endpoint: v.endpoint as string } : {}),
  };
}

/** Where `npm start -- --keep` leaves what `--local` reads. */
export function localOpsFile(stack: string, root: string = path.resolve(__dirname, "..")): string {
  return path.join(root, ".local", stack, "ops.json");
}

const localOpsSchema = z.object({ outputs: z.string().min(1), endpoint: z.string().url() });

export interface OpsIo {
  out: (text: string) => void;
  err: (text: string) => void;
  tty: boolean;
  ask: (question: string) => Promise<string>;
}

/** Runs one command; resolves to the exit code. Everything it prints goes through `io`. */
export async function runOps(argv: string[], io: OpsIo): Promise<number> {
  let args: OpsArgs | "help";
  try {
    args = parseOpsArgs(argv);
  } catch (err) {
    io.err(`ops: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (args === "help") {
    io.out(`${USAGE}\n`);
    return 0;
  }
  let outputs: StackOutputs;
  let endpoint = args.endpoint;
  try {
    let file = args.outputs;
    if (args.local) {
      const where = localOpsFile(args.stack);
      if (!fs.existsSync(where)) throw new OutputsError(`--local: no ${where}; start the local platform with \`npm start -- --stack ${args.stack} --keep\``);
      const local = localOpsSchema.parse(JSON.parse(fs.readFileSync(where, "utf8")));
      file = local.outputs;
      endpoint = local.endpoint;
    }
    outputs = await loadOutputs(args.stack, file);
  } catch (err) {
    io.err(`ops: ${(err as Error).message}\n`);
    return 2;
  }
  const clients = opsClients(regionOf(outputs), endpoint);
  try {
    return await dispatch(args, outputs, clients, io);
  } catch (err) {
    const refusal = [DlqRefusal, GpuRefusal, QuarantineRefusal, OutputsError].some((k) => err instanceof k);
    io.err(`ops: ${refusal ? (err as Error).message : awsErrorLine(err)}\n`);
    return 1;
  } finally {
    for (const c of Object.values(clients)) c.destroy();
  }
}

async function dispatch(args: OpsArgs, outputs: StackOutputs, c: OpsClients, io: OpsIo): Promise<number> {
  const cmd = args.command;
  const json = (doc: unknown) => io.out(`${JSON.stringify(doc, null, 2)}\n`);
  /** Asks before a change; false (and why, on stderr) when it may not go ahead. */
  const mayAct = async (action: string): Promise<boolean> => {
    const answer = await confirm({ action, stack: args.stack, yes: args.yes, tty: io.tty, ask: io.ask });
    if (!answer.go) io.err(`ops: ${answer.why}; nothing changed\n`);
    return answer.go;
  };
  switch (cmd.kind) {
    case "status": {
      const report = await readStatus(c, args.stack, outputs);
      if (args.json) json(report);
      else io.out(`${renderStatus(report)}\n`);
      return 0;
    }
    case "dlq-peek": {
      const q = queueNamed(outputs, cmd.queue, ["dlq", "quarantine", "schedule-dlq"]);
      // A peek is a receive: on a DLQ that code consumes, it raises counts the consumer acts on.
      if (q.consumed) {
        io.err(`ops: ${q.name} is consumed (its consumer reads it as work); a peek raises each message's receive count\n`);
        if (!(await mayAct(`peek at ${q.name}, which its consumer reads`))) return 1;
      }
      const messages = await peek(c, outputs, q, cmd.n);
      if (args.json) json({ queue: q.name, messages });
      else {
        io.out(`${q.name}: ${messages.length} message(s) (a peek is a receive: each count went up by one)\n`);
        for (const m of messages) {
          io.out(
            `- ${m.messageId}  received ${m.receiveCount}×, first ${m.firstReceivedAt ?? "–"}, sent ${m.sentAt ?? "–"}\n    why: ${m.why}\n    body: ${m.body.slice(0, 200)}\n`,
          );
        }
      }
      return 0;
    }
    case "dlq-redrive": {
      const q = queueNamed(outputs, cmd.queue, ["dlq", "quarantine", "schedule-dlq"]);
      if (cmd.cancel) {
        if (!(await mayAct(`cancel the move task on ${q.name}`))) return 1;
        const t = await cancelRedrive(c, q);
        io.out(`${q.name}: cancelling; ${t.moved} of ${t.toMove ?? "?"} moved stay moved\n`);
        return 0;
      }
      const plan = await planRedrive(c, outputs, q);
      if (plan.depth === 0) {
        io.out(`${q.name} is empty: nothing to redrive\n`);
        return 0;
      }
      const rate = cmd.rate !== undefined ? ` at most ${cmd.rate}/s` : "";
      if (!(await mayAct(`move ${plan.depth} message(s) from ${q.name} back to ${plan.source}${rate}`))) return 1;
      const show = (t: MoveTask) => {
        if (!args.json) io.err(`  ${t.status}: ${t.moved} of ${t.toMove ?? "?"} moved\n`);
      };
      const t = await redrive(c, q, plan.destination, { ...(cmd.rate !== undefined ? { rate: cmd.rate } : {}), progress: show });
      if (args.json) json({ queue: q.name, source: plan.source, task: t });
      else io.out(`${q.name} → ${plan.source}: ${t.status}, ${t.moved} of ${t.toMove ?? "?"} moved${t.failureReason ? ` (${t.failureReason})` : ""}\n`);
      return t.status === "COMPLETED" ? 0 : 1;
    }
    case "quarantine-list": {
      const groups = groupByReason(await readQuarantine(c, outputs));
      if (args.json) json({ reasons: groups });
      else {
        if (groups.length === 0) io.out("quarantine is empty\n");
        for (const g of groups)
          io.out(`${String(g.count).padStart(5)}  ${g.reason}\n       e.g. ${g.example.messageId} (${g.example.queue}): ${g.example.body.slice(0, 160)}\n`);
      }
      return 0;
    }
    case "quarantine-release": {
      const chosen = selectForRelease(await readQuarantine(c, outputs), cmd.id !== undefined ? { id: cmd.id } : { reason: cmd.reason ?? "" });
      if (!(await mayAct(`resend ${chosen.length} quarantined message(s) to their source queue`))) return 1;
      const who = await callerIdentity(c);
      const released = await release(c, outputs, chosen, who);
      // The log of who released what: one line each, on stderr (kept apart from --json's document).
      for (const r of released) io.err(`ops: released ${r.messageId} from ${r.from} to ${r.to} as ${r.newMessageId}, by ${r.releasedBy}\n`);
      if (args.json) json({ released });
      else io.out(`released ${released.length} message(s)\n`);
      return 0;
    }
    case "gpu-size": {
      const view = await readGpu(c, outputs);
      const why = sizeRefusal(view, outputs.opsGpu.holdTag, cmd.size);
      if (why) throw new GpuRefusal(why);
      if (!(await mayAct(`set the GPU group ${view.target}'s desired capacity to ${cmd.size} (now ${view.capacity?.desired ?? "?"})`))) return 1;
      await sizeGpu(c, outputs, view, cmd.size);
      const after = await readGpu(c, outputs);
      if (args.json) json(after);
      else {
        io.out(`gpu (${after.mode}) ${after.summary}\n`);
        // Auto Scaling keeps the size; the scaler does not: a working scaler sizes the group to the
        // backlog again at its next tick (docs/operations.md#ingest-gpu-scaler-dlq-depth).
        io.err(
          "ops: the scaler sizes the group to the backlog at its next tick and may undo this; docs/operations.md#ingest-gpu-scaler-dlq-depth says how to keep it\n",
        );
      }
      return 0;
    }
    case "gpu": {
      const view = await readGpu(c, outputs);
      if (cmd.action === "status") {
        if (args.json) json(view);
        else io.out(`gpu (${view.mode}) ${view.summary}\n`);
        return 0;
      }
      if (cmd.action === "hold") {
        const value = holdValue(cmd.until, Date.now());
        if (!(await mayAct(`hold the GPU ${view.target} on (${outputs.opsGpu.holdTag}=${value})`))) return 1;
        await holdGpu(c, outputs, value);
      } else if (cmd.action === "release") {
        if (view.hold === null) {
          io.out(`gpu ${view.target}: no hold to release\n`);
          return 0;
        }
        if (!(await mayAct(`release the hold on the GPU ${view.target}`))) return 1;
        await releaseGpu(c, outputs);
      } else {
        if (view.holdActive) throw new GpuRefusal(`the GPU is held (${outputs.opsGpu.holdTag}=${view.hold}): \`ops gpu release\` first`);
        if (!(await mayAct(`stop the GPU ${view.target}${view.mode === "fleet" ? " (desired capacity 0)" : ""}`))) return 1;
        await stopGpu(c, outputs, view);
      }
      const after = await readGpu(c, outputs);
      if (args.json) json(after);
      else io.out(`gpu (${after.mode}) ${after.summary}\n`);
      return 0;
    }
  }
}

async function main(): Promise<number> {
  const tty = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  const ask = async (question: string) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  };
  return runOps(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), tty, ask });
}

if (require.main === module) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`ops: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
