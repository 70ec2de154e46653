/**
 * worker (docs/parts/worker.md): long jobs run under task scale-in protection; a simulated SIGTERM (a Spot
 * interruption) hands unfinished work back to the queue and another task completes it, with
 * nothing lost. One malformed job is quarantined to the work queue's DLQ with a reason.
 *
 * The tasks are the program's own container (task definition, environment, ECS agent endpoint)
 * run as local processes by WorkerServiceRunner, against moto in real time. The service's own
 * tasks (platform.worker) keep the stack's shutdown grace of 100 s, which a run at --speed 60
 * cannot wait for, so the scenario scales out with two more tasks of the same task definition
 * whose time knobs (grace, idle window, heartbeat, retry delay) are divided by the speed, as every
 * other wait of the local run is. It interrupts one of them mid-job.
 */
import * as path from "node:path";
import { motoClientEnv } from "../aws/moto";
import type { LocalPlatform } from "../platform";
import type { LocalTaskDefinition } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { containerEnvironment, localTaskEnvironment, pickContainer, type WorkerTaskView, WorkerServiceRunner } from "../hosts/worker-service";
import { type LogLine, readLogLines } from "./logs";
import { keyTimings, peekAll, type Scenario, type ScenarioContext, ScenarioRun, sendAll, total, waitFor, waitForEmpty } from "./scenario";
import { executablesSchema } from "../../functions/worker/config";

/** Long (interruptible) and short jobs per size. */
const SIZES = { small: { long: 4, short: 4 }, default: { long: 10, short: 20 } } as const;
/** The short job type every stack allows. */
const SHORT_TYPE = "payload-digest";
/** Real seconds a long job must have run before the SIGTERM, so it is truly mid-job. */
const MID_JOB_MS = 2000;
/** The allow-listed long job type: a fixed `sleep`, whose argument is its duration. */
export function longJobType(executablesJson: string | undefined): { type: string; seconds: number } | undefined {
  const parsed = executablesSchema.safeParse(JSON.parse(executablesJson ?? "{}"));
  if (!parsed.success) return undefined;
  for (const [type, e] of Object.entries(parsed.data)) {
    const seconds = Number(e.args[0]);
    if (/\/sleep$/.test(e.command) && e.args.length === 1 && seconds >= 4) return { type, seconds };
  }
  return undefined;
}

function taskDefinitionOf(platform: LocalPlatform): LocalTaskDefinition {
  const service = platform.topology.services[0];
  if (!service) throw new Error("the program declares no ECS service");
  const td = platform.topology.taskDefinitions.find((t) => t.arn === service.taskDefinitionArn);
  if (!td) throw new Error(`service ${service.logicalName}: task definition not found`);
  return td;
}

interface TaskRef {
  label: string;
  view: WorkerTaskView;
}

/** What the SIGTERMed task must have done: give back (or finish) every unfinished job, which another task then completed; stay protected while they ran; exit 0 and release protection. */
function interruptionFailures(at: {
  victim: WorkerTaskView;
  unfinishedAtSigterm: string[];
  protectedAtSigterm: boolean;
  exit: Awaited<ReturnType<WorkerServiceRunner["interrupt"]>> | undefined;
  completions: Array<{ task: string; line: LogLine }>;
}): string[] {
  const failures: string[] = [];
  const v = at.victim;
  const vLines = readLogLines(v.logFile);
  const returned = vLines.filter((l) => l.step === "job_returned" && l.visible_again === true).map((l) => String(l.job_id));
  const victimCompleted = new Set(vLines.filter((l) => l.step === "job_succeeded").map((l) => String(l.job_id)));
  for (const id of at.unfinishedAtSigterm) {
    if (!returned.includes(id) && !victimCompleted.has(id)) failures.push(`${id} was running at SIGTERM but neither finished nor was given back`);
  }
  if (returned.length === 0) failures.push("the interrupted task gave no job back (every job finished within the grace period?)");
  for (const id of returned) {
    const elsewhere = at.completions.find((c) => c.line.job_id === id && c.task !== `scenario task ${v.index}`);
    if (!elsewhere) failures.push(`${id} was given back but no other task completed it`);
    else if (Number(elsewhere.line.receive_count ?? 0) < 2)
      failures.push(`${id} completed elsewhere with receive count ${String(elsewhere.line.receive_count)}`);
  }
  if (!at.protectedAtSigterm) failures.push("the interrupted task was not protected while its jobs ran");
  if (at.exit?.exitCode !== 0) failures.push(`the interrupted task exited with ${at.exit?.exitCode ?? at.exit?.signal ?? "?"}, expected 0`);
  const last = v.agent.history().at(-1);
  if (last?.protectionEnabled !== false) failures.push("the interrupted task did not release protection on its way out");
  return failures;
}

