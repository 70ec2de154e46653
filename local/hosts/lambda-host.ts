/**
 * Runs the Lambda bundles locally, one worker_threads Worker per execution environment.
 *
 * Why workers and not a plain require(): module-scope code in a bundle reads process.env at
 * cold start (config parsing, SDK clients), and two functions with different environments
 * must not see each other's values; a Worker has its own process.env and module cache. Why
 * not child processes: a Worker starts in tens of milliseconds and can be terminated at once,
 * which is how a timeout ends a sandbox.
 *
 * Lambda's rules kept here: an idle environment is reused (warm start, module state persists);
 * concurrent invocations get separate environments; a handler that runs past the function's
 * timeout has its environment destroyed, so the next invocation is a cold start; a bundle that
 * fails to load reports an error and the environment is discarded.
 */
import { randomBytes, randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Worker } from "node:worker_threads";
import { regionOfArn } from "../../functions/shared/sqs-record";
import type { LocalFunction } from "../provision/topology-types";
import { withDeadline } from "./clock";

type ErrorInfo = { name: string; message: string };
/** What ended one invocation inside an environment. */
type Outcome = { kind: "ok"; response: unknown } | { kind: "error"; error: ErrorInfo } | { kind: "timeout" };
export type InvokeResult = Outcome & { durationMs: number };

export interface LambdaHostOptions {
  /** AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, region, dummy credentials: override the function's env for these keys. */
  awsEnv: Record<string, string>;
  /** fetch rewrite, `"10.0.1.5:8080" -> "127.0.0.1:43123"`: plays the VPC. */
  routes?: Record<string, string>;
  /** Each function's stdout/stderr is appended to `<logDir>/<logicalName>.log`. */
  logDir: string;
  /**
   * The simulated clock (`--speed`): the sandbox's `Date` reads it, so ages a function computes
   * agree with the sped-up SQS and Scheduler timers; `getRemainingTimeInMillis` is scaled too.
   */
  clock?: SandboxClock;
  /**
   * Sandboxes may be killed mid-invocation (`crash`, the chaos run's `--crash-rate`): each names the
   * invocation under way in an `x-local-invocation` header on every HTTP request it makes (the fault
   * proxy reads it to kill the sandbox that made a call), and writes its output synchronously to the
   * function's log file, so a kill loses none of the lines written before it, as on Lambda.
   */
  crashable?: boolean;
}

/** What a sandbox killed mid-invocation was doing (LambdaHost.crash). */
export interface CrashedInvocation {
  functionName: string;
  requestId: string;
  event: unknown;
  /** The sandbox's log stream: one per execution environment. */
  logStreamName: string;
  /** When the invocation would have timed out (epoch ms, real). */
  deadlineMs: number;
}

/** Simulated time = t0Ms + (real − t0Ms) × speed. */
export interface SandboxClock {
  t0Ms: number;
  speed: number;
}

export type FunctionStats = Record<"invocations" | "errors" | "timeouts" | "running" | "peakRunning" | "coldStarts", number>;

/** Lambda's init phase is capped at 10 s, whatever the function timeout. */
const INIT_TIMEOUT_MS = 10_000;
/** The runtime the bundles target (infra/bundle.ts's NODE_RUNTIME; not imported: it loads @pulumi/pulumi). */
export const RUNTIME = "nodejs22.x";
/** How long close() lets an idle sandbox flush its output before killing it. */
const SHUTDOWN_GRACE_MS = 2000;
const SANDBOX = path.join(__dirname, "lambda-sandbox.cjs");

type FromWorker =
  | { type: "ready" }
  | { type: "init-error"; error: ErrorInfo }
  | { type: "result"; id: number; ok: true; response: string }
  | { type: "result"; id: number; ok: false; error: ErrorInfo };

