/**
 * Standalone ECS tasks (RunTask) in moto never finish: moto only moves a task on when DescribeTasks
 * is called, and never to a natural end. This simulator plays the containers: it finds the RUNNING
 * tasks of each cluster, lets each "run" for a chosen time, then stops it with StopTask, so that
 * whoever counts running tasks (the retraining launcher's ListTasks by startedBy) sees capacity
 * free up as it would on AWS.
 *
 * Service tasks are left alone: the worker service is run as real processes (worker-service.ts).
 *
 * Outcome: moto keeps every container's exitCode at 0 and has no API to change it, so a "failed"
 * task cannot show a non-zero exit in DescribeTasks. The outcome is recorded on the SimTask and
 * spelled out in the StopTask reason (`… (exit code 1)`), which DescribeTasks returns as
 * `stoppedReason`.
 */
import { DescribeTasksCommand, type ECSClient, paginateListTasks, StopTaskCommand, type Task, type TaskOverride } from "@aws-sdk/client-ecs";
import { everyUntil } from "./clock";
import { containerEnvironment } from "./worker-service";

export type TaskOutcome = "succeeded" | "failed";

export interface SimTask {
  taskArn: string;
  clusterArn: string;
  taskDefinitionArn: string;
  startedBy?: string;
  group?: string;
  tags: Record<string, string>;
  /** The containers' environment overrides from RunTask, merged (later containers win). */
  environment: Record<string, string>;
  /** RunTask's overrides as ECS reports them (in a task state change event's `detail.overrides`). */
  overrides?: TaskOverride;
  seenAtMs: number;
  stoppedAtMs: number | null;
  outcome: "running" | "succeeded" | "failed" | "interrupted";
  /** The reason given to StopTask, or `stopped outside the simulator` when someone else stopped it. */
  stoppedReason?: string;
}

export interface EcsTaskEvent {
  kind: "started" | "stopped";
  task: SimTask;
}

export interface EcsTaskSimulatorOptions {
  ecs: ECSClient;
  /** moto's base URL, for its state-manager API. */
  motoEndpoint: string;
  /** Cluster names or ARNs to watch. */
  clusters: string[];
  /** How long a task runs, decided when it is first seen. */
  durationMs: (t: SimTask) => number;
  /** Decided when its time is up; succeeded by default. */
  outcome?: (t: SimTask) => TaskOutcome;
  /** @default 250 */
  pollMs?: number;
  onEvent?: (e: EcsTaskEvent) => void;
}

/** DescribeTasks takes at most 100 tasks per call. */
const DESCRIBE_BATCH = 100;
export const EXTERNAL_STOP_REASON = "stopped outside the simulator";

/** What ECS says of a task Fargate Spot took back. */
export const SPOT_INTERRUPTION_REASON = "Your Spot Task was interrupted.";

/** Pure: the `detail` of the ECS Task State Change event for a task Spot interrupted. */
export function spotInterruptionDetail(t: SimTask): Record<string, unknown> {
  return {
    clusterArn: t.clusterArn,
    taskArn: t.taskArn,
    taskDefinitionArn: t.taskDefinitionArn,
    lastStatus: "STOPPED",
    desiredStatus: "STOPPED",
    stopCode: "SpotInterruption",
    stoppedReason: SPOT_INTERRUPTION_REASON,
    capacityProviderName: "FARGATE_SPOT",
    ...(t.startedBy ? { startedBy: t.startedBy } : {}),
    ...(t.group ? { group: t.group } : {}),
    overrides: t.overrides ?? { containerOverrides: [] },
  };
}

/** Tasks started by a service carry `group: service:<name>` and `startedBy: ecs-svc/<id>`. */
export function isServiceTask(t: Pick<Task, "group" | "startedBy">): boolean {
  return (t.group ?? "").startsWith("service:") || (t.startedBy ?? "").startsWith("ecs-svc/");
}