/** Protection must hold whenever a job runs: the jobs of ours whose job_started finds no enable as the task's last change. */
function unprotectedJobStarts(task: WorkerTaskView, ours: (l: LogLine) => boolean): number {
  const history = task.agent.history();
  return readLogLines(task.logFile).filter((l) => {
    if (l.step !== "job_started" || !ours(l)) return false;
    const at = Date.parse(String(l.timestamp));
    return history.filter((h) => h.atMs <= at + 5).at(-1)?.protectionEnabled !== true;
  }).length;
}

export const worker: Scenario = {
  name: "worker",
  title: "long jobs run under protection; SIGTERM hands unfinished work back, nothing lost",
  requires: ["worker", "worker-dlq"],
  async run(ctx: ScenarioContext) {
    const run = new WorkerRun(ctx, this.name);
    await run.runner.start();
    try {
      await run.waitForBoot();
      await run.sendJobs();
      const drained = await run.waitForEveryJob();
      run.checkInterruption();
      run.checkEveryJobRanOnceProtected();
      await run.waitForQueueEmpty();
      return await run.report(drained);
    } finally {
      await run.runner.stop();
    }
  },
};

/** The jobs one run sends (long ones of the sleep type, short ones, one with no payload) and the ids expected to complete. */
function jobsFor(runId: string, size: { long: number; short: number }, long: { type: string; seconds: number }): { bodies: string[]; expected: Set<string> } {
  const ids = (kind: string, n: number) => Array.from({ length: n }, (_, i) => `${kind}-${runId}-${i}`);
  const [longIds, shortIds] = [ids("long", size.long), ids("short", size.short)];
  const bodies = [
    ...longIds.map((job_id) => JSON.stringify({ job_id, type: long.type, payload: null, estimated_seconds: long.seconds })),
    ...shortIds.map((job_id, n) => JSON.stringify({ job_id, type: SHORT_TYPE, payload: { n }, estimated_seconds: 1 })),
    JSON.stringify({ job_id: `bad-${runId}-0`, type: SHORT_TYPE }),
  ];
  return { bodies, expected: new Set([...longIds, ...shortIds]) };
}

/** The SIGTERM the scenario sends, and what it found at that moment. */
interface Interruption {
  at: number | null;
  done: number | null;
  victim?: WorkerTaskView;
  unfinishedAtSigterm: string[];
  protectedAtSigterm: boolean;
  exit?: Awaited<ReturnType<WorkerServiceRunner["interrupt"]>>;
  pending?: Promise<void>;
}

/** One play of the scenario: its queues, its two extra tasks, the jobs it sent, the interruption and the failures found. */
class WorkerRun extends ScenarioRun {
  readonly runner: WorkerServiceRunner;
  private sentAt = 0;
  private readonly queue = this.platform.queue("worker");
  private readonly dlq = this.platform.queue("worker-dlq");
  private readonly container: Record<string, string>;
  private readonly long: { type: string; seconds: number };
  private readonly size = SIZES[this.ctx.size];
  private readonly bodies: string[];
  private readonly expected: Set<string>;
  private readonly interruption: Interruption = { at: null, done: null, unfinishedAtSigterm: [], protectedAtSigterm: false };
  /** Set while the queue is empty and no job runs; see finishedOrStuck. */
  private quietSince: number | null = null;

  constructor(ctx: ScenarioContext, name: string) {
    super(ctx, name);
    const { platform } = ctx;
    const td = taskDefinitionOf(platform);
    this.container = containerEnvironment(pickContainer(td));
    const long = longJobType(this.container.WORKER_EXECUTABLES);
    if (!long) throw new Error("the stack allows no fixed `sleep` job type (encache:worker.executables), so no job outlives the SIGTERM");
    this.long = long;
    // Two more tasks of the service, with the stack's waits scaled to the run's speed.
    this.runner = new WorkerServiceRunner({
      taskDefinition: td,
      count: 2,
      awsEnv: { ...motoClientEnv(platform.moto.endpoint, platform.topology.region), AWS_ENDPOINT_URL_SQS: platform.sqsRealtimeEndpoint },
      logDir: path.join(platform.options.workDir, "logs", "worker-scenario"),
      scratchRoot: path.join(platform.options.workDir, "scratch", "worker-scenario"),
      // The same local timings and real-time queue URLs (receipt-handle rule kept) as the service's own task.
      extraEnv: this.taskTimingEnv(),
    });
    ({ bodies: this.bodies, expected: this.expected } = jobsFor(ctx.runId, this.size, long));
  }