class Environment {
  readonly worker: Worker;
  readonly logStreamName: string;
  dead = false;
  /** Settles once: the bundle loaded, or it failed to (init error, crash during init). */
  readonly ready: Promise<ErrorInfo | null>;
  private pending?: { id: number; settle: (o: Outcome) => void };
  /** The invocation under way, if any. */
  current?: { requestId: string; event: unknown; deadlineMs: number };
  private settleReady!: (e: ErrorInfo | null) => void;

  constructor(fn: LocalFunction, env: Record<string, string>, log: fs.WriteStream, clock?: SandboxClock, crashable = false) {
    this.logStreamName = `${new Date().toISOString().slice(0, 10).replaceAll("-", "/")}/[$LATEST]${randomBytes(16).toString("hex")}`;
    this.ready = new Promise((r) => (this.settleReady = r));
    this.worker = new Worker(SANDBOX, {
      env: { ...env, AWS_LAMBDA_LOG_STREAM_NAME: this.logStreamName },
      workerData: {
        codePath: fn.codePath,
        // `index.handler` → `handler`: the module part is the bundle itself (LocalFunction.codePath).
        exportName: fn.handler.slice(fn.handler.lastIndexOf(".") + 1),
        clock: clock ?? null,
        crashable,
        logFile: crashable && typeof log.path === "string" ? log.path : null,
      },
      // The live view owns the terminal: the sandbox's output goes to the function's log file.
      stdout: true,
      stderr: true,
      // Not the host's flags: under `tsx` they would route the bundle through tsx's transformer
      // (slow for a megabyte of minified JS, and nothing Lambda's runtime does).
      execArgv: [],
    });
    this.worker.stdout.pipe(log, { end: false });
    this.worker.stderr.pipe(log, { end: false });
    this.worker.on("message", (msg: FromWorker) => this.onMessage(msg));
    this.worker.on("error", (err: Error) => this.onDeath({ name: err.name || "Error", message: err.message }));
    this.worker.on("exit", (code) => this.onDeath({ name: "Runtime.ExitError", message: `the execution environment exited (code ${code})` }));
  }

  private onMessage(msg: FromWorker): void {
    if (msg.type === "ready") this.settleReady(null);
    else if (msg.type === "init-error") this.settleReady(msg.error);
    else if (this.pending?.id === msg.id) {
      const { settle } = this.pending;
      this.pending = undefined;
      settle(msg.ok ? { kind: "ok", response: JSON.parse(msg.response) as unknown } : { kind: "error", error: msg.error });
    }
  }

  private onDeath(error: ErrorInfo): void {
    if (this.dead) return;
    this.dead = true;
    this.settleReady(error);
    const pending = this.pending;
    this.pending = undefined;
    pending?.settle({ kind: "error", error });
  }

  /** Runs the handler once; the caller enforces the timeout by terminating the worker. */
  run(id: number, event: unknown, context: Record<string, string>, deadline: number, routes: Record<string, string>): Promise<Outcome> {
    return new Promise((settle) => {
      this.pending = { id, settle };
      this.worker.postMessage({ type: "invoke", id, event: JSON.stringify(event), context, deadline, routes });
    });
  }

  /**
   * The sandbox dies mid-invocation (out of memory, a SIGKILL): stopped at once, whatever it was
   * between, and its invocation ends as Lambda reports such a death (`Runtime.ExitError`).
   */
  async crash(): Promise<void> {
    this.onDeath({ name: "Runtime.ExitError", message: "Runtime exited with error: signal: killed" });
    await this.worker.terminate();
  }

  /** Kills the sandbox at once, as Lambda does on a timeout: output still buffered in it is lost. */
  async destroy(): Promise<void> {
    this.dead = true;
    await this.worker.terminate();
  }

  /** Lets an idle sandbox flush its output and exit, then waits for that output to reach the log. */
  async shutdown(): Promise<void> {
    if (this.dead) return this.destroy();
    const ended = Promise.all([this.worker.stdout, this.worker.stderr].map((s) => new Promise((r) => (s.readableEnded ? r(null) : s.once("end", r)))));
    const exited = new Promise((r) => this.worker.once("exit", r));
    this.worker.postMessage({ type: "shutdown" });
    if ((await withDeadline(exited, SHUTDOWN_GRACE_MS)) === "timeout") await this.destroy();
    await withDeadline(ended, SHUTDOWN_GRACE_MS);
  }
}

