/**
 * gpu-burst (issue 27, docs/parts/ingest.md "The fleet"): one burst of windows to the GPU fleet at
 * `max: 1`, then the same burst at the stack's max, in one run: one group, re-sized between the
 * phases (UpdateAutoScalingGroup), each phase starting from zero instances. Reports both drain times
 * in simulated seconds and their ratio, then lets the scaler take the group to zero on its own and
 * prices the fleet against one GPU and an always-on GPU. Needs a stack in fleet mode (prod); not in
 * the default run (several real minutes): `npm start -- --stack prod --scenario gpu-burst`.
 */
import type { ScenarioSummary } from "../show/view";
import { BURST_WINDOWS, costTable, FleetRun, simSecondsOf } from "./gpu-fleet-run";
import { peekAll, type Scenario, type ScenarioContext, summary, timing } from "./scenario";

/** The fleet at its max must drain the burst in at most this share of the time one instance takes. */
export const MAX_DRAIN_RATIO = 1 / 3;

export const gpuBurst: Scenario = {
  name: "gpu-burst",
  title: "one burst of windows at max 1, then at the stack's max; drain times, scale to zero and cost",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  gpuMode: "fleet",
  optIn: true,
  async run(ctx: ScenarioContext): Promise<ScenarioSummary> {
    const run = new FleetRun(ctx, "gpu-burst");
    const { platform } = ctx;
    const speed = platform.clock.speed;
    const started = Date.now();
    const n = BURST_WINDOWS[ctx.size];
    const phases = [1, run.settings.maxSize];
    const drains: Array<{ max: number; simSeconds: number | null; servedTwice: number; processed: number; sessionId: string }> = [];
    let lastPhaseStart = started;
    let lastDrained: number | null = null;
    try {
      for (const max of phases) {
        await run.setMax(max);
        await run.toZero();
        const sessionId = `burst-${max}-${ctx.runId}`;
        ctx.note(`gpu-burst: ${n} windows at max ${max}`);
        lastPhaseStart = Date.now();
        await run.send(sessionId, n);
        const done = await run.drain(sessionId, n, `max ${max}`, 600_000);
        lastDrained = done;
        drains.push({
          max,
          simSeconds: done === null ? null : (timing(done - lastPhaseStart, speed)?.simulatedSeconds ?? null),
          servedTwice: run.processed(sessionId).twice,
          processed: run.processed(sessionId, n).got,
          sessionId,
        });
      }
    } finally {
      await run.setMax(run.settings.maxSize);
    }
    const { desiredZeroAt: zeroAt, goneAt } = await run.waitForScaleToZero("after the burst: scale to zero");
    const { idleStopMinutes, scaleCheckMinutes } = run.settings;
    const zeroSim = zeroAt === null || lastDrained === null ? null : (timing(zeroAt - lastDrained, speed)?.simulatedSeconds ?? null);
    if (zeroSim === null) run.failures.push(`the group did not scale to 0 within idleStopMinutes (${idleStopMinutes}) plus two checks`);
    else if (zeroSim > (idleStopMinutes + scaleCheckMinutes) * 60 + 30)
      run.failures.push(
        `the group's desired capacity reached 0 ${zeroSim} s after the burst drained, more than idleStopMinutes plus one check (${(idleStopMinutes + scaleCheckMinutes) * 60} s)`,
      );

    const [one, many] = drains;
    const ratio = one?.simSeconds && many?.simSeconds ? Math.round((many.simSeconds / one.simSeconds) * 1000) / 1000 : null;
    if (ratio === null) run.failures.push("a phase did not drain, so there is no ratio");
    else if (ratio > MAX_DRAIN_RATIO) run.failures.push(`max ${many?.max} drained in ${ratio} of max 1's time; expected at most ${MAX_DRAIN_RATIO.toFixed(3)}`);
    for (const d of drains) if (d.servedTwice > 0) run.failures.push(`max ${d.max}: ${d.servedTwice} windows were served twice`);

    // Cost: the last phase's instances as they ran (until the group reached 0).
    const now = Date.now();
    const lives = run.fleet
      .instances()
      .filter((r) => r.launchedAtMs >= lastPhaseStart)
      .map((r) => ({ instanceType: r.instanceType, market: r.market, simSeconds: simSecondsOf(r, now, speed) }));
    const spanSim = ((goneAt ?? now) - lastPhaseStart) * (speed / 1000);
    const cost = costTable({ lives, oneGpuSimSeconds: (one?.simSeconds ?? 0) + idleStopMinutes * 60, spanSimSeconds: spanSim, settings: run.settings });
    if (cost.unpriced.length) run.failures.push(`no price for ${cost.unpriced.join(", ")} in local/prices.ts`);
    for (const row of cost.rows) ctx.note(`gpu-burst cost: ${row.what}: ${row.instanceHours} instance-h, $${row.usd ?? "?"}`);

    const quarantined = (await peekAll(platform, run.quarantine)).filter((m) => drains.some((d) => (m.Body ?? "").includes(d.sessionId)));
    const [left, inDlq] = await Promise.all([platform.depth(run.ingest), platform.depth(run.dlq)]);
    return summary({
      scenario: "gpu-burst",
      wallMs: Date.now() - started,
      sent: n * drains.length,
      processed: drains.reduce((s, d) => s + d.processed, 0),
      quarantined: quarantined.length,
      inDlq: inDlq.visible + inDlq.inFlight + inDlq.delayed,
      remaining: left.visible + left.inFlight + left.delayed,
      timings: Object.fromEntries([
        ...drains.map((d) => [
          `drain at max ${d.max}`,
          d.simSeconds === null ? null : { wallMs: Math.round((d.simSeconds * 1000) / speed), simulatedSeconds: d.simSeconds },
        ]),
        ["drained → group at 0", zeroSim === null ? null : { wallMs: Math.round((zeroSim * 1000) / speed), simulatedSeconds: zeroSim }],
      ]),
      details: {
        windowsPerBurst: n,
        drainSimSeconds: Object.fromEntries(drains.map((d) => [`max${d.max}`, d.simSeconds])),
        drainRatio: ratio,
        servedTwice: drains.reduce((s, d) => s + d.servedTwice, 0),
        instances: run.fleet.instances().length,
        cost: cost.rows,
        savedPerDayAgainstAlwaysOnUsd: cost.savedPerDayUsd,
        gateway: run.gatewaySteps(),
        loadBalancerRefused: run.fleet.lb.refusedRequests(),
      },
      failures: run.failures,
    });
  },
};
