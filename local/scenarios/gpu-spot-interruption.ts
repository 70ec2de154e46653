/**
 * gpu-spot-interruption (issue 27, docs/parts/ingest.md "The fleet"): a burst to the GPU fleet at the
 * stack's max; once a Spot instance serves windows, EC2's two-minute interruption notice for it (the
 * runtime's stand-in: moto has no Spot interruptions). The group takes it out without lowering desired
 * capacity and launches a replacement (capacity rebalancing); the load balancer stops sending it
 * windows at once; it finishes what it holds within the drain; whatever it still held at the reclaim
 * fails its POST and comes back through SQS. Checks: nothing lost, nothing served twice, capacity back
 * at desired. Needs a stack in fleet mode: `npm start -- --stack prod --scenario gpu-spot-interruption`.
 */
import type { ScenarioSummary } from "../show/view";
import { BURST_WINDOWS, costTable, FleetRun, simSecondsOf } from "./gpu-fleet-run";
import { peekAll, type Scenario, type ScenarioContext, summary, timing, waitFor } from "./scenario";

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
    // Afterwards the group settles where the scaler wants it: as many in service as desired (a few checks at most).
    const settled = await waitFor(
      () => {
        const s = run.fleet.snapshot();
        return s.inService === s.desired && s.draining === 0;
      },
      { timeoutMs: platform.clock.real(5 * run.settings.scaleCheckMinutes * 60_000) + 5_000, tick: () => run.tick("settling", n, n) },
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
        "burst drained": drained === null ? null : timing(drained - phaseStart, speed),
      },
      details: {
        interrupted: victim ?? null,
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
