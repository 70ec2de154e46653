/**
 * An ECS service's container run as local processes: one Node process per task, with the
 * environment the task definition gives the container, pointed at moto, and its own
 * TaskProtectionAgent playing the ECS agent. SIGTERM plays a Spot interruption or a scale-in;
 * like ECS, a task that has not exited by the container's stopTimeout is killed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type LoggedChild, spawnLogged, terminate } from "./child";
import { TaskProtectionAgent } from "./ecs-agent";
import type { LocalTaskDefinition } from "../provision/topology-types";

const ROOT = path.resolve(__dirname, "../..");
export const DEFAULT_WORKER_ENTRY = "functions/worker/main.ts";
/** ECS's default when a container definition sets no stopTimeout. */
export const ECS_DEFAULT_STOP_TIMEOUT_SECONDS = 30;

export interface WorkerServiceOptions {
  /** Its first essential container (the first if none says) is run. */
  taskDefinition: LocalTaskDefinition;
  count: number;
  /** Points the SDK at moto (see motoClientEnv); wins over the container's own AWS_* values. */
  awsEnv: Record<string, string>;
  /** Relative to the repository root or absolute; run with `node --import tsx`. */
  entry?: string;
  logDir: string;
  /** Applied last: test and scenario knobs (shorter waits, idle windows…). */
  extraEnv?: Record<string, string>;
  /** Where each task's scratch directory is made; defaults to the OS temp dir. */
  scratchRoot?: string;
  /** SIGKILL after this long; defaults to the container's stopTimeout, as on ECS. */
  stopTimeoutMs?: number;
  /**
   * A task that dies on its own (SIGKILL, OOM, a crash) is replaced by a fresh one, with a new task
   * ARN, after this many real ms, as the ECS service keeps its desired count. Undefined: not replaced.
   */
  replaceAfterMs?: number;
  /** Each replacement, as it is started. */
  onReplaced?: (index: number) => void;
}

export interface WorkerTaskView {
  index: number;
  pid: number | undefined;
  /** The byte offset of its log file where this task's own lines start (a replacement appends to the same file). */
  logOffset: number;
  exitCode: number | null;
  signal: string | null;
  agent: TaskProtectionAgent;
  logFile: string;
}

interface RunningTask extends LoggedChild {
  index: number;
  agent: TaskProtectionAgent;
  logFile: string;
  scratch: string;
  /** Set when interrupt() or stop() ends it: such a task is not replaced. */
  stopRequested?: boolean;
}

/** The container definition to run (by name, else the first essential one). */
export function pickContainer(td: LocalTaskDefinition, name?: string): Record<string, unknown> {
  const defs = td.containerDefinitions;
  const found = name !== undefined ? defs.find((c) => c.name === name) : (defs.find((c) => c.essential === true) ?? defs[0]);
  if (!found) throw new Error(`task definition ${td.family} has no container ${name ?? "(any)"}`);
  return found;
}

/** A container definition's `environment` (a name/value list) as a record. */
export function containerEnvironment(container: Record<string, unknown>): Record<string, string> {
  const list: unknown[] = Array.isArray(container.environment) ? container.environment : [];
  const pairs = list.map((item) => (item ?? {}) as { name?: unknown; value?: unknown }).filter((p) => typeof p.name === "string");
  return Object.fromEntries(pairs.map((p) => [p.name, typeof p.value === "string" ? p.value : String(p.value ?? "")]));
}

/** The worker's own timers, in seconds, that the local run puts on its simulated clock. */
export const SIMULATED_TIME_KNOBS = [
  "WORKER_SHUTDOWN_GRACE_SECONDS",
  "WORKER_IDLE_WINDOW_SECONDS",
  "WORKER_HEARTBEAT_SECONDS",
  "WORKER_RETRY_DELAY_SECONDS",
] as const;

/**
 * What a worker task needs on top of its container environment to run in the local run:
 * - its queue URLs on a real-time SQS origin (`sqsEndpoint`: the local run's real-time SQS proxy,
 *   which keeps SQS's receipt-handle rule and no clock, or moto's own): the queues were created
 *   through the SQS clock proxy, so their URLs name it, and SDK v3 sends each call to its
 *   QueueUrl's origin. Through the clock proxy a job's visibility (from the message's estimate)
 *   would be divided by the speed while the job's run time is not, and the job would be handed
 *   to a second task mid-run;
 * - the stack's timers divided by the speed (never below 1 s), so idle windows, heartbeats,
 *   retry delays and the shutdown grace keep their proportions to the run's other clocks;
 * - 1 s polls, so stopping a task or the run never waits out a 20 s long poll.
 */
export function localTaskEnvironment(container: Record<string, string>, sqsEndpoint: string, speed: number): Record<string, string> {
  const out: Record<string, string> = { WORKER_WAIT_TIME_SECONDS: "1" };
  for (const [key, value] of Object.entries(container)) {
    if (key.endsWith("_QUEUE_URL") && /^https?:/.test(value)) out[key] = new URL(new URL(value).pathname, sqsEndpoint).toString();
  }
  for (const key of SIMULATED_TIME_KNOBS) {
    const value = Number(container[key]);
    if (container[key] !== undefined && Number.isFinite(value)) out[key] = String(Math.max(1, Math.ceil(value / speed)));
  }
  return out;
}

