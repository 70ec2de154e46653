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
import { BURST_WINDOWS, costTable, FleetRun, simSecondsOf } from "./gpu-fleet-run";
import { type LogLine, readSteps } from "./logs";
import { peekAll, type Scenario, type ScenarioContext, summary, timing, waitFor } from "./scenario";

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

export const gpuSpotInterruption: Scenario = {
  name: "gpu-spot-interruption",
  title: "a Spot instance of the GPU fleet interrupted in the middle of a burst: nothing lost, capacity replaced",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  gpuMode: "fleet",
  optIn: true,
  async run(ctx: ScenarioContext): Promise<ScenarioSummary> {
    const run = new FleetRun(ctx, "gpu-spot-interruption");
    const { platform } = ctx;
    const speed = platform.clock.speed;
    const started = Date.now();
    const n = BURST_WINDOWS[ctx.size];
    const sessionId = `spot-${ctx.runId}`;
    await run.setMax(run.settings.maxSize);
    await run.toZero();
    const phaseStart = Date.now();
    await run.send(sessionId, n);

    // Interrupt once a Spot instance serves windows and about a third of the burst is done.
    let victim: string | undefined;
    const found = await waitFor(
      () => {
        victim = run.fleet.spotInService();
        return victim !== undefined && run.processed(sessionId, n).got >= n / 3;
      },
      { timeoutMs: 300_000, tick: () => run.tick("waiting for a Spot instance to serve", run.processed(sessionId, n).got, n) },
    );
    let interruptedAt: number | null = null;
    let desiredAtNotice = 0;
    if (!found || victim === undefined) run.failures.push("no Spot instance served windows: nothing to interrupt (is spotPercent > 0?)");
    else {
      desiredAtNotice = run.fleet.snapshot().desired;
      interruptedAt = Date.now();
      await run.fleet.interrupt(victim, "notice");
    }

    // Capacity back: as many instances serving as desired, the victim not among them.
    let restoredAt: number | null = null;
    if (interruptedAt !== null) {
      const ok = await waitFor(
        () => {
          const s = run.fleet.snapshot();
          return s.inService >= desiredAtNotice && s.healthy >= desiredAtNotice;
        },
        { timeoutMs: 120_000, tick: () => run.tick("replacing the interrupted instance", run.processed(sessionId, n).got, n) },
      );
      restoredAt = ok ? Date.now() : null;
      if (!ok) run.failures.push(`capacity did not come back to ${desiredAtNotice} serving instances after the interruption`);
    }
    // The second, within the breaker's window: a rebalance recommendation for a Spot instance launched since the first.
    const { spotBreaker } = run.settings;
    // Two simulated minutes short of the window: the scaler compares the events' own times.
    const withinWindow = platform.clock.real(Math.max(1, spotBreaker.windowMinutes - 2) * 60_000);
    let second: string | undefined;
    let secondAt: number | null = null;
    if (interruptedAt !== null) {
      const from = interruptedAt;
      const seen = await waitFor(() => (second = run.fleet.spotInService(from)) !== undefined, {
        timeoutMs: withinWindow,
        tick: () => run.tick("waiting for a Spot instance launched since the notice to serve", run.processed(sessionId, n).got, n),
      });
      if (!seen || second === undefined) run.failures.push(`no Spot instance launched since the first interruption served within the breaker's window`);
      else {
        secondAt = Date.now();
        await run.fleet.interrupt(second, "rebalance");
      }
    }
    // The breaker: the scaler records both, opens at the second, and sets the group on demand above the base.
    let opened: LogLine | undefined;
    if (secondAt !== null) {
      await waitFor(() => (opened = readSteps(platform, SCALER, "spot_breaker_opened")[0]) !== undefined, {
        timeoutMs: platform.clock.real(5 * run.settings.scaleCheckMinutes * 60_000) + 10_000,
        tick: () => run.tick("waiting for the Spot breaker to open", run.processed(sessionId, n).got, n),
      });
      if (!opened) run.failures.push("the Spot breaker did not open after the second interruption within the window (no spot_breaker_opened)");
    }
    const drained = await run.drain(sessionId, n, "draining the burst", 600_000);
    const servedTwice = run.processed(sessionId).twice;
    if (servedTwice > 0) run.failures.push(`${servedTwice} windows were served twice`);
    // The drain is the gateway's: it sees the notice in its metadata, stops taking windows, finishes what it holds and
    // completes the lifecycle action within the hook's timeout; a hook that times out first fails the scenario.
    const victimGone = await waitFor(() => run.fleet.instances().find((r) => r.instanceId === victim)?.goneAtMs != null, { timeoutMs: 30_000 });
    const victimRecord = run.fleet.instances().find((r) => r.instanceId === victim);
    if (victim !== undefined && !(victimGone && run.gatewaySteps(victim).drain_started))
      run.failures.push(`the interrupted instance ${victim}'s gateway did not drain (${victimGone ? "no drain_started in its log" : "still there"})`);
    // The drain must fit the notice: the gateway hands back what waits for a model slot and finishes only what is at the model.
    else if (victim !== undefined && !victimRecord?.drainedByGateway)
      run.failures.push(
        `the interrupted instance ${victim}'s gateway did not finish its drain before the hook timed out: ${victimRecord?.cutOff} windows cut off`,
      );
    const finishedDuringDrain = run.fleet.received().filter((w) => w.instanceId === victim && w.atMs >= (interruptedAt ?? Number.POSITIVE_INFINITY)).length;
    // The breaker closes once its cool-down is over (the scaler's next tick), and the group returns to its mix.
    const group = run.fleet.groupName;
    const changes = () => platform.groupDistributions?.changes(group) ?? [];
    if (opened) {
      const closed = await waitFor(() => breakerSpan(changes(), secondAt ?? 0)?.closedAtMs != null, {
        timeoutMs: platform.clock.real((spotBreaker.cooldownMinutes + 2 * run.settings.scaleCheckMinutes) * 60_000) + 10_000,
        tick: () => run.tick("waiting for the Spot breaker's cool-down", n, n),
      });
      if (!closed) run.failures.push(`the Spot breaker did not close within its ${spotBreaker.cooldownMinutes}-minute cool-down and two checks`);
    }
    const span = secondAt === null ? null : breakerSpan(changes(), secondAt);
    const whileOpen = span ? launchesBetween(run.fleet.instances(), span.openedAtMs, span.closedAtMs ?? Date.now()) : { spot: 0, onDemand: 0 };
    if (span && whileOpen.spot > 0) run.failures.push(`${whileOpen.spot} Spot instances launched while the breaker was open`);
    if (span && whileOpen.onDemand === 0) run.failures.push("no on-demand replacement launched while the breaker was open");
    if (opened && !span) run.failures.push("the scaler logged spot_breaker_opened, but the group's distribution never went to 100 % on demand");
    const scalerLines = readSteps(platform, SCALER);
    const trips = metricSum(scalerLines, "SpotBreakerTrips");
    const recorded = metricSum(scalerLines, "SpotInterruptions");
    if (opened && trips < 1) run.failures.push("the scaler published no SpotBreakerTrips");
    if (secondAt !== null && recorded < 2) run.failures.push(`the scaler recorded ${recorded} Spot interruptions of its group (SpotInterruptions), not 2`);
    const closedLog = readSteps(platform, SCALER, "spot_breaker_closed")[0];
    // Afterwards the group settles where the scaler wants it: as many in service as desired (a few checks at most, and
    // Auto Scaling's replacements towards the restored mix, one boot and drain each).
    const settled = await waitFor(
      () => {
        const s = run.fleet.snapshot();
        return s.inService === s.desired && s.draining === 0;
      },
      {
        timeoutMs: platform.clock.real(5 * run.settings.scaleCheckMinutes * 60_000 + run.settings.maxSize * (platform.options.gpuBootSimMs + 120_000)) + 5_000,
        tick: () => run.tick("settling", n, n),
      },
    );
    const { desired: desiredAfter, inService: inServiceAfter } = run.fleet.snapshot();
    if (!settled) run.failures.push(`after the burst ${inServiceAfter} instances in service, desired ${desiredAfter}`);

    // Cost of this burst's instances, taken to 0 by hand afterwards (the idle stop is gpu-burst's to show).
    await run.toZero();
    const now = Date.now();
    const lives = run.fleet
      .instances()
      .filter((r) => r.launchedAtMs >= phaseStart)
      .map((r) => ({ instanceType: r.instanceType, market: r.market, simSeconds: simSecondsOf(r, now, speed) }));
    const drainSim = drained === null ? 0 : ((drained - phaseStart) * speed) / 1000;
    const cost = costTable({
      lives,
      oneGpuSimSeconds: drainSim + run.settings.idleStopMinutes * 60,
      spanSimSeconds: ((now - phaseStart) * speed) / 1000,
      settings: run.settings,
    });
    for (const row of cost.rows) ctx.note(`gpu-spot-interruption cost: ${row.what}: ${row.instanceHours} instance-h, $${row.usd ?? "?"}`);

    const quarantined = (await peekAll(platform, run.quarantine)).filter((m) => (m.Body ?? "").includes(sessionId));
    const [left, inDlq] = await Promise.all([platform.depth(run.ingest), platform.depth(run.dlq)]);
    return summary({
      scenario: "gpu-spot-interruption",
      wallMs: Date.now() - started,
      sent: n,
      processed: run.processed(sessionId, n).got,
      quarantined: quarantined.length,
      inDlq: inDlq.visible + inDlq.inFlight + inDlq.delayed,
      remaining: left.visible + left.inFlight + left.delayed,
      timings: {
        "burst → interruption notice": interruptedAt === null ? null : timing(interruptedAt - phaseStart, speed),
        "notice → capacity back": interruptedAt === null || restoredAt === null ? null : timing(restoredAt - interruptedAt, speed),
        "notice → second interruption": interruptedAt === null || secondAt === null ? null : timing(secondAt - interruptedAt, speed),
        "second interruption → breaker open": secondAt === null || !span ? null : timing(span.openedAtMs - secondAt, speed),
        "breaker open → closed": !span || span.closedAtMs === null ? null : timing(span.closedAtMs - span.openedAtMs, speed),
        "second interruption → breaker closed": secondAt === null || !span || span.closedAtMs === null ? null : timing(span.closedAtMs - secondAt, speed),
        "burst drained": drained === null ? null : timing(drained - phaseStart, speed),
      },
      details: {
        interrupted: victim ?? null,
        secondInterrupted: second ?? null,
        spotBreaker: {
          opened: span !== null,
          closed: span?.closedAtMs != null,
          interruptions: typeof opened?.interruptions === "number" ? opened.interruptions : null,
          until: typeof opened?.until === "string" ? opened.until : null,
          restoredOnDemandPercent: typeof closedLog?.on_demand_percent === "number" ? closedLog.on_demand_percent : null,
          trips,
          recordedInterruptions: recorded,
          launchedWhileOpen: whileOpen,
        },
        desiredAtNotice,
        desiredAfter,
        inServiceAfter,
        victimFinishedAfterNotice: finishedDuringDrain,
        victimCutOff: victimRecord?.cutOff ?? null,
        victimDrainedByGateway: victimRecord?.drainedByGateway ?? null,
        servedTwice,
        gateway: run.gatewaySteps(),
        loadBalancerRefused: run.fleet.lb.refusedRequests(),
        cost: cost.rows,
      },
      failures: run.failures,
    });
  },
};
