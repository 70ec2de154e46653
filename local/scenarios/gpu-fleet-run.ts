/**
 * What the GPU fleet's scenarios (gpu-burst, gpu-spot-interruption) share: the fleet's settings from
 * the recording, a burst of windows and its accounting by what each instance's fake model processed
 * (every window passes through that instance's real gateway), the group's size between phases, and
 * the cost table.
 */
import {
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  SetInstanceProtectionCommand,
  UpdateAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import * as path from "node:path";
import { sessionWindows } from "../hosts/fake-model";
import { gatewaySteps } from "../hosts/gpu-host";
import { parseScalerConfig } from "../../functions/ingest/config";
import { fleetCostUsd, type FleetInstanceRecord, type GpuFleetSimulator } from "../hosts/gpu-fleet";
import { ON_DEMAND_USD_PER_HOUR, SPOT_DISCOUNT } from "../prices";
import { parseScheduleExpression } from "../hosts/schedule-expression";
import type { Topology } from "../provision/topology-types";
import type { ScenarioSummary, Timing } from "../show/view";
import { peekAll, type Scenario, type ScenarioContext, ScenarioRun, sendAll, timing, waitFor, waitForEmpty } from "./scenario";

/** Concurrent senders of a burst. */
const SENDERS = 8;

/** Windows in one burst (the "3,000 at --size small" is the small run). */
export const BURST_WINDOWS = { small: 3_000, default: 3_000 } as const;

/** The scaler's function and its schedule, as the program names them (the ingest part's `gpu-scaler` check). */
export const SCALER_FUNCTION = "ingest-gpu-scaler";
export const SCALER_SCHEDULE = "ingest-gpu-scaler-check";

/**
 * Pure: the fleet's settings that the scenarios price and time with, as the program deployed them:
 * the group's recorded size and type, the scaler's environment (through its own parser) and its
 * schedule's rate. Never the stack file: the recording is what runs. Prices are the local table's.
 */
export function fleetSettings(
  topology: Pick<Topology, "fleets" | "functions" | "schedules">,
  prices: Readonly<Record<string, number>> = ON_DEMAND_USD_PER_HOUR,
) {
  const fleet = topology.fleets[0];
  if (!fleet) throw new Error("the recording has no GPU fleet: this stack runs one GPU instance (gpu.capacity.mode instance)");
  const scaler = topology.functions.find((f) => f.logicalName === SCALER_FUNCTION);
  if (!scaler) throw new Error(`the recording has no ${SCALER_FUNCTION} function`);
  const schedule = topology.schedules.find((s) => s.logicalName === SCALER_SCHEDULE);
  const rate = schedule === undefined ? undefined : parseScheduleExpression(schedule.expression);
  if (rate?.kind !== "rate") throw new Error(`the recording has no rate schedule ${SCALER_SCHEDULE}`);
  const instanceType = fleet.instanceType ?? fleet.spot?.instanceTypes[0];
  if (instanceType === undefined) throw new Error(`the recorded group ${fleet.groupName} has no instance type`);
  const c = parseScalerConfig(scaler.environment);
  return {
    maxSize: fleet.maxSize,
    idleStopMinutes: c.idleStopMinutes,
    scaleCheckMinutes: rate.everyMs / 60_000,
    scaleInCooldownSeconds: c.scaleInCooldownSeconds,
    instanceType,
    usdPerHour: { ...prices },
    spotDiscount: c.spotPercent > 0 ? SPOT_DISCOUNT : 0,
    spotPercent: c.spotPercent,
    spotBreaker: { interruptions: c.spotBreakerInterruptions, windowMinutes: c.spotBreakerWindowMinutes, cooldownMinutes: c.spotBreakerCooldownMinutes },
  };
}

/** Pure: an instance's billed life in simulated seconds, from launch to gone (or `nowMs`). */
export function simSecondsOf(r: Pick<FleetInstanceRecord, "launchedAtMs" | "goneAtMs">, nowMs: number, speed: number): number {
  return (((r.goneAtMs ?? nowMs) - r.launchedAtMs) * speed) / 1000;
}

/**
 * Pure: the cost table. The fleet: its instances' lives as run, Spot at the configured discount. One GPU
 * (the single-instance mode, on demand): running for `oneGpuSimSeconds`. Always on: one on-demand GPU
 * for the same span as the fleet, and for a whole day.
 */
export function costTable(args: {
  lives: Array<Pick<FleetInstanceRecord, "instanceType" | "market"> & { simSeconds: number }>;
  oneGpuSimSeconds: number;
  spanSimSeconds: number;
  settings: Pick<ReturnType<typeof fleetSettings>, "instanceType" | "usdPerHour" | "spotDiscount">;
}) {
  const { settings } = args;
  const price = settings.usdPerHour[settings.instanceType];
  const hours = (s: number) => Math.round((s / 3600) * 100) / 100;
  const onDemand = (s: number) => (price === undefined ? null : Math.round((s / 3600) * price * 100) / 100);
  const fleet = fleetCostUsd(args.lives, settings.usdPerHour, settings.spotDiscount);
  const fleetHours = hours(args.lives.reduce((sum, l) => sum + l.simSeconds, 0));
  const day = 24 * 3600;
  const alwaysOnDay = onDemand(day);
  return {
    rows: [
      { what: "the fleet, this burst (until it scaled to 0)", instanceHours: fleetHours, usd: fleet.unpriced.length ? null : fleet.usd },
      { what: "one GPU, on demand (drain at max 1, then the idle stop)", instanceHours: hours(args.oneGpuSimSeconds), usd: onDemand(args.oneGpuSimSeconds) },
      { what: "an always-on GPU, the same span", instanceHours: hours(args.spanSimSeconds), usd: onDemand(args.spanSimSeconds) },
      { what: "an always-on GPU, a day", instanceHours: 24, usd: alwaysOnDay },
    ],
    unpriced: [...new Set([...fleet.unpriced, ...(price === undefined ? [settings.instanceType] : [])])],
    savedPerDayUsd: alwaysOnDay === null || fleet.unpriced.length ? null : Math.round((alwaysOnDay - fleet.usd) * 100) / 100,
  };
}

/** A burst's windows: distinct indexes under one session id, from `from` on. Pure. */
export function burstBodies(sessionId: string, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ sessionId, userId: "local-user", windowIndex: from + i, frameCount: 30 }));
}