/**
 * The environment a function's sandbox sees: its own variables, then the variables Lambda
 * reserves (a function cannot override them), then the local AWS endpoint and credentials.
 */
export function sandboxEnvironment(fn: LocalFunction, awsEnv: Record<string, string>): Record<string, string> {
  const region = awsEnv.AWS_REGION ?? regionOfArn(fn.arn);
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    LANG: "en_US.UTF-8",
    ...fn.environment,
    _HANDLER: fn.handler,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_EXECUTION_ENV: `AWS_Lambda_${RUNTIME}`,
    AWS_LAMBDA_FUNCTION_NAME: fn.name,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
    AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
    AWS_LAMBDA_FUNCTION_TIMEOUT: String(fn.timeoutSeconds),
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.name}`,
    LAMBDA_TASK_ROOT: path.dirname(fn.codePath),
    ...awsEnv,
  };
}

interface Slot {
  fn: LocalFunction;
  env: Record<string, string>;
  log: fs.WriteStream;
  idle: Environment[];
  all: Set<Environment>;
  stats: FunctionStats;
}

export class LambdaHost {
  private readonly slots = new Map<string, Slot>();
  private routes: Record<string, string>;
  private nextId = 1;
  private closed = false;

  constructor(
    functions: LocalFunction[],
    private readonly opts: LambdaHostOptions,
  ) {
    this.routes = { ...opts.routes };
    fs.mkdirSync(opts.logDir, { recursive: true });
    for (const fn of functions) {
      this.slots.set(fn.name, {
        fn,
        env: sandboxEnvironment(fn, opts.awsEnv),
        log: openLog(path.join(opts.logDir, `${fn.logicalName}.log`)),
        idle: [],
        all: new Set(),
        stats: { invocations: 0, errors: 0, timeouts: 0, running: 0, peakRunning: 0, coldStarts: 0 },
      });
    }
  }

  /** Applies to environments created or reused afterwards (the routes travel with each invocation). */
  setRoutes(routes: Record<string, string>): void {
    this.routes = { ...routes };
  }

  stats(): Record<string, FunctionStats> {
    return Object.fromEntries([...this.slots].map(([name, slot]) => [name, { ...slot.stats }]));
  }

  /** Invokes a function by its physical name, as the Invoke API would (RequestResponse). */
  async invoke(functionName: string, event: unknown): Promise<InvokeResult> {
    const slot = this.slots.get(functionName);
    if (!slot) throw new Error(`no local function named ${functionName}`);
    if (this.closed) throw new Error("the Lambda host is closed");
    const started = Date.now();
    const { stats } = slot;
    stats.invocations++;
    stats.running++;
    stats.peakRunning = Math.max(stats.peakRunning, stats.running);
    try {
      const outcome = await this.runInEnvironment(slot, event);
      if (outcome.kind === "timeout") stats.timeouts++;
      if (outcome.kind === "error") stats.errors++;
      return { ...outcome, durationMs: Date.now() - started };
    } finally {
      stats.running--;
    }
  }

  private async runInEnvironment(slot: Slot, event: unknown): Promise<Outcome> {
    const { fn } = slot;
    let env = slot.idle.pop();
    // An idle sandbox can still die (an unhandled rejection after its handler returned).
    while (env?.dead) {
      slot.all.delete(env);
      env = slot.idle.pop();
    }
    if (!env) {
      slot.stats.coldStarts++;
      env = new Environment(fn, slot.env, slot.log, this.opts.clock, this.opts.crashable);
      slot.all.add(env);
      const initError = await withDeadline(env.ready, INIT_TIMEOUT_MS);
      if (initError !== null) {
        await this.discard(slot, env);
        if (initError === "timeout") {
          if (!slot.log.writableEnded) slot.log.write(`INIT_REPORT Init Duration: ${INIT_TIMEOUT_MS} ms Phase: init Status: timeout\n`);
          return { kind: "timeout" };
        }
        return { kind: "error", error: initError };
      }
    }
    env.worker.ref();
    const requestId = randomUUID();
    const timeoutMs = fn.timeoutSeconds * 1000;
    const context = {
      awsRequestId: requestId,
      functionName: fn.name,
      functionVersion: "$LATEST",
      invokedFunctionArn: fn.arn,
      memoryLimitInMB: String(fn.memoryMb),
      logGroupName: `/aws/lambda/${fn.name}`,
      logStreamName: env.logStreamName,
    };
    env.current = { requestId, event, deadlineMs: Date.now() + timeoutMs };
    const outcome = await withDeadline(env.run(this.nextId++, event, context, Date.now() + timeoutMs, this.routes), timeoutMs);
    env.current = undefined;
    if (outcome === "timeout") {
      // Lambda stops the sandbox: whatever the handler was doing dies with it.
      if (!slot.log.writableEnded) slot.log.write(`${new Date().toISOString()} ${requestId} Task timed out after ${fn.timeoutSeconds.toFixed(2)} seconds\n`);
      await this.discard(slot, env);
      return { kind: "timeout" };
    }
    if (env.dead || this.closed) {
      await this.discard(slot, env);
    } else {
      // An idle environment must not keep the process alive on its own.
      env.worker.unref();
      slot.idle.push(env);
    }
    return outcome;
  }

  /**
   * Kills the sandbox running invocation `requestId` at once (a SIGKILL; a sandbox is a worker
   * thread here, so terminate(): its code stops where it is, and nothing after runs). Its invocation
   * ends as an error, so the event source keeps the batch and it comes back after its visibility
   * timeout; the next invocation starts a fresh sandbox. Undefined when no sandbox runs it.
   */
  async crash(requestId: string): Promise<CrashedInvocation | undefined> {
    for (const [functionName, slot] of this.slots) {
      for (const env of slot.all) {
        if (env.dead || env.current?.requestId !== requestId) continue;
        const { event, deadlineMs } = env.current;
        if (!slot.log.writableEnded) slot.log.write(`${new Date().toISOString()} ${requestId} Error: Runtime exited with error: signal: killed\n`);
        await env.crash();
        return { functionName, requestId, event, logStreamName: env.logStreamName, deadlineMs };
      }
    }
    return undefined;
  }

  private async discard(slot: Slot, env: Environment): Promise<void> {
    slot.all.delete(env);
    slot.idle = slot.idle.filter((e) => e !== env);
    await env.destroy();
  }

  /**
   * Ends every environment and closes the logs: idle ones flush their output first, busy ones
   * are killed (their invocations end as errors).
   */
  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.slots.values()];
    await Promise.all(
      slots.flatMap((slot) =>
        [...slot.all].map((env) => {
          slot.all.delete(env);
          return slot.idle.includes(env) ? env.shutdown() : env.destroy();
        }),
      ),
    );
    for (const slot of slots) slot.idle = [];
    await Promise.all(slots.map((slot) => new Promise<void>((done) => slot.log.end(done))));
  }
}

/** The function's one log file, which every environment of the function writes into. */
export function openLog(file: string): fs.WriteStream {
  const log = fs.createWriteStream(file, { flags: "a" });
  // A terminated worker's last lines can arrive after close(): losing them beats crashing.
  log.on("error", () => undefined);
  // Each live environment's stdout and stderr pipes listen for the log's errors until they end: six
  // concurrent environments passed Node's default of ten (a MaxListenersExceededWarning in every chaos
  // run), and the count follows the function's concurrency, which has no fixed bound here.
  log.setMaxListeners(0);
  return log;
}
