/**
 * gpu-spot-interruption (issue 27, docs/parts/ingest.md "The fleet"; the Spot breaker, issue 39): a
 * burst to the GPU fleet at the stack's max; once a Spot instance serves windows, EC2's two-minute
 * interruption notice for it (the runtime's stand-in: moto has no Spot interruptions), put on the
 * default bus as EC2 does. The group takes it out without lowering desired capacity and launches a
 * replacement (capacity rebalancing); the load balancer stops sending it windows at once; it finishes
 * what it holds within the drain; whatever it still held at the reclaim fails its POST and comes back
 * through SQS. Then a rebalance recommendation for a Spot instance launched since, within the
 * breaker's window: the scaler records both on the group, its Spot breaker opens, the group goes on
 * demand only (Auto Scaling replacing its Spot instances), and after the cool-down back to its mix.
 * Checks: nothing lost, nothing served twice, capacity back at desired, the breaker opened (its log
 * and metric), no Spot launch while it was open, and it closed again. Needs a stack in fleet mode:
 * `npm start -- --stack prod --scenario gpu-spot-interruption`.
 */
import type { FleetInstanceRecord } from "../hosts/gpu-fleet";
import type { Distribution } from "../aws/group-stand-in";
import type { ScenarioSummary } from "../show/view";
import { BURST_WINDOWS, FleetRun, fleetScenario } from "./gpu-fleet-run";
import { type LogLine, readSteps } from "./logs";
import { waitFor } from "./scenario";

/** The scaler's function, whose log lines (steps and EMF metrics) the scenario reads. */
const SCALER = "ingest-gpu-scaler";

/**
 * When the breaker held the group on demand, from the group's distribution changes: the first change
 * to 100 % on demand above the base at or after `fromMs`, and the next change away from it (null while
 * it still holds). Pure.
 */
export function breakerSpan(
  changes: ReadonlyArray<{ atMs: number; distribution: Distribution }>,
  fromMs: number,
): { openedAtMs: number; closedAtMs: number | null } | null {
  const opened = changes.find((c) => c.atMs >= fromMs && c.distribution.onDemandPercentageAboveBaseCapacity === 100);
  if (!opened) return null;
  const closed = changes.find((c) => c.atMs > opened.atMs && c.distribution.onDemandPercentageAboveBaseCapacity !== 100);
  return { openedAtMs: opened.atMs, closedAtMs: closed?.atMs ?? null };
}

/** The instances the group launched within [fromMs, toMs), by market. Pure. */
export function launchesBetween(
  records: readonly Pick<FleetInstanceRecord, "launchedAtMs" | "market">[],
  fromMs: number,
  toMs: number,
): { spot: number; onDemand: number } {
  const within = records.filter((r) => r.launchedAtMs >= fromMs && r.launchedAtMs < toMs);
  return { spot: within.filter((r) => r.market === "spot").length, onDemand: within.filter((r) => r.market === "on-demand").length };
}

/** The sum of one EMF metric over a function's log lines (Powertools prints each flush as one JSON line). Pure. */
export function metricSum(lines: readonly LogLine[], name: string): number {
  return lines.reduce((sum, l) => {
    const value = l[name];
    return l._aws !== undefined && typeof value === "number" ? sum + value : sum;
  }, 0);
}

export const gpuSpotInterruption = fleetScenario(
  "gpu-spot-interruption",
  "a Spot instance of the GPU fleet interrupted in the middle of a burst: nothing lost, capacity replaced",
  async (ctx) => {
    const run = new SpotRun(ctx, "gpu-spot-interruption");
    await run.startCold();
    run.sentAt = await run.send(`spot-${ctx.runId}`, BURST_WINDOWS[ctx.size]);
    await run.interruptFirst();
    await run.waitForCapacity();
    await run.interruptSecond();
    await run.waitForBreakerOpen();
    run.drained = await run.drain("draining the burst");
    run.twice = run.servedTwice();
    await run.checkVictimDrained();
    await run.waitForBreakerClosed();
    const breaker = run.checkBreaker();
    await run.settle();
    // Cost of this burst's instances, taken to 0 by hand afterwards (the idle stop is gpu-burst's to show).
    await run.toZero();
    const drainSim = run.drained === null ? 0 : ((run.drained - run.sentAt) * run.speed) / 1000;
    return run.report(breaker, run.cost(run.sentAt, drainSim + run.settings.idleStopMinutes * 60));
  },
);

/** One play of the scenario: the burst, the two interruptions, the breaker they trip, and when each came. */
class SpotRun extends FleetRun {
  sentAt = 0;
  drained: number | null = null;
  twice = 0;
  private victim: string | undefined;
  private victimRecord: FleetInstanceRecord | undefined;
  private finishedAfterNotice = 0;
  private desiredAtNotice = 0;
  private interruptedAt: number | null = null;
  private restoredAt: number | null = null;
  private second: string | undefined;
  private secondAt: number | null = null;
  private opened: LogLine | undefined;
  private after = { desired: 0, inService: 0 };

