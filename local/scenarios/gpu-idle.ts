/**
 * gpu-idle (docs/parts/ingest.md, "Idle stop"): bursts of windows separated by idle gaps longer
 * than gpu.idleStopMinutes, over a couple of simulated hours. The idle check stops the GPU after each
 * gap; the next burst starts it again (window retries → DLQ → StartInstances), with nothing lost.
 * Reports the GPU's running time against an always-on GPU, in dollars at the stack's
 * local/prices.ts. Not in the default run: it waits out real idle windows (about 3 minutes at
 * speed 60); run it with `npm start -- --scenario gpu-idle`.
 */
import { parseIdleConfig } from "../../functions/ingest/config";
import { sessionWindows } from "../hosts/fake-model";
import { ON_DEMAND_USD_PER_HOUR } from "../prices";
import type { Topology } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { burstBodies } from "./gpu-fleet-run";
import { gpuOf, keyTimings, type Scenario, ScenarioRun, sendAll, waitFor } from "./scenario";

/** Each gap, from a burst's last delivery to the next burst, is this many idle windows long. */
const SIZES = { small: { bursts: 3, windows: 5, gapIdleWindows: 1.5 }, default: { bursts: 3, windows: 20, gapIdleWindows: 2 } } as const;

/** The idle check's function, as the program names it (the ingest part's `gpu-idle` check). */
export const IDLE_CHECK_FUNCTION = "ingest-gpu-idle";

/**
 * Pure: the GPU's idle window and type as the program deployed them (the idle check's environment,
 * through its own parser, and the instance's recorded type), and the local price table's figure for
 * that type. Never the stack file: the recording is what runs.
 */
export function gpuCostSettings(topology: Pick<Topology, "functions" | "instances">, prices: Readonly<Record<string, number>> = ON_DEMAND_USD_PER_HOUR) {
  const idle = topology.functions.find((f) => f.logicalName === IDLE_CHECK_FUNCTION);
  if (!idle) throw new Error(`the recording has no ${IDLE_CHECK_FUNCTION} function (a stack in instance mode has one)`);
  const instanceType = topology.instances[0]?.instanceType;
  if (instanceType === undefined) throw new Error("the recording has no GPU instance with an instance type");
  const { idleStopMinutes } = parseIdleConfig(idle.environment);
  return { idleStopMinutes, instanceType, usdPerHour: prices[instanceType] };
}

/** Pure: running time against always-on, in hours and dollars. */
export function gpuCost(runningSimSeconds: number, totalSimSeconds: number, usdPerHour: number | undefined) {
  const usd = (seconds: number) => (usdPerHour === undefined ? null : Math.round((seconds / 3600) * usdPerHour * 100) / 100);
  return {
    runningSimSeconds: Math.round(runningSimSeconds),
    alwaysOnSimSeconds: Math.round(totalSimSeconds),
    usd: usd(runningSimSeconds),
    alwaysOnUsd: usd(totalSimSeconds),
    savedShare: totalSimSeconds > 0 ? Math.round((1 - runningSimSeconds / totalSimSeconds) * 1000) / 1000 : 0,
  };
}

export const gpuIdle: Scenario = {
  name: "gpu-idle",
  title: "bursts and idle gaps: the idle check stops the GPU, the next burst starts it, nothing lost",
  requires: ["ingest", "ingest-dlq", "ingest-gpu-idle"],
  gpuMode: "instance",
  optIn: true,
  async run(ctx) {
    const run = new IdleRun(ctx, this.name);
    for (let b = 0; b < run.bursts; b += 1) {
      await run.burst(b);
      await run.waitForIdleStop(b);
      if (b < run.bursts - 1) await run.restOfGap(b);
    }
    return run.report();
  },
};

class IdleRun extends ScenarioRun {
  private readonly gpu = gpuOf(this.platform);
  private readonly size = SIZES[this.ctx.size];
  readonly bursts = this.size.bursts;
  private readonly ingest = this.platform.queue("ingest");
  private readonly dlq = this.platform.queue("ingest-dlq");
  private readonly sessionId = `idle-${this.ctx.runId}`;
  // The program's own parser: the same defaults and checks `pulumi up` applies to the stack file.
  private readonly settings = gpuCostSettings(this.platform.topology);
  private sent = 0;
  private readonly startsBefore = this.gpu.state().starts;
  private stops = 0;
  private lastState = this.gpu.state().instanceState;
  private runningRealMs = 0;
  private lastSampleMs = Date.now();
  private readonly burstSent: number[] = [];
  private readonly burstDelivered: Array<number | null> = [];
  private readonly stoppedAt: Array<number | null> = [];

