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
import { motoClientEnv } from "../moto";
import type { LocalPlatform } from "../platform";
import type { LocalTaskDefinition } from "../types";
import { containerEnvironment, localTaskEnvironment, pickContainer, type WorkerTaskView, WorkerServiceRunner } from "../worker-service";
import { type LogLine, readLogLines } from "./logs";
import { gauges, peekAll, type Scenario, type ScenarioContext, sendAll, since, summary, waitFor } from "./scenario";
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
    else if (Number(elsewhere.line.receive_count ?? 0) < 2) failures.push(`${id} completed elsewhere with receive count ${String(elsewhere.line.receive_count)}`);
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
    const { platform } = ctx;
    const queue = platform.queue("worker");
    const dlq = platform.queue("worker-dlq");
    const td = taskDefinitionOf(platform);
    const container = containerEnvironment(pickContainer(td));
    const long = longJobType(container.WORKER_EXECUTABLES);
    if (!long) throw new Error("the stack allows no fixed `sleep` job type (encache:worker.executables), so no job outlives the SIGTERM");
    const failures: string[] = [];
    const size = SIZES[ctx.size];

    // Two more tasks of the service, with the stack's waits scaled to the run's speed.
    const logDir = path.join(platform.options.workDir, "logs", "worker-scenario");
    const runner = new WorkerServiceRunner({
      taskDefinition: td,
      count: 2,
      awsEnv: motoClientEnv(platform.moto.endpoint, platform.topology.region),
      logDir,
      scratchRoot: path.join(platform.options.workDir, "scratch", "worker-scenario"),
      // The same local timings and moto-direct queue URLs as the service's own task.
      extraEnv: localTaskEnvironment(container, platform.moto.endpoint, platform.options.speed),
    });
    const started = Date.now();
    await runner.start();
    try {
      const tasks = (): TaskRef[] => [
        ...(platform.worker?.tasks() ?? []).map((view) => ({ label: `service task ${view.index}`, view })),
        ...runner.tasks().map((view) => ({ label: `scenario task ${view.index}`, view })),
      ];
      const booted = await waitFor(() => runner.tasks().every((t) => readLogLines(t.logFile).some((l) => l.step === "worker_started")), { timeoutMs: 30_000 });
      if (!booted) failures.push("the scenario's worker tasks never logged worker_started");

      // Jobs: long ones (the sleep type), short ones, and one with no payload (malformed).
      const jobId = (kind: string, i: number) => `${kind}-${ctx.runId}-${i}`;
      const bodies = [
        ...Array.from({ length: size.long }, (_, i) => JSON.stringify({ job_id: jobId("long", i), type: long.type, payload: null, estimated_seconds: long.seconds })),
        ...Array.from({ length: size.short }, (_, i) => JSON.stringify({ job_id: jobId("short", i), type: SHORT_TYPE, payload: { n: i }, estimated_seconds: 1 })),
        JSON.stringify({ job_id: jobId("bad", 0), type: SHORT_TYPE }),
      ];
      const expected = new Set([...Array.from({ length: size.long }, (_, i) => jobId("long", i)), ...Array.from({ length: size.short }, (_, i) => jobId("short", i))]);
      await sendAll(platform, queue, bodies);
      const sentAt = Date.now();
      ctx.note(`worker: ${size.long} long (${long.type}) + ${size.short} short jobs and 1 malformed sent; ${tasks().length} tasks polling`);

      const lines = () => tasks().map((t) => ({ ...t, lines: readLogLines(t.view.logFile) }));
      const ours = (l: LogLine) => typeof l.job_id === "string" && expected.has(l.job_id);
      const completions = () => lines().flatMap((t) => t.lines.filter((l) => l.step === "job_succeeded" && ours(l)).map((l) => ({ task: t.label, line: l })));
      const completed = () => new Set(completions().map((c) => String(c.line.job_id)));
      /** Jobs a task started and has not finished, failed or given back. */
      const runningOn = (file: string): LogLine[] => {
        const all = readLogLines(file);
        const ended = new Set(all.filter((l) => ["job_succeeded", "job_failed", "job_returned"].includes(l.step ?? "")).map((l) => String(l.message_id)));
        return all.filter((l) => l.step === "job_started" && ours(l) && !ended.has(String(l.message_id)));
      };

      let interruptedAt: number | null = null;
      let interruptedDone: number | null = null;
      let victim: WorkerTaskView | undefined;
      let unfinishedAtSigterm: string[] = [];
      let protectedAtSigterm = false;
      let exit: Awaited<ReturnType<WorkerServiceRunner["interrupt"]>> | undefined;
      let interrupting: Promise<void> | undefined;
      const tick = async () => {
        const qs = await gauges(platform, [
          ["worker", queue],
          ["worker-dlq", dlq],
        ]);
        // SIGTERM to a scenario task once one of its long jobs is mid-run.
        if (!interrupting) {
          for (const t of runner.tasks()) {
            const longRunning = runningOn(t.logFile).filter((l) => l.type === long.type && Date.now() - Date.parse(String(l.timestamp)) >= MID_JOB_MS);
            if (longRunning.length === 0) continue;
            victim = t;
            unfinishedAtSigterm = runningOn(t.logFile).map((l) => String(l.job_id));
            protectedAtSigterm = t.agent.state().protectionEnabled;
            interruptedAt = Date.now();
            ctx.note(`worker: SIGTERM to scenario task ${t.index} (pid ${t.pid}) with ${unfinishedAtSigterm.length} job(s) running: ${unfinishedAtSigterm.join(", ")}`);
            interrupting = runner.interrupt(t.index).then((r) => {
              exit = r;
              interruptedDone = Date.now();
            });
            break;
          }
        }
        const done = completed().size;
        ctx.view({
          scenario: this.name,
          elapsedMs: Date.now() - started,
          progress: { done, total: expected.size },
          queues: qs,
          counters: { completed: done, "jobs running": tasks().reduce((n, t) => n + runningOn(t.view.logFile).length, 0) },
          status: tasks().map(
            (t) =>
              `${t.label}: ${t.view.exitCode !== null || t.view.signal !== null ? `exited (${t.view.exitCode ?? t.view.signal})` : "running"}, protection ${t.view.agent.state().protectionEnabled ? "on" : "off"}`,
          ),
        });
      };

      // Stops early once nothing is left to happen: the queue is empty and no job runs for 10 s
      // (a job that reached the DLQ would otherwise keep the wait going to its deadline).
      let quietSince: number | null = null;
      const finishedOrStuck = async () => {
        if (completed().size >= expected.size && interruptedDone !== null) return true;
        const d = await platform.depth(queue);
        const idle = interruptedDone !== null && d.visible + d.inFlight + d.delayed === 0 && tasks().every((t) => runningOn(t.view.logFile).length === 0);
        quietSince = idle ? (quietSince ?? Date.now()) : null;
        return quietSince !== null && Date.now() - quietSince > 10_000;
      };
      const ok = (await waitFor(finishedOrStuck, { timeoutMs: 180_000, tick })) && completed().size >= expected.size;
      await interrupting;
      const drained = ok ? Date.now() : null;
      if (!ok) failures.push(`timed out: ${completed().size}/${expected.size} jobs completed, ${interruptedAt === null ? "no task was interrupted" : "interrupt done"}`);

      // The interruption: the victim gave its unfinished jobs back, exited cleanly, released protection.
      if (victim) failures.push(...interruptionFailures({ victim, unfinishedAtSigterm, protectedAtSigterm, exit, completions: completions() }));
      else failures.push("no scenario task ever had a long job mid-run to interrupt");

      const unprotectedStarts = tasks().reduce((n, t) => n + unprotectedJobStarts(t.view, ours), 0);
      if (unprotectedStarts > 0) failures.push(`${unprotectedStarts} job(s) started while their task was unprotected`);
      const twice = [...expected].filter((id) => completions().filter((c) => c.line.job_id === id).length > 1);
      if (twice.length > 0) failures.push(`completed more than once: ${twice.join(", ")}`);

      // Accounting. Quarantined: in the DLQ with a reason; anything else there is an exhausted job.
      await waitFor(async () => {
        const d = await platform.depth(queue);
        return d.visible + d.inFlight + d.delayed === 0;
      }, { timeoutMs: 15_000, tick });
      const inDlqMessages = (await peekAll(platform, dlq)).filter((m) => (m.Body ?? "").includes(ctx.runId));
      const quarantined = inDlqMessages.filter((m) => m.MessageAttributes?.["quarantine-reason"] !== undefined);
      if (quarantined.length !== 1) failures.push(`expected the malformed job in quarantine, found ${quarantined.length}`);
      const left = await platform.depth(queue);
      const perTask = Object.fromEntries(lines().map((t) => [t.label, t.lines.filter((l) => l.step === "job_succeeded" && ours(l)).length]));
      return summary({
        scenario: this.name,
        wallMs: Date.now() - started,
        sent: bodies.length,
        processed: completed().size,
        quarantined: quarantined.length,
        inDlq: inDlqMessages.length - quarantined.length,
        remaining: left.visible + left.inFlight + left.delayed,
        timings: {
          "SIGTERM sent": since(sentAt, interruptedAt),
          "SIGTERM → task exited": interruptedAt !== null && interruptedDone !== null ? interruptedDone - interruptedAt : null,
          "every job completed": since(sentAt, drained),
        },
        details: {
          longJobType: long.type,
          unfinishedAtSigterm,
          givenBack: victim ? readLogLines(victim.logFile).filter((l) => l.step === "job_returned").length : 0,
          completedPerTask: perTask,
          protectionChanges: Object.fromEntries(tasks().map((t) => [t.label, t.view.agent.history().length])),
          taskTimings: Object.fromEntries(Object.entries(localTaskEnvironment(container, platform.moto.endpoint, platform.options.speed)).filter(([k]) => k.startsWith("WORKER_"))),
          quarantineReason: quarantined[0]?.MessageAttributes?.["quarantine-reason"]?.StringValue ?? null,
        },
        failures,
      });
    } finally {
      await runner.stop();
    }
  },
};
