/**
 * gpu-burst (issue 27, docs/parts/ingest.md "The fleet"): one burst of windows to the GPU fleet at
 * `max: 1`, then the same burst at the stack's max, in one run: one group, re-sized between the
 * phases (UpdateAutoScalingGroup), each phase starting from zero instances. Reports both drain times
 * in simulated seconds and their ratio, then lets the scaler take the group to zero on its own and
 * prices the fleet against one GPU and an always-on GPU. Needs a stack in fleet mode (prod); not in
 * the default run (several real minutes): `npm start -- --stack prod --scenario gpu-burst`.
 */
import type { ScenarioSummary } from "../show/view";
import { BURST_WINDOWS, FleetRun, fleetScenario } from "./gpu-fleet-run";

/** The fleet at its max must drain the burst in at most this share of the time one instance takes. */
export const MAX_DRAIN_RATIO = 1 / 3;

export const gpuBurst = fleetScenario(
  "gpu-burst",
  "one burst of windows at max 1, then at the stack's max; drain times, scale to zero and cost",
  async (ctx) => {
    const run = new BurstRun(ctx, "gpu-burst");
    try {
      for (const max of [1, run.settings.maxSize]) await run.phase(max);
    } finally {
      await run.setMax(run.settings.maxSize);
    }
    await run.checkScaleToZero();
    return run.report(run.checkDrainRatio());
  },
);

/** One play of the scenario: each phase's drain, and when the group reached zero afterwards. */
class BurstRun extends FleetRun {
  private readonly n = BURST_WINDOWS[this.ctx.size];
  private readonly drains: Array<{ max: number; simSeconds: number | null; servedTwice: number; processed: number; sessionId: string }> = [];
  private lastPhaseStart = this.started;
  private lastDrained: number | null = null;
  private zeroSim: number | null = null;
  private goneAt: number | null = null;

  /** One burst at `max`, from zero instances, drained. */
  async phase(max: number): Promise<void> {
    await this.startCold(max);
    const sessionId = `burst-${max}-${this.ctx.runId}`;
    this.ctx.note(`gpu-burst: ${this.n} windows at max ${max}`);
    this.lastPhaseStart = await this.send(sessionId, this.n);
    const done = await this.drain(`max ${max}`);
    this.lastDrained = done;
    const simSeconds = this.span(this.lastPhaseStart, done)?.simulatedSeconds ?? null;
    this.drains.push({ max, simSeconds, servedTwice: this.processed(sessionId).twice, processed: this.got(), sessionId });
  }

  /** The scaler takes the group to 0 on its own: within idleStopMinutes plus one check of the last drain. */
  async checkScaleToZero(): Promise<void> {
    const { desiredZeroAt, goneAt } = await this.waitForScaleToZero("after the burst: scale to zero");
    const { idleStopMinutes, scaleCheckMinutes } = this.settings;
    this.goneAt = goneAt;
    this.zeroSim = this.span(this.lastDrained, desiredZeroAt)?.simulatedSeconds ?? null;
    if (this.zeroSim === null) this.failures.push(`the group did not scale to 0 within idleStopMinutes (${idleStopMinutes}) plus two checks`);
    else if (this.zeroSim > (idleStopMinutes + scaleCheckMinutes) * 60 + 30)
      this.failures.push(
        `the group's desired capacity reached 0 ${this.zeroSim} s after the burst drained, more than idleStopMinutes plus one check (${(idleStopMinutes + scaleCheckMinutes) * 60} s)`,
      );
  }

  /** The ratio of the drain at the stack's max to the drain at max 1: at most MAX_DRAIN_RATIO; nothing served twice. */
  checkDrainRatio(): number | null {
    const [one, many] = this.drains;
    const ratio = one?.simSeconds && many?.simSeconds ? Math.round((many.simSeconds / one.simSeconds) * 1000) / 1000 : null;
    if (ratio === null) this.failures.push("a phase did not drain, so there is no ratio");
    else if (ratio > MAX_DRAIN_RATIO)
      this.failures.push(`max ${many?.max} drained in ${ratio} of max 1's time; expected at most ${MAX_DRAIN_RATIO.toFixed(3)}`);
    for (const d of this.drains) if (d.servedTwice > 0) this.failures.push(`max ${d.max}: ${d.servedTwice} windows were served twice`);
    return ratio;
  }

  /** Cost: the last phase's instances as they ran (until the group reached 0); then the summary. */
  report(ratio: number | null): Promise<ScenarioSummary> {
    const { drains, zeroSim, speed } = this;
    const cost = this.cost(this.lastPhaseStart, (drains[0]?.simSeconds ?? 0) + this.settings.idleStopMinutes * 60, this.goneAt);
    if (cost.unpriced.length) this.failures.push(`no price for ${cost.unpriced.join(", ")} in local/prices.ts`);
    const simTiming = (simSeconds: number | null) =>
      simSeconds === null ? null : { wallMs: Math.round((simSeconds * 1000) / speed), simulatedSeconds: simSeconds };
    const timings = Object.fromEntries([
      ...drains.map((d) => [`drain at max ${d.max}`, simTiming(d.simSeconds)]),
      ["drained → group at 0", simTiming(zeroSim)],
    ]);
    const counts = { sent: this.n * drains.length, processed: drains.reduce((s, d) => s + d.processed, 0), sessions: drains.map((d) => d.sessionId) };
    return this.sumUp(
      timings,
      {
        windowsPerBurst: this.n,
        drainSimSeconds: Object.fromEntries(drains.map((d) => [`max${d.max}`, d.simSeconds])),
        drainRatio: ratio,
        servedTwice: drains.reduce((s, d) => s + d.servedTwice, 0),
        instances: this.fleet.instances().length,
        cost: cost.rows,
        savedPerDayAgainstAlwaysOnUsd: cost.savedPerDayUsd,
        gateway: this.gatewaySteps(),
        loadBalancerRefused: this.fleet.lb.refusedRequests(),
      },
      counts,
    );
  }
}