  async waitForBoot(): Promise<void> {
    const booted = await waitFor(() => this.runner.tasks().every((t) => readLogLines(t.logFile).some((l) => l.step === "worker_started")), {
      timeoutMs: 30_000,
    });
    if (!booted) this.failures.push("the scenario's worker tasks never logged worker_started");
  }

  async sendJobs(): Promise<void> {
    await sendAll(this.platform, this.queue, this.bodies);
    this.sentAt = Date.now();
    this.ctx.note(
      `worker: ${this.size.long} long (${this.long.type}) + ${this.size.short} short jobs and 1 malformed sent; ${this.tasks().length} tasks polling`,
    );
  }

  /** Waits (interrupting one task on the way) until every job completed; returns when, or null on a timeout. */
  async waitForEveryJob(): Promise<number | null> {
    const ok = (await waitFor(() => this.finishedOrStuck(), { timeoutMs: 180_000, tick: this.tick })) && this.completed().size >= this.expected.size;
    await this.interruption.pending;
    if (!ok)
      this.failures.push(
        `timed out: ${this.completed().size}/${this.expected.size} jobs completed, ${this.interruption.at === null ? "no task was interrupted" : "interrupt done"}`,
      );
    return ok ? Date.now() : null;
  }

  /** The interruption: the victim gave its unfinished jobs back, exited cleanly, released protection. */
  checkInterruption(): void {
    const { victim, unfinishedAtSigterm, protectedAtSigterm, exit } = this.interruption;
    if (victim) this.failures.push(...interruptionFailures({ victim, unfinishedAtSigterm, protectedAtSigterm, exit, completions: this.completions() }));
    else this.failures.push("no scenario task ever had a long job mid-run to interrupt");
  }

  checkEveryJobRanOnceProtected(): void {
    const unprotectedStarts = this.tasks().reduce((n, t) => n + unprotectedJobStarts(t.view, this.ours), 0);
    if (unprotectedStarts > 0) this.failures.push(`${unprotectedStarts} job(s) started while their task was unprotected`);
    const twice = [...this.expected].filter((id) => this.completions().filter((c) => c.line.job_id === id).length > 1);
    if (twice.length > 0) this.failures.push(`completed more than once: ${twice.join(", ")}`);
  }

  async waitForQueueEmpty(): Promise<void> {
    await waitForEmpty(this.platform, [this.queue], { timeoutMs: 15_000, tick: this.tick });
  }

  /** Accounting. Quarantined: in the DLQ with a reason; anything else there is an exhausted job. */
  async report(drained: number | null): Promise<ScenarioSummary> {
    const inDlqMessages = (await peekAll(this.platform, this.dlq)).filter((m) => (m.Body ?? "").includes(this.ctx.runId));
    const quarantined = inDlqMessages.filter((m) => m.MessageAttributes?.["quarantine-reason"] !== undefined);
    if (quarantined.length !== 1) this.failures.push(`expected the malformed job in quarantine, found ${quarantined.length}`);
    const left = await this.platform.depth(this.queue);
    const perTask = Object.fromEntries(this.lines().map((t) => [t.label, t.lines.filter((l) => l.step === "job_succeeded" && this.ours(l)).length]));
    const { at, done, victim, unfinishedAtSigterm } = this.interruption;
    return this.summarise({
      sent: this.bodies.length,
      processed: this.completed().size,
      quarantined: quarantined.length,
      inDlq: inDlqMessages.length - quarantined.length,
      remaining: total(left),
      ...keyTimings(this.platform.clock.speed, {
        "SIGTERM sent": [this.sentAt, at],
        "SIGTERM → task exited": [at, done],
        "every job completed": [this.sentAt, drained],
      }),
      details: {
        longJobType: this.long.type,
        unfinishedAtSigterm,
        givenBack: victim ? readLogLines(victim.logFile).filter((l) => l.step === "job_returned").length : 0,
        completedPerTask: perTask,
        protectionChanges: Object.fromEntries(this.tasks().map((t) => [t.label, t.view.agent.history().length])),
        taskTimings: Object.fromEntries(Object.entries(this.taskTimingEnv()).filter(([k]) => k.startsWith("WORKER_"))),
        quarantineReason: quarantined[0]?.MessageAttributes?.["quarantine-reason"]?.StringValue ?? null,
      },
    });
  }

