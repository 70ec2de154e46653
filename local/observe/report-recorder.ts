/**
 * What the HTML report (../show/report.ts) draws, recorded while the run goes: on every round of the
 * run's depth sampler (./depth-sampler.ts, which the alarms use too) the depth of every queue,
 * the GPU's phase and deliveries, and the ECS tasks running; the GPU's starts and stops as events;
 * and when each scenario ran. Reading the GPU simulator and the task simulator is in-process and
 * asks moto nothing, so recording adds no poller.
 */
import type { DepthRound, DepthSource } from "./depth-sampler";
import type { SimTask } from "../hosts/ecs-tasks";
import type { FleetSnapshot } from "../hosts/gpu-fleet";
import type { GpuServiceState } from "../hosts/gpu-host";
import type { LocalQueue } from "../provision/topology-types";

/** The GPU as a chart shows it: its instance not running, running but the service not up yet, or serving. */
export type GpuPhase = "stopped" | "booting" | "serving";

export interface RecordedSample {
  /** Real epoch ms of the round. */
  realTimeMs: number;
  /** Messages on each queue (visible, in flight and delayed), by logical name; a failed reading is missing. */
  depths: Record<string, number>;
  /** Absent when the program has no GPU instance. */
  gpu?: { phase: GpuPhase; delivered: number };
  /** Absent without a GPU fleet: its desired capacity, instances in service and windows processed. */
  fleet?: FleetSnapshot & { delivered: number };
  /** ECS tasks started by RunTask and still running. */
  tasksRunning: number;
}

/** Something that happened at an instant, drawn as a line across the timeline. */
export interface RecordedEvent {
  realTimeMs: number;
  label: string;
}

export interface ScenarioWindow {
  name: string;
  title: string;
  /** The queues (logical names) the scenario is about: always charted, even when flat. */
  queues: string[];
  startMs: number;
  /** Absent while the scenario runs. */
  endMs?: number;
}

export interface RunRecorderOptions {
  queues: LocalQueue[];
  depths: DepthSource;
  /** The dev GPU instance's host (platform.gpu), read only. */
  gpu?: { state(): GpuServiceState; received(): unknown[] };
  /** The GPU fleet's stand-ins (platform.fleet), read only. */
  fleet?: { snapshot(): FleetSnapshot; received(): unknown[] };
  tasks: () => SimTask[];
}

export function gpuPhase(s: Pick<GpuServiceState, "instanceState" | "serving">): GpuPhase {
  if (s.instanceState !== "running") return "stopped";
  return s.serving ? "serving" : "booting";
}

export class RunRecorder {
  private readonly samples: RecordedSample[] = [];
  private readonly events: RecordedEvent[] = [];
  private readonly windows: ScenarioWindow[] = [];
  private readonly logicalNames: Map<string, string>;
  private lastGpu?: { running: number | null; serving: number | null; instanceState: string };

  constructor(private readonly opts: RunRecorderOptions) {
    this.logicalNames = new Map(opts.queues.map((q) => [q.name, q.logicalName]));
  }

  start(): void {
    this.opts.depths.subscribe((round) => this.record(round));
  }

  scenarioStarted(s: { name: string; title: string; queues: string[] }, atMs = Date.now()): void {
    this.windows.push({ ...s, startMs: atMs });
  }

  scenarioEnded(name: string, atMs = Date.now()): void {
    const w = this.windows.findLast((x) => x.name === name && x.endMs === undefined);
    if (w) w.endMs = atMs;
  }

  /** Everything recorded so far (copies). */
  recorded(): { samples: RecordedSample[]; events: RecordedEvent[]; windows: ScenarioWindow[] } {
    return { samples: [...this.samples], events: [...this.events], windows: this.windows.map((w) => ({ ...w })) };
  }

  private record(round: DepthRound): void {
    const depths: Record<string, number> = {};
    for (const [name, d] of round.depths) depths[this.logicalNames.get(name) ?? name] = d.visible + d.inFlight + d.delayed;
    const sample: RecordedSample = { realTimeMs: round.realTimeMs, depths, tasksRunning: this.opts.tasks().filter((t) => t.outcome === "running").length };
    const gpu = this.opts.gpu;
    if (gpu) {
      const state = gpu.state();
      sample.gpu = { phase: gpuPhase(state), delivered: gpu.received().length };
      this.noteGpuEvents(state, round.realTimeMs);
    }
    const fleet = this.opts.fleet;
    if (fleet) sample.fleet = { ...fleet.snapshot(), delivered: fleet.received().length };
    this.samples.push(sample);
  }

  /** The GPU's host stamps when it saw the instance running and when serving began; a stop is seen at the round. */
  private noteGpuEvents(s: GpuServiceState, roundMs: number): void {
    const last = this.lastGpu;
    if (last !== undefined) {
      if (s.runningSinceMs !== null && s.runningSinceMs !== last.running) this.events.push({ realTimeMs: s.runningSinceMs, label: "GPU started" });
      if (s.servingSinceMs !== null && s.servingSinceMs !== last.serving) this.events.push({ realTimeMs: s.servingSinceMs, label: "GPU serving" });
      if (last.instanceState === "running" && s.instanceState !== "running") this.events.push({ realTimeMs: roundMs, label: "GPU stopped" });
    }
    this.lastGpu = { running: s.runningSinceMs, serving: s.servingSinceMs, instanceState: s.instanceState };
  }
}