/** A scenario of the GPU fleet: it needs a stack in fleet mode, and runs only when named (it takes minutes). */
export function fleetScenario(name: string, title: string, run: Scenario["run"]): Scenario {
  return { name, title, requires: ["ingest", "ingest-dlq", "ingest-quarantine"], gpuMode: "fleet", optIn: true, run };
}

/** Drives the group and counts a burst by what the fleet's instances processed: the steps the GPU fleet's scenarios are recipes of. */
export class FleetRun extends ScenarioRun {
  readonly fleet: GpuFleetSimulator;
  readonly ingest = this.platform.queue("ingest");
  readonly dlq = this.platform.queue("ingest-dlq");
  readonly quarantine = this.platform.queue("ingest-quarantine");
  readonly settings: ReturnType<typeof fleetSettings>;
  readonly speed = this.platform.clock.speed;
  /** The last burst sent: its session and size. */
  burst = { sessionId: "", n: 0 };

  constructor(ctx: ScenarioContext, name: string) {
    super(ctx, name);
    if (!this.platform.fleet) throw new Error("the program declares no GPU fleet (gpu.capacity.mode fleet)");
    this.fleet = this.platform.fleet;
    // The program's own parser: the same defaults and checks `pulumi up` applies to the stack file.
    this.settings = fleetSettings(this.platform.topology);
  }

  /** Steps the gateways logged (window_claimed, window_repeat, window_conflict, lifecycle_completed…), across the fleet. */
  gatewaySteps(instanceId?: string): Record<string, number> {
    return gatewaySteps(path.join(this.platform.options.workDir, "logs"), instanceId);
  }