  async burst(b: number): Promise<void> {
    const bodies = burstBodies(this.sessionId, this.size.windows, this.sent);
    this.burstSent[b] = Date.now();
    await sendAll(this.platform, this.ingest, bodies);
    this.sent += bodies.length;
    this.ctx.note(`gpu-idle: burst ${b + 1}/${this.bursts}: ${bodies.length} windows with the GPU ${this.gpu.state().instanceState}`);
    const ok = await waitFor(() => this.delivered() >= this.sent, { timeoutMs: 180_000, tick: this.tick });
    this.burstDelivered[b] = ok ? Date.now() : null;
    if (!ok) this.failures.push(`burst ${b + 1}: only ${this.delivered()} of ${this.sent} windows reached the GPU`);
  }

  /** Idle: wait for the check to stop the GPU (idleStopMinutes, plus a check period, plus the stop). */
  async waitForIdleStop(b: number): Promise<void> {
    const budgetMs = this.platform.clock.real((this.settings.idleStopMinutes + 15) * 60_000);
    const ok = await waitFor(() => this.gpu.state().instanceState === "stopped", { timeoutMs: budgetMs, tick: this.tick });
    this.stoppedAt[b] = ok ? Date.now() : null;
    if (!ok) this.failures.push(`after burst ${b + 1} the GPU was not stopped within ${this.settings.idleStopMinutes + 15} simulated minutes`);
  }

  /** The GPU stays stopped for the rest of the gap: the time an always-on GPU would bill for nothing. */
  async restOfGap(b: number): Promise<void> {
    const gapEnd = (this.burstDelivered[b] ?? Date.now()) + this.platform.clock.real(this.size.gapIdleWindows * this.settings.idleStopMinutes * 60_000);
    await waitFor(() => Date.now() >= gapEnd, { timeoutMs: Math.max(0, gapEnd - Date.now()) + 1000, tick: this.tick });
    if (this.gpu.state().instanceState !== "stopped") this.failures.push(`the GPU ran again during the idle gap after burst ${b + 1}`);
  }

  async report(): Promise<ScenarioSummary> {
    await this.tick();
    const starts = this.gpu.state().starts - this.startsBefore;
    if (this.stops < 2) this.failures.push(`expected at least 2 idle stops, saw ${this.stops}`);
    if (starts < 2) this.failures.push(`expected at least 2 starts by the next bursts, saw ${starts}`);
    const speed = this.platform.clock.speed;
    const totalSimSeconds = ((Date.now() - this.started) * speed) / 1000;
    const cost = gpuCost((this.runningRealMs * speed) / 1000, totalSimSeconds, this.settings.usdPerHour);
    if (this.settings.usdPerHour === undefined) this.failures.push(`no price for ${this.settings.instanceType} in local/prices.ts`);
    const spans: Record<string, [number | null | undefined, number | null | undefined]> = {};
    for (let b = 0; b < this.bursts; b += 1) {
      spans[`burst ${b + 1}: sent → delivered`] = [this.burstSent[b], this.burstDelivered[b]];
      spans[`burst ${b + 1}: delivered → GPU stopped`] = [this.burstDelivered[b], this.stoppedAt[b]];
    }
    return this.summarise({
      sent: this.sent,
      processed: this.delivered(),
      quarantined: 0,
      ...(await this.left(this.ingest, this.dlq)),
      ...keyTimings(speed, spans),
      details: { gpuStops: this.stops, gpuStarts: starts, instanceType: this.settings.instanceType, idleStopMinutes: this.settings.idleStopMinutes, ...cost },
    });
  }

  private delivered(): number {
    return sessionWindows(this.gpu.ledger, this.sessionId).got;
  }

  private readonly tick = async (): Promise<void> => {
    const now = Date.now();
    const g = this.gpu.state();
    // Billing runs while the instance runs (booting included), not while stopped.
    if (this.lastState === "running") this.runningRealMs += now - this.lastSampleMs;
    if (this.lastState === "running" && g.instanceState !== "running") this.stops += 1;
    this.lastState = g.instanceState;
    this.lastSampleMs = now;
    const simMinutes = (ms: number) => ((ms * this.platform.clock.speed) / 60_000).toFixed(0);
    const delivered = this.delivered();
    const counters = { "delivered to GPU": delivered, "GPU stops": this.stops, "GPU starts": g.starts - this.startsBefore };
    await this.show({ ingest: this.ingest, "ingest-dlq": this.dlq }, { done: delivered, total: this.size.windows * this.bursts }, counters, [
      `GPU: ${g.instanceState}${g.serving ? " (serving)" : ""}, running ${simMinutes(this.runningRealMs)} of ${simMinutes(now - this.started)} simulated minutes`,
    ]);
  };
}