/**
 * One task's environment, in order of precedence (last wins): PATH (the image has one), the
 * container's environment, awsEnv, what ECS injects (ECS_AGENT_URI), the scratch directory
 * (standing in for the container's /scratch volume), then extraEnv. Nothing else of the parent's
 * environment leaks in, as nothing of the host leaks into a container.
 */
export function taskEnvironment(parts: {
  container: Record<string, string>;
  awsEnv: Record<string, string>;
  agentUri: string;
  scratchDir: string;
  extraEnv?: Record<string, string>;
  path?: string;
}): Record<string, string> {
  return {
    PATH: parts.path ?? "/usr/local/bin:/usr/bin:/bin",
    ...parts.container,
    ...parts.awsEnv,
    ECS_AGENT_URI: parts.agentUri,
    WORKER_SCRATCH_DIR: parts.scratchDir,
    ...(parts.extraEnv ?? {}),
  };
}

export class WorkerServiceRunner {
  private readonly running: RunningTask[] = [];
  private stopping = false;
  private replacements = 0;
  private readonly container: Record<string, unknown>;
  private readonly stopTimeoutMs: number;

  constructor(private readonly o: WorkerServiceOptions) {
    this.container = pickContainer(o.taskDefinition);
    const stopTimeout = typeof this.container.stopTimeout === "number" ? this.container.stopTimeout : ECS_DEFAULT_STOP_TIMEOUT_SECONDS;
    this.stopTimeoutMs = o.stopTimeoutMs ?? stopTimeout * 1000;
  }

  /** Starts `count` tasks; resolves once each process is spawned (not when the worker is ready). */
  async start(): Promise<void> {
    fs.mkdirSync(this.o.logDir, { recursive: true });
    fs.mkdirSync(this.o.scratchRoot ?? os.tmpdir(), { recursive: true });
    for (let index = this.running.length; index < this.o.count; index++) this.running.push(await this.spawnTask(index));
  }

  /** Tasks replaced so far after dying on their own. */
  replaced(): number {
    return this.replacements;
  }

  private async spawnTask(index: number): Promise<RunningTask> {
    const entry = path.resolve(ROOT, this.o.entry ?? DEFAULT_WORKER_ENTRY);
    const agent = new TaskProtectionAgent();
    const agentUri = await agent.start();
    const scratch = fs.mkdtempSync(path.join(this.o.scratchRoot ?? os.tmpdir(), `worker-${index}-`));
    const logFile = path.join(this.o.logDir, `worker-${index}.log`);
    const env = taskEnvironment({
      container: containerEnvironment(this.container),
      awsEnv: this.o.awsEnv,
      agentUri,
      scratchDir: scratch,
      extraEnv: this.o.extraEnv,
      path: process.env.PATH,
    });
    // tsx resolves from the repository's node_modules.
    const task: RunningTask = { index, agent, logFile, scratch, ...spawnLogged(["--import", "tsx", entry], env, logFile, ROOT) };
    void task.exited.then(() => this.onExit(task));
    return task;
  }

  /** A task that died with nobody stopping it is replaced, as the service scheduler does. */
  private onExit(task: RunningTask): void {
    if (this.stopping || task.stopRequested || this.o.replaceAfterMs === undefined) return;
    // A replacement still pending at stop() comes to nothing (replace checks), and keeps nothing alive.
    setTimeout(() => void this.replace(task), this.o.replaceAfterMs).unref();
  }

  private async replace(dead: RunningTask): Promise<void> {
    const at = this.running.indexOf(dead);
    if (at < 0) return;
    if (this.stopping) return;
    await this.release(dead);
    if (this.stopping) return;
    const fresh = await this.spawnTask(dead.index);
    this.running[at] = fresh;
    this.replacements += 1;
    this.o.onReplaced?.(dead.index);
  }

  private async release(t: RunningTask): Promise<void> {
    await t.agent.stop();
    fs.rmSync(t.scratch, { recursive: true, force: true });
  }

  tasks(): WorkerTaskView[] {
    return this.running.map((t) => ({
      index: t.index,
      pid: t.child.pid,
      logOffset: t.logOffset,
      exitCode: t.child.exitCode,
      signal: t.child.signalCode,
      agent: t.agent,
      logFile: t.logFile,
    }));
  }

  /** A Spot interruption: SIGTERM, then wait for the exit (SIGKILL after the stop timeout). */
  async interrupt(index: number): Promise<{ exitCode: number | null; signal: string | null; elapsedMs: number }> {
    const task = this.running.find((t) => t.index === index);
    if (!task) throw new Error(`no worker task ${index}`);
    const startedAt = Date.now();
    await this.terminate(task);
    return { exitCode: task.child.exitCode, signal: task.child.signalCode, elapsedMs: Date.now() - startedAt };
  }

  /** SIGTERM to every task at once (the worker hands unfinished jobs back), SIGKILL after the stop timeout. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running.map((t) => this.terminate(t)));
    for (const t of this.running) await this.release(t);
  }

  private terminate(task: RunningTask): Promise<void> {
    task.stopRequested = true;
    return terminate(task, this.stopTimeoutMs);
  }
}