/** The reason StopTask records; it carries the exit code moto cannot (see the module comment). */
export function stopReason(outcome: TaskOutcome): string {
  return `Essential container in task exited (exit code ${outcome === "succeeded" ? 0 : 1}; simulated by the local run)`;
}

/** Pins moto's ECS task state machine, so DescribeTasks calls no longer move tasks toward STOPPED. */
export async function pinEcsTaskTransitions(motoEndpoint: string): Promise<void> {
  const res = await fetch(`${motoEndpoint.replace(/\/+$/, "")}/moto-api/state-manager/set-transition`, {
    method: "POST",
    body: JSON.stringify({ model_name: "ecs::task", transition: { progression: "manual", times: 1_000_000 } }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`moto set-transition failed: HTTP ${res.status} ${text.slice(0, 200)}`);
}

export function toSimTask(t: Task, seenAtMs: number): SimTask {
  const environment: Record<string, string> = Object.assign({}, ...(t.overrides?.containerOverrides ?? []).map((c) => containerEnvironment({ ...c })));
  const tags: Record<string, string> = {};
  for (const tag of t.tags ?? []) if (tag.key !== undefined) tags[tag.key] = tag.value ?? "";
  return {
    taskArn: t.taskArn ?? "",
    clusterArn: t.clusterArn ?? "",
    taskDefinitionArn: t.taskDefinitionArn ?? "",
    ...(t.startedBy ? { startedBy: t.startedBy } : {}),
    ...(t.group ? { group: t.group } : {}),
    tags,
    environment,
    ...(t.overrides ? { overrides: t.overrides } : {}),
    seenAtMs,
    stoppedAtMs: null,
    outcome: "running",
  };
}

interface Tracked {
  task: SimTask;
  cluster: string;
  dueAtMs: number;
  timer: NodeJS.Timeout | undefined;
  stopping: boolean;
}

export class EcsTaskSimulator {
  private readonly tracked = new Map<string, Tracked>();
  /** Service tasks seen once: never described again. */
  private readonly ignored = new Set<string>();
  private peak = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  /** Aborted by stop(): cuts the wait between polls short. */
  private stopped = new AbortController();

  constructor(private readonly o: EcsTaskSimulatorOptions) {}

  /** Pins moto's task transitions, takes a first look, then polls until stop(). */
  async start(): Promise<void> {
    if (this.running) return;
    await pinEcsTaskTransitions(this.o.motoEndpoint);
    this.running = true;
    this.stopped = new AbortController();
    await this.poll();
    this.loop = everyUntil(this.o.pollMs ?? 250, this.stopped.signal, () => this.poll());
  }

  /** Stops polling and pending stops; tasks still running are left running in moto. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopped.abort();
    await this.loop;
    this.loop = undefined;
    for (const t of this.tracked.values()) clearTimeout(t.timer);
  }

  tasks(): SimTask[] {
    return [...this.tracked.values()].map((t) => ({ ...t.task, tags: { ...t.task.tags }, environment: { ...t.task.environment } }));
  }

  stats(): { launched: number; running: number; succeeded: number; failed: number; interrupted: number; peakRunning: number } {
    const all = [...this.tracked.values()].map((t) => t.task.outcome);
    return {
      launched: all.length,
      running: all.filter((o) => o === "running").length,
      succeeded: all.filter((o) => o === "succeeded").length,
      failed: all.filter((o) => o === "failed").length,
      interrupted: all.filter((o) => o === "interrupted").length,
      peakRunning: this.peak,
    };
  }

  /**
   * Fargate Spot takes the task back: stopped at once (moto's StopTask), and the ECS Task State
   * Change event ECS emits for it (STOPPED, stopCode SpotInterruption, the task's startedBy and
   * overrides) handed to `emit`, the stand-in's EventBridge. Only a running task the simulator
   * tracks; whether it ran on Spot is the caller's to know (the ECS proxy's `spotTasks`).
   */
  async interrupt(taskArn: string, emit: (detail: Record<string, unknown>) => Promise<void>): Promise<void> {
    const t = this.tracked.get(taskArn);
    if (!t || t.task.outcome !== "running") throw new Error(`interrupt: ${taskArn} is not a running task of the simulator`);
    await this.stopTask(t, "interrupted", SPOT_INTERRUPTION_REASON);
    await emit(spotInterruptionDetail(t.task));
  }

  /** One pass: stop what is overdue (a StopTask that failed earlier), then look for new and vanished tasks. */
  private async poll(): Promise<void> {
    const now = Date.now();
    await Promise.all([...this.tracked.values()].filter((t) => t.task.outcome === "running" && t.dueAtMs <= now).map((t) => this.stopOne(t)));
    // A look that fails is taken again at the next poll.
    for (const cluster of this.o.clusters) await this.pollCluster(cluster).catch(() => undefined);
  }

  private async pollCluster(cluster: string): Promise<void> {
    const listed = new Set<string>();
    for await (const page of paginateListTasks({ client: this.o.ecs }, { cluster, desiredStatus: "RUNNING" })) {
      for (const arn of page.taskArns ?? []) listed.add(arn);
    }
    // Gone from RUNNING without our StopTask: someone else stopped it; it did not complete.
    for (const t of this.tracked.values()) {
      if (t.cluster === cluster && t.task.outcome === "running" && !t.stopping && !listed.has(t.task.taskArn)) {
        this.finish(t, "failed", EXTERNAL_STOP_REASON);
      }
    }
    const fresh = [...listed].filter((arn) => !this.tracked.has(arn) && !this.ignored.has(arn));
    for (let i = 0; i < fresh.length; i += DESCRIBE_BATCH) {
      const out = await this.o.ecs.send(new DescribeTasksCommand({ cluster, tasks: fresh.slice(i, i + DESCRIBE_BATCH), include: ["TAGS"] }));
      for (const t of out.tasks ?? []) {
        if (!t.taskArn || this.tracked.has(t.taskArn)) continue;
        if (isServiceTask(t)) {
          this.ignored.add(t.taskArn);
          continue;
        }
        this.track(cluster, toSimTask(t, Date.now()));
      }
    }
  }

  private track(cluster: string, task: SimTask): void {
    const duration = Math.max(0, this.o.durationMs(task));
    const entry: Tracked = { task, cluster, dueAtMs: task.seenAtMs + duration, timer: undefined, stopping: false };
    // The loop keeps the process alive while the simulator runs; a pending stop alone must not.
    entry.timer = setTimeout(() => void this.stopOne(entry), duration).unref();
    this.tracked.set(task.taskArn, entry);
    this.peak = Math.max(this.peak, this.stats().running);
    this.o.onEvent?.({ kind: "started", task: { ...task } });
  }

  private async stopOne(t: Tracked): Promise<void> {
    if (!this.running || t.stopping || t.task.outcome !== "running") return;
    const outcome = this.o.outcome?.(t.task) ?? "succeeded";
    // A failed StopTask is retried by the next poll, since its due time has passed.
    await this.stopTask(t, outcome, stopReason(outcome)).catch(() => undefined);
  }

  /** StopTask, then the task is finished; `stopping` meanwhile, so a poll does not take it for stopped by someone else. */
  private async stopTask(t: Tracked, outcome: TaskOutcome | "interrupted", reason: string): Promise<void> {
    t.stopping = true;
    try {
      await this.o.ecs.send(new StopTaskCommand({ cluster: t.cluster, task: t.task.taskArn, reason }));
      this.finish(t, outcome, reason);
    } finally {
      t.stopping = false;
    }
  }

  private finish(t: Tracked, outcome: TaskOutcome | "interrupted", reason: string): void {
    clearTimeout(t.timer);
    t.task.outcome = outcome;
    t.task.stoppedAtMs = Date.now();
    t.task.stoppedReason = reason;
    this.o.onEvent?.({ kind: "stopped", task: { ...t.task } });
  }
}
