/**
 * gpu-launch-failure (issue 36, docs/runbook.md "ingest-gpu-fleet-launch"): the GPU fleet cannot
 * launch (no GPU quota, no Spot capacity in any pool; the fleet's stand-in fails every launch with
 * EC2's InsufficientInstanceCapacity). Windows arrive, the scaler and the DLQ consumer want an
 * instance, none comes into service. The program's launch alarm (desired above in service, minute
 * after minute) is evaluated from the group's metrics as CloudWatch would, fires to the alert topic,
 * and goes back to OK once launches succeed and the backlog drains. Checks: the alarm fired within its
 * own window of minutes (plus a sample's slack) and notified the alert topic, nothing was served while
 * nothing could launch, and every window ends processed or quarantined with a reason (none lost).
 * Needs a stack in fleet mode: `npm start -- --stack prod --scenario gpu-launch-failure`.
 */
import type { AlarmOutcome } from "../observe/alarm-watch";
import type { LocalAlarm } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { FleetRun } from "./gpu-fleet-run";
import { peekAll, type Scenario, type ScenarioContext, summary, timing, waitFor } from "./scenario";

const WINDOWS = { small: 20, default: 60 } as const;

/** EC2's answer to a launch with no capacity, as Auto Scaling records it in the group's activities. */
export const LAUNCH_FAILURE = "InsufficientInstanceCapacity: We currently do not have sufficient capacity in the Availability Zones you requested";

/** The program's launch alarm: the metric-math alarm on the fleet group's desired and in-service counts. Pure. */
export function launchAlarmOf(alarms: readonly LocalAlarm[], groupName: string): LocalAlarm | undefined {
  return alarms.find((a) =>
    (a.queries ?? []).some((q) => q.metric?.metricName === "GroupInServiceInstances" && q.metric.dimensions.AutoScalingGroupName === groupName),
  );
}

/** Simulated minutes an alarm needs before it can fire: datapointsToAlarm periods. Pure. */
export function minutesToFire(alarm: Pick<LocalAlarm, "datapointsToAlarm" | "periodSeconds">): number {
  return (alarm.datapointsToAlarm * alarm.periodSeconds) / 60;
}