  /** The first: EC2's two-minute notice, once a Spot instance serves windows and about a third of the burst is done. */
  async interruptFirst(): Promise<void> {
    const found = await this.until(() => (this.victim = this.fleet.spotInService()) !== undefined && this.got() >= this.burst.n / 3, {
      timeoutMs: 300_000,
      tick: this.progress("waiting for a Spot instance to serve"),
      failure: "no Spot instance served windows: nothing to interrupt (is spotPercent > 0?)",
    });
    if (found === null || this.victim === undefined) return;
    this.desiredAtNotice = this.fleet.snapshot().desired;
    this.interruptedAt = Date.now();
    await this.fleet.interrupt(this.victim, "notice");
  }

  /** Capacity back: as many instances serving as desired, the victim not among them. */
  async waitForCapacity(): Promise<void> {
    if (this.interruptedAt === null) return;
    const desired = this.desiredAtNotice;
    this.restoredAt = await this.until(() => this.fleet.snapshot().inService >= desired && this.fleet.snapshot().healthy >= desired, {
      timeoutMs: 120_000,
      tick: this.progress("replacing the interrupted instance"),
      failure: `capacity did not come back to ${desired} serving instances after the interruption`,
    });
  }

  /** The second, within the breaker's window: a rebalance recommendation for a Spot instance launched since the first. */
  async interruptSecond(): Promise<void> {
    const from = this.interruptedAt;
    if (from === null) return;
    // Two simulated minutes short of the window: the scaler compares the events' own times.
    const withinWindow = this.platform.clock.real(Math.max(1, this.settings.spotBreaker.windowMinutes - 2) * 60_000);
    this.secondAt = await this.until(() => (this.second = this.fleet.spotInService(from)) !== undefined, {
      timeoutMs: withinWindow,
      tick: this.progress("waiting for a Spot instance launched since the notice to serve"),
      failure: "no Spot instance launched since the first interruption served within the breaker's window",
    });
    if (this.secondAt !== null && this.second !== undefined) await this.fleet.interrupt(this.second, "rebalance");
  }

  /** The breaker: the scaler records both, opens at the second, and sets the group on demand above the base. */
  async waitForBreakerOpen(): Promise<void> {
    if (this.secondAt === null) return;
    await this.until(() => (this.opened = readSteps(this.platform, SCALER, "spot_breaker_opened")[0]) !== undefined, {
      timeoutMs: this.platform.clock.real(5 * this.settings.scaleCheckMinutes * 60_000) + 10_000,
      tick: this.progress("waiting for the Spot breaker to open"),
      failure: "the Spot breaker did not open after the second interruption within the window (no spot_breaker_opened)",
    });
  }

  /**
   * The drain is the gateway's: it sees the notice in its metadata, stops taking windows, finishes what it holds and
   * completes the lifecycle action within the hook's timeout; a hook that times out first fails the scenario.
   */
  async checkVictimDrained(): Promise<void> {
    const { victim } = this;
    const record = () => this.fleet.instances().find((r) => r.instanceId === victim);
    const gone = await waitFor(() => record()?.goneAtMs != null, { timeoutMs: 30_000 });
    this.victimRecord = record();
    if (victim !== undefined && !(gone && this.gatewaySteps(victim).drain_started))
      this.failures.push(`the interrupted instance ${victim}'s gateway did not drain (${gone ? "no drain_started in its log" : "still there"})`);
    // The drain must fit the notice: the gateway hands back what waits for a model slot and finishes only what is at the model.
    else if (victim !== undefined && !this.victimRecord?.drainedByGateway)
      this.failures.push(
        `the interrupted instance ${victim}'s gateway did not finish its drain before the hook timed out: ${this.victimRecord?.cutOff} windows cut off`,
      );
    const since = this.interruptedAt ?? Number.POSITIVE_INFINITY;
    this.finishedAfterNotice = this.fleet.received().filter((w) => w.instanceId === victim && w.atMs >= since).length;
  }

  /** The group's distribution changes (the breaker's on-demand spells among them). */
  private changes() {
    return this.platform.groupDistributions?.changes(this.fleet.groupName) ?? [];
  }