  /** The group's max for a phase (the operator's UpdateAutoScalingGroup; desired capacity stays the scaler's). */
  async setMax(max: number): Promise<void> {
    await this.platform.aws.autoscaling.send(new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: this.fleet.groupName, MaxSize: max }));
  }

  /** A phase starts cold: the group's max set, then the group taken to zero. */
  async startCold(max = this.settings.maxSize): Promise<void> {
    await this.setMax(max);
    await this.toZero();
  }

  /**
   * Takes the group to zero and waits until every instance has drained and gone: each phase starts
   * cold. As an operator would: scale-in protection lifted first (the scaler sets it on busy
   * instances, and Auto Scaling never takes a protected one), then desired capacity 0.
   */
  async toZero(): Promise<void> {
    const { autoscaling } = this.platform.aws;
    const group = (await autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [this.fleet.groupName] }))).AutoScalingGroups?.[0];
    const protectedIds = (group?.Instances ?? []).filter((i) => i.ProtectedFromScaleIn).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
    if (protectedIds.length > 0)
      await autoscaling.send(
        new SetInstanceProtectionCommand({ AutoScalingGroupName: this.fleet.groupName, InstanceIds: protectedIds, ProtectedFromScaleIn: false }),
      );
    await autoscaling.send(new SetDesiredCapacityCommand({ AutoScalingGroupName: this.fleet.groupName, DesiredCapacity: 0, HonorCooldown: false }));
    await this.until(() => this.emptied(), {
      timeoutMs: 60_000,
      tick: () => this.tick("to zero", 0, 0),
      failure: "the group did not reach 0 instances within a minute",
    });
  }

  /** The burst, as fast as SQS takes it: a few batch sends at once, so the burst arrives as one. Returns when it began. */
  async send(sessionId: string, n: number): Promise<number> {
    const sentAt = Date.now();
    this.burst = { sessionId, n };
    const bodies = burstBodies(sessionId, n);
    const chunk = Math.ceil(bodies.length / SENDERS);
    await Promise.all(Array.from({ length: SENDERS }, (_, i) => sendAll(this.platform, this.ingest, bodies.slice(i * chunk, (i + 1) * chunk))));
    return sentAt;
  }

  /** The session's windows the fleet's models processed: distinct ones, when the n-th finished, and those processed twice. */
  readonly processed = (sessionId: string, n?: number) => sessionWindows(this.fleet.received(), sessionId, n);

  /** The last burst's windows processed so far. */
  got(): number {
    return this.processed(this.burst.sessionId, this.burst.n).got;
  }

  /** The live view's tick for a phase of the last burst. */
  progress(phase: string): () => Promise<void> {
    return () => this.tick(phase, this.got(), this.burst.n);
  }

  /** No instance in service or draining. */
  emptied(): boolean {
    const s = this.fleet.snapshot();
    return s.inService === 0 && s.draining === 0;
  }

  /**
   * After a burst: the scaler takes the group to 0 on its own (scale-in after the cool-down, then the
   * idle stop). Returns when desired capacity reached 0 (the scaler's decision, seen within a poll)
   * and when the last instance was gone; null for what did not happen within the idle time plus two checks.
   */
  async waitForScaleToZero(label: string): Promise<{ desiredZeroAt: number | null; goneAt: number | null }> {
    const { idleStopMinutes, scaleCheckMinutes } = this.settings;
    const budgetMs = this.platform.clock.real((idleStopMinutes + 2 * scaleCheckMinutes) * 60_000) + 10_000;
    const tick = () => this.tick(label, 0, 0);
    const desiredZeroAt = await this.until(() => this.fleet.snapshot().desired === 0, { timeoutMs: budgetMs, tick });
    const goneAt = await this.until(() => this.emptied(), { timeoutMs: desiredZeroAt === null ? 0 : 30_000, tick });
    return { desiredZeroAt, goneAt: desiredZeroAt === null ? null : goneAt };
  }

  /** Waits for every window of the last burst, then for the ingest queue and its DLQ to empty; when the n-th was processed. */
  async drain(label: string, timeoutMs = 600_000): Promise<number | null> {
    const { sessionId, n } = this.burst;
    const ok = await waitFor(() => this.got() >= n, { timeoutMs, tick: this.progress(label) });
    if (!ok) this.failures.push(`${label}: only ${this.got()} of ${n} windows were processed within ${Math.round(timeoutMs / 1000)} s`);
    await waitForEmpty(this.platform, [this.ingest, this.dlq], { timeoutMs: 30_000, tick: () => this.tick(label, n, n) });
    return ok ? this.processed(sessionId, n).completedAtMs : null;
  }

  /** The last burst's windows served twice (a failure when any were). */
  servedTwice(): number {
    const twice = this.processed(this.burst.sessionId).twice;
    if (twice > 0) this.failures.push(`${twice} windows were served twice`);
    return twice;
  }

  /** The cost table for the instances launched since `from`, their lives until now; each row noted. The span ends at `spanEnd`, or now. */
  cost(from: number, oneGpuSimSeconds: number, spanEnd?: number | null): ReturnType<typeof costTable> {
    const now = Date.now();
    const lives = this.fleet
      .instances()
      .filter((r) => r.launchedAtMs >= from)
      .map((r) => ({ instanceType: r.instanceType, market: r.market, simSeconds: simSecondsOf(r, now, this.speed) }));
    const spanSimSeconds = (((spanEnd ?? now) - from) * this.speed) / 1000;
    const cost = costTable({ lives, oneGpuSimSeconds, spanSimSeconds, settings: this.settings });
    for (const row of cost.rows) this.ctx.note(`${this.name} cost: ${row.what}: ${row.instanceHours} instance-h, $${row.usd ?? "?"}`);
    return cost;
  }

  /** A key timing between two instants, null when either never came. */
  span(from: number | null | undefined, to: number | null | undefined): Timing | null {
    return from === null || from === undefined || to === null || to === undefined ? null : timing(to - from, this.speed);
  }

  /** The summary: the sessions' windows (the last burst's by default) sent, processed and quarantined, and what is left on the queues. */
  async sumUp(
    timings: ScenarioSummary["timings"],
    details: ScenarioSummary["details"],
    counts = { sent: this.burst.n, processed: this.got(), sessions: [this.burst.sessionId] },
  ): Promise<ScenarioSummary> {
    const quarantined = (await peekAll(this.platform, this.quarantine)).filter((m) => counts.sessions.some((id) => (m.Body ?? "").includes(id)));
    const left = await this.left(this.ingest, this.dlq);
    return this.summarise({ sent: counts.sent, processed: counts.processed, quarantined: quarantined.length, ...left, timings, details });
  }

  readonly tick = async (phase: string, done: number, total: number): Promise<void> => {
    const s = this.fleet.snapshot();
    const counters = { desired: s.desired, "in service": s.inService, "serving (healthy)": s.healthy, draining: s.draining };
    await this.show({ ingest: this.ingest, "ingest-dlq": this.dlq }, { done, total }, counters, [`${phase}: group ${this.fleet.groupName}`]);
  };
}