export const gpuLaunchFailure: Scenario = {
  name: "gpu-launch-failure",
  title: "the GPU fleet cannot launch: the launch alarm fires to the alert topic, and clears once launches succeed",
  requires: ["ingest", "ingest-dlq", "ingest-quarantine"],
  gpuMode: "fleet",
  optIn: true,
  async run(ctx: ScenarioContext): Promise<ScenarioSummary> {
    const run = new FleetRun(ctx, "gpu-launch-failure");
    const { platform } = ctx;
    const speed = platform.clock.speed;
    const started = Date.now();
    const n = WINDOWS[ctx.size];
    const sessionId = `launch-${ctx.runId}`;
    const alarm = launchAlarmOf(platform.topology.alarms, run.fleet.groupName);
    const outcome = (): AlarmOutcome | undefined => platform.alarms.report().alarms.find((a) => a.alarm === alarm?.name);
    if (!alarm) run.failures.push(`the program declares no alarm on ${run.fleet.groupName}'s GroupInServiceInstances`);
    else if (outcome()?.unsupported) run.failures.push(`the run cannot evaluate ${alarm.logicalName}: ${outcome()?.unsupported}`);

    await run.setMax(run.settings.maxSize);
    await run.toZero();
    const firedBefore = outcome()?.firings.length ?? 0;
    run.fleet.failLaunches(LAUNCH_FAILURE);
    const failingFrom = Date.now();
    await run.send(sessionId, n);

    // The alarm: desired above in service for its whole window, once the scaler has asked for an instance.
    const windowMinutes = alarm ? minutesToFire(alarm) : 0;
    const budgetMs = platform.clock.real((windowMinutes + 3 * run.settings.scaleCheckMinutes + 3) * 60_000) + 15_000;
    const fired = await waitFor(() => (outcome()?.firings.length ?? 0) > firedBefore, {
      timeoutMs: alarm ? budgetMs : 0,
      tick: () => run.tick("launches failing, waiting for the launch alarm", run.processed(sessionId, n).got, n),
    });
    const firedAt = fired ? Date.now() : null;
    const firing = outcome()?.firings[firedBefore];
    const desiredAtAlarm = run.fleet.snapshot().desired;
    const servedWhileFailing = run.processed(sessionId, n).got;
    if (alarm && !fired) run.failures.push(`${alarm.logicalName} did not fire within ${Math.round(budgetMs / 1000)} s of launches failing`);
    if (alarm && fired && firedAt !== null) {
      // It may not fire before its window has passed: a scale-out that boots must never raise it.
      const simMinutes = ((firedAt - failingFrom) * speed) / 60_000;
      if (simMinutes < windowMinutes)
        run.failures.push(
          `${alarm.logicalName} fired ${simMinutes.toFixed(1)} simulated minutes after launches began failing, before its ${windowMinutes}-minute window`,
        );
      const alertTopics = platform.topology.topics.filter((t) => alarm.alarmActions.includes(t.arn)).map((t) => t.name);
      // The evaluation shows the firing as soon as its sample is in; the publish to the topic follows it.
      await waitFor(() => alertTopics.every((topic) => (outcome()?.notified ?? []).includes(topic)), { timeoutMs: 10_000 });
      const notified = outcome()?.notified ?? [];
      if (alertTopics.length === 0) run.failures.push(`${alarm.logicalName} has no alarm action on a topic of the program`);
      for (const topic of alertTopics) if (!notified.includes(topic)) run.failures.push(`${alarm.logicalName} fired without notifying ${topic}`);
    }
    if (servedWhileFailing > 0) run.failures.push(`${servedWhileFailing} windows were served while no instance could launch`);

    // Capacity comes back: the held attempts join the group, the backlog drains, the alarm clears.
    run.fleet.failLaunches(undefined);
    const restoredAt = Date.now();
    const restoredSimMs = platform.clock.now() - platform.clock.t0;
    const drained = await run.drain(sessionId, n, "launches succeed again, draining", 600_000);
    const cleared = await waitFor(() => outcome()?.firings[firedBefore]?.okAtMs !== undefined, {
      timeoutMs: alarm && fired ? platform.clock.real(3 * 60_000) + 5_000 : 0,
      tick: () => run.tick("waiting for the launch alarm to clear", n, n),
    });
    // When the alarm went back to OK, in simulated time: the evaluation's own instant, not when this wait saw it.
    const okAtSimMs = outcome()?.firings[firedBefore]?.okAtMs;
    if (alarm && fired && !cleared) run.failures.push(`${alarm.logicalName} stayed in ALARM after launches succeeded again`);
    await run.toZero();

    const quarantined = (await peekAll(platform, run.quarantine)).filter((m) => (m.Body ?? "").includes(sessionId));
    const [left, inDlq] = await Promise.all([platform.depth(run.ingest), platform.depth(run.dlq)]);
    const servedTwice = run.processed(sessionId).twice;
    if (servedTwice > 0) run.failures.push(`${servedTwice} windows were served twice`);
    return summary({
      scenario: "gpu-launch-failure",
      wallMs: Date.now() - started,
      sent: n,
      processed: run.processed(sessionId, n).got,
      quarantined: quarantined.length,
      inDlq: inDlq.visible + inDlq.inFlight + inDlq.delayed,
      remaining: left.visible + left.inFlight + left.delayed,
      timings: {
        "launches failing → launch alarm": timing(firedAt === null ? null : firedAt - failingFrom, speed),
        "launches succeed → alarm back to OK": timing(cleared && okAtSimMs !== undefined ? platform.clock.real(okAtSimMs - restoredSimMs) : null, speed),
        "launches succeed → backlog drained": timing(drained === null ? null : drained - restoredAt, speed),
      },
      details: {
        alarm: alarm?.name ?? null,
        alarmWindowMinutes: windowMinutes,
        alarmValue: firing?.value ?? null,
        notified: outcome()?.notified ?? [],
        desiredAtAlarm,
        servedWhileFailing,
        servedTwice,
        gateway: run.gatewaySteps(),
      },
      failures: run.failures,
    });
  },
};