  /** The breaker closes once its cool-down is over (the scaler's next tick), and the group returns to its mix. */
  async waitForBreakerClosed(): Promise<void> {
    if (!this.opened) return;
    const { spotBreaker, scaleCheckMinutes } = this.settings;
    await this.until(() => breakerSpan(this.changes(), this.secondAt ?? 0)?.closedAtMs != null, {
      timeoutMs: this.platform.clock.real((spotBreaker.cooldownMinutes + 2 * scaleCheckMinutes) * 60_000) + 10_000,
      tick: () => this.tick("waiting for the Spot breaker's cool-down", this.burst.n, this.burst.n),
      failure: `the Spot breaker did not close within its ${spotBreaker.cooldownMinutes}-minute cool-down and two checks`,
    });
  }

  /** While the breaker was open: no Spot launch, an on-demand one; and the scaler's log and metrics. Its details. */
  checkBreaker() {
    const { opened, secondAt, failures } = this;
    const span = secondAt === null ? null : breakerSpan(this.changes(), secondAt);
    const whileOpen = span ? launchesBetween(this.fleet.instances(), span.openedAtMs, span.closedAtMs ?? Date.now()) : { spot: 0, onDemand: 0 };
    if (span && whileOpen.spot > 0) failures.push(`${whileOpen.spot} Spot instances launched while the breaker was open`);
    if (span && whileOpen.onDemand === 0) failures.push("no on-demand replacement launched while the breaker was open");
    if (opened && !span) failures.push("the scaler logged spot_breaker_opened, but the group's distribution never went to 100 % on demand");
    const scalerLines = readSteps(this.platform, SCALER);
    const trips = metricSum(scalerLines, "SpotBreakerTrips");
    const recorded = metricSum(scalerLines, "SpotInterruptions");
    if (opened && trips < 1) failures.push("the scaler published no SpotBreakerTrips");
    if (secondAt !== null && recorded < 2) failures.push(`the scaler recorded ${recorded} Spot interruptions of its group (SpotInterruptions), not 2`);
    const closedLog = readSteps(this.platform, SCALER, "spot_breaker_closed")[0];
    return {
      span,
      details: {
        opened: span !== null,
        closed: span?.closedAtMs != null,
        interruptions: typeof opened?.interruptions === "number" ? opened.interruptions : null,
        until: typeof opened?.until === "string" ? opened.until : null,
        restoredOnDemandPercent: typeof closedLog?.on_demand_percent === "number" ? closedLog.on_demand_percent : null,
        trips,
        recordedInterruptions: recorded,
        launchedWhileOpen: whileOpen,
      },
    };
  }

  /**
   * Afterwards the group settles where the scaler wants it: as many in service as desired (a few checks at most, and
   * Auto Scaling's replacements towards the restored mix, one boot and drain each).
   */
  async settle(): Promise<void> {
    const { scaleCheckMinutes, maxSize } = this.settings;
    const settled = await waitFor(
      () => {
        const s = this.fleet.snapshot();
        return s.inService === s.desired && s.draining === 0;
      },
      {
        timeoutMs: this.platform.clock.real(5 * scaleCheckMinutes * 60_000 + maxSize * (this.platform.options.gpuBootSimMs + 120_000)) + 5_000,
        tick: () => this.tick("settling", this.burst.n, this.burst.n),
      },
    );
    const { desired, inService } = this.fleet.snapshot();
    this.after = { desired, inService };
    if (!settled) this.failures.push(`after the burst ${inService} instances in service, desired ${desired}`);
  }

  report(breaker: ReturnType<SpotRun["checkBreaker"]>, cost: ReturnType<FleetRun["cost"]>): Promise<ScenarioSummary> {
    const { span } = breaker;
    const { sentAt, interruptedAt, secondAt, victimRecord } = this;
    const timings = {
      "burst → interruption notice": this.span(sentAt, interruptedAt),
      "notice → capacity back": this.span(interruptedAt, this.restoredAt),
      "notice → second interruption": this.span(interruptedAt, secondAt),
      "second interruption → breaker open": span ? this.span(secondAt, span.openedAtMs) : null,
      "breaker open → closed": span ? this.span(span.openedAtMs, span.closedAtMs) : null,
      "second interruption → breaker closed": span ? this.span(secondAt, span.closedAtMs) : null,
      "burst drained": this.span(sentAt, this.drained),
    };
    return this.sumUp(timings, {
      interrupted: this.victim ?? null,
      secondInterrupted: this.second ?? null,
      spotBreaker: breaker.details,
      desiredAtNotice: this.desiredAtNotice,
      desiredAfter: this.after.desired,
      inServiceAfter: this.after.inService,
      victimFinishedAfterNotice: this.finishedAfterNotice,
      victimCutOff: victimRecord?.cutOff ?? null,
      victimDrainedByGateway: victimRecord?.drainedByGateway ?? null,
      servedTwice: this.twice,
      gateway: this.gatewaySteps(),
      loadBalancerRefused: this.fleet.lb.refusedRequests(),
      cost: cost.rows,
    });
  }
}