  private taskTimingEnv(): Record<string, string> {
    return localTaskEnvironment(this.container, this.platform.sqsRealtimeEndpoint, this.platform.options.speed);
  }

  private tasks(): TaskRef[] {
    return [
      ...(this.platform.worker?.tasks() ?? []).map((view) => ({ label: `service task ${view.index}`, view })),
      ...this.runner.tasks().map((view) => ({ label: `scenario task ${view.index}`, view })),
    ];
  }

  private lines(): Array<TaskRef & { lines: LogLine[] }> {
    return this.tasks().map((t) => ({ ...t, lines: readLogLines(t.view.logFile) }));
  }

  private readonly ours = (l: LogLine): boolean => typeof l.job_id === "string" && this.expected.has(l.job_id);

  private completions(): Array<{ task: string; line: LogLine }> {
    return this.lines().flatMap((t) => t.lines.filter((l) => l.step === "job_succeeded" && this.ours(l)).map((l) => ({ task: t.label, line: l })));
  }

  private completed(): Set<string> {
    return new Set(this.completions().map((c) => String(c.line.job_id)));
  }

  /** Jobs a task started and has not finished, failed or given back. */
  private runningOn(file: string): LogLine[] {
    const all = readLogLines(file);
    const ended = new Set(all.filter((l) => ["job_succeeded", "job_failed", "job_returned"].includes(l.step ?? "")).map((l) => String(l.message_id)));
    return all.filter((l) => l.step === "job_started" && this.ours(l) && !ended.has(String(l.message_id)));
  }

  private readonly tick = async (): Promise<void> => {
    if (!this.interruption.pending) this.interruptOneMidJob();
    const done = this.completed().size;
    const running = this.tasks().reduce((n, t) => n + this.runningOn(t.view.logFile).length, 0);
    const status = this.tasks().map(
      ({ label, view: v }) =>
        `${label}: ${v.exitCode !== null || v.signal !== null ? `exited (${v.exitCode ?? v.signal})` : "running"}, protection ${v.agent.state().protectionEnabled ? "on" : "off"}`,
    );
    await this.show({ worker: this.queue, "worker-dlq": this.dlq }, { done, total: this.expected.size }, { completed: done, "jobs running": running }, status);
  };

  /** SIGTERM to a scenario task once one of its long jobs is mid-run. */
  private interruptOneMidJob(): void {
    const it = this.interruption;
    for (const t of this.runner.tasks()) {
      const longRunning = this.runningOn(t.logFile).filter((l) => l.type === this.long.type && Date.now() - Date.parse(String(l.timestamp)) >= MID_JOB_MS);
      if (longRunning.length === 0) continue;
      it.victim = t;
      it.unfinishedAtSigterm = this.runningOn(t.logFile).map((l) => String(l.job_id));
      it.protectedAtSigterm = t.agent.state().protectionEnabled;
      it.at = Date.now();
      this.ctx.note(
        `worker: SIGTERM to scenario task ${t.index} (pid ${t.pid}) with ${it.unfinishedAtSigterm.length} job(s) running: ${it.unfinishedAtSigterm.join(", ")}`,
      );
      it.pending = this.runner.interrupt(t.index).then((r) => {
        it.exit = r;
        it.done = Date.now();
      });
      break;
    }
  }

  /**
   * Stops early once nothing is left to happen: the queue is empty and no job runs for 10 s
   * (a job that reached the DLQ would otherwise keep the wait going to its deadline).
   */
  private async finishedOrStuck(): Promise<boolean> {
    if (this.completed().size >= this.expected.size && this.interruption.done !== null) return true;
    const d = await this.platform.depth(this.queue);
    const idle = this.interruption.done !== null && total(d) === 0 && this.tasks().every((t) => this.runningOn(t.view.logFile).length === 0);
    this.quietSince = idle ? (this.quietSince ?? Date.now()) : null;
    return this.quietSince !== null && Date.now() - this.quietSince > 10_000;
  }
}
