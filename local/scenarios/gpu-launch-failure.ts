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
import { FleetRun, fleetScenario } from "./gpu-fleet-run";
import { type ScenarioContext, timing, waitFor } from "./scenario";

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

export const gpuLaunchFailure = fleetScenario(
  "gpu-launch-failure",
  "the GPU fleet cannot launch: the launch alarm fires to the alert topic, and clears once launches succeed",
  async (ctx) => {
    const run = new LaunchFailureRun(ctx, "gpu-launch-failure");
    await run.startCold();
    await run.failLaunches(`launch-${ctx.runId}`, WINDOWS[ctx.size]);
    await run.waitForAlarm();
    await run.checkFiring();
    await run.restoreLaunches();
    await run.toZero();
    const servedTwice = run.servedTwice();
    return run.report(servedTwice);
  },
);

/** One play of the scenario: the launch alarm, and when launches failed, the alarm fired, launches came back and it cleared. */
class LaunchFailureRun extends FleetRun {
  private readonly alarm = launchAlarmOf(this.platform.topology.alarms, this.fleet.groupName);
  private readonly windowMinutes = this.alarm ? minutesToFire(this.alarm) : 0;
  private firedBefore = 0;
  private failingFrom = 0;
  private firedAt: number | null = null;
  private firing: AlarmOutcome["firings"][number] | undefined;
  private desiredAtAlarm = 0;
  private servedWhileFailing = 0;
  private restoredAt = 0;
  private drained: number | null = null;
  /** When the alarm went back to OK, in simulated time since the run's start (the evaluation's own instant), and when launches succeeded again. */
  private okAtSimMs: number | undefined;
  private restoredSimMs = 0;

  constructor(ctx: ScenarioContext, name: string) {
    super(ctx, name);
    if (!this.alarm) this.failures.push(`the program declares no alarm on ${this.fleet.groupName}'s GroupInServiceInstances`);
    else if (this.outcome()?.unsupported) this.failures.push(`the run cannot evaluate ${this.alarm.logicalName}: ${this.outcome()?.unsupported}`);
  }

  private outcome(): AlarmOutcome | undefined {
    return this.platform.alarms.report().alarms.find((a) => a.alarm === this.alarm?.name);
  }

  /** From here on no launch succeeds (EC2's InsufficientInstanceCapacity); then the windows arrive. */
  async failLaunches(sessionId: string, n: number): Promise<void> {
    this.firedBefore = this.outcome()?.firings.length ?? 0;
    this.fleet.failLaunches(LAUNCH_FAILURE);
    this.failingFrom = await this.send(sessionId, n);
  }

  /** The alarm: desired above in service for its whole window, once the scaler has asked for an instance. */
  async waitForAlarm(): Promise<void> {
    const { alarm } = this;
    const budgetMs = this.platform.clock.real((this.windowMinutes + 3 * this.settings.scaleCheckMinutes + 3) * 60_000) + 15_000;
    this.firedAt = await this.until(() => (this.outcome()?.firings.length ?? 0) > this.firedBefore, {
      timeoutMs: alarm ? budgetMs : 0,
      tick: this.progress("launches failing, waiting for the launch alarm"),
      failure: alarm && `${alarm.logicalName} did not fire within ${Math.round(budgetMs / 1000)} s of launches failing`,
    });
    this.firing = this.outcome()?.firings[this.firedBefore];
    this.desiredAtAlarm = this.fleet.snapshot().desired;
    this.servedWhileFailing = this.got();
  }

  /** Not before its window has passed, and to every alert topic of its actions; nothing served meanwhile. */
  async checkFiring(): Promise<void> {
    const { alarm, firedAt, windowMinutes } = this;
    if (alarm && firedAt !== null) {
      // It may not fire before its window has passed: a scale-out that boots must never raise it.
      const simMinutes = ((firedAt - this.failingFrom) * this.speed) / 60_000;
      if (simMinutes < windowMinutes)
        this.failures.push(
          `${alarm.logicalName} fired ${simMinutes.toFixed(1)} simulated minutes after launches began failing, before its ${windowMinutes}-minute window`,
        );
      const alertTopics = this.platform.topology.topics.filter((t) => alarm.alarmActions.includes(t.arn)).map((t) => t.name);
      // The evaluation shows the firing as soon as its sample is in; the publish to the topic follows it.
      await waitFor(() => alertTopics.every((topic) => (this.outcome()?.notified ?? []).includes(topic)), { timeoutMs: 10_000 });
      const notified = this.outcome()?.notified ?? [];
      if (alertTopics.length === 0) this.failures.push(`${alarm.logicalName} has no alarm action on a topic of the program`);
      for (const topic of alertTopics) if (!notified.includes(topic)) this.failures.push(`${alarm.logicalName} fired without notifying ${topic}`);
    }
    if (this.servedWhileFailing > 0) this.failures.push(`${this.servedWhileFailing} windows were served while no instance could launch`);
  }

  /** Capacity comes back: the held attempts join the group, the backlog drains, the alarm clears. */
  async restoreLaunches(): Promise<void> {
    const { alarm, firedAt } = this;
    this.fleet.failLaunches(undefined);
    this.restoredAt = Date.now();
    this.restoredSimMs = this.platform.clock.now() - this.platform.clock.t0;
    this.drained = await this.drain("launches succeed again, draining");
    const cleared = await this.until(() => this.outcome()?.firings[this.firedBefore]?.okAtMs !== undefined, {
      timeoutMs: alarm && firedAt !== null ? this.platform.clock.real(3 * 60_000) + 5_000 : 0,
      tick: () => this.tick("waiting for the launch alarm to clear", this.burst.n, this.burst.n),
      failure: alarm && firedAt !== null ? `${alarm.logicalName} stayed in ALARM after launches succeeded again` : undefined,
    });
    this.okAtSimMs = cleared === null ? undefined : this.outcome()?.firings[this.firedBefore]?.okAtMs;
  }

  report(servedTwice: number): Promise<ScenarioSummary> {
    const { okAtSimMs } = this;
    return this.sumUp(
      {
        "launches failing → launch alarm": this.span(this.failingFrom, this.firedAt),
        "launches succeed → alarm back to OK": timing(okAtSimMs === undefined ? null : this.platform.clock.real(okAtSimMs - this.restoredSimMs), this.speed),
        "launches succeed → backlog drained": this.span(this.restoredAt, this.drained),
      },
      {
        alarm: this.alarm?.name ?? null,
        alarmWindowMinutes: this.windowMinutes,
        alarmValue: this.firing?.value ?? null,
        notified: this.outcome()?.notified ?? [],
        desiredAtAlarm: this.desiredAtAlarm,
        servedWhileFailing: this.servedWhileFailing,
        servedTwice,
        gateway: this.gatewaySteps(),
      },
    );
  }
}
