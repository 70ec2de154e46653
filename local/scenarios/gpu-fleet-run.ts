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
import type { LocalPlatform } from "../platform";
import { ON_DEMAND_USD_PER_HOUR, SPOT_DISCOUNT } from "../prices";
import { parseScheduleExpression } from "../hosts/schedule-expression";
import type { LocalQueue, Topology } from "../provision/topology-types";
import { gauges, type ScenarioContext, sendAll, waitFor } from "./scenario";

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
): {
  maxSize: number;
  idleStopMinutes: number;
  scaleCheckMinutes: number;
  scaleInCooldownSeconds: number;
  instanceType: string;
  usdPerHour: Record<string, number>;
  spotDiscount: number;
  spotPercent: number;
  spotBreaker: { interruptions: number; windowMinutes: number; cooldownMinutes: number };
} {
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

export interface CostRow {
  what: string;
  instanceHours: number;
  usd: number | null;
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
}): { rows: CostRow[]; unpriced: string[]; savedPerDayUsd: number | null } {
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

/** Drives the group and counts a burst by what the fleet's instances processed. */
export class FleetRun {
  readonly failures: string[] = [];
  readonly fleet: GpuFleetSimulator;
  readonly ingest: LocalQueue;
  readonly dlq: LocalQueue;
  readonly quarantine: LocalQueue;
  readonly settings: ReturnType<typeof fleetSettings>;

  constructor(
    readonly ctx: ScenarioContext,
    readonly name: string,
  ) {
    const { platform } = ctx;
    if (!platform.fleet) throw new Error("the program declares no GPU fleet (gpu.capacity.mode fleet)");
    this.fleet = platform.fleet;
    this.ingest = platform.queue("ingest");
    this.dlq = platform.queue("ingest-dlq");
    this.quarantine = platform.queue("ingest-quarantine");
    // The program's own parser: the same defaults and checks `pulumi up` applies to the stack file.
    this.settings = fleetSettings(platform.topology);
  }

  /** Steps the gateways logged (window_claimed, window_repeat, window_conflict, lifecycle_completed…), across the fleet. */
  gatewaySteps(instanceId?: string): Record<string, number> {
    return gatewaySteps(path.join(this.platform.options.workDir, "logs"), instanceId);
  }

  get platform(): LocalPlatform {
    return this.ctx.platform;
  }

  /** The group's max for a phase (the operator's UpdateAutoScalingGroup; desired capacity stays the scaler's). */
  async setMax(max: number): Promise<void> {
    await this.platform.aws.autoscaling.send(new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: this.fleet.groupName, MaxSize: max }));
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
    await this.platform.aws.autoscaling.send(
      new SetDesiredCapacityCommand({ AutoScalingGroupName: this.fleet.groupName, DesiredCapacity: 0, HonorCooldown: false }),
    );
    const ok = await waitFor(
      () => {
        const s = this.fleet.snapshot();
        return s.inService === 0 && s.draining === 0;
      },
      { timeoutMs: 60_000, tick: () => this.tick("to zero", 0, 0) },
    );
    if (!ok) this.failures.push("the group did not reach 0 instances within a minute");
  }

  /** The burst, as fast as SQS takes it: a few batch sends at once, so the burst arrives as one. */
  async send(sessionId: string, n: number): Promise<void> {
    const bodies = burstBodies(sessionId, n);
    const chunk = Math.ceil(bodies.length / SENDERS);
    await Promise.all(Array.from({ length: SENDERS }, (_, i) => sendAll(this.platform, this.ingest, bodies.slice(i * chunk, (i + 1) * chunk))));
  }

  /** The session's windows the fleet's models processed: distinct ones, when the n-th finished, and those processed twice. */
  readonly processed = (sessionId: string, n?: number) => sessionWindows(this.fleet.received(), sessionId, n);

  /**
   * After a burst: the scaler takes the group to 0 on its own (scale-in after the cool-down, then the
   * idle stop). Returns when desired capacity reached 0 (the scaler's decision, seen within a poll)
   * and when the last instance was gone; null for what did not happen within the idle time plus two checks.
   */
  async waitForScaleToZero(label: string): Promise<{ desiredZeroAt: number | null; goneAt: number | null }> {
    const { idleStopMinutes, scaleCheckMinutes } = this.settings;
    const budgetMs = this.platform.clock.real((idleStopMinutes + 2 * scaleCheckMinutes) * 60_000) + 10_000;
    const zero = await waitFor(() => this.fleet.snapshot().desired === 0, { timeoutMs: budgetMs, tick: () => this.tick(label, 0, 0) });
    const desiredZeroAt = zero ? Date.now() : null;
    const gone = await waitFor(
      () => {
        const s = this.fleet.snapshot();
        return s.inService === 0 && s.draining === 0;
      },
      { timeoutMs: zero ? 30_000 : 0, tick: () => this.tick(label, 0, 0) },
    );
    return { desiredZeroAt, goneAt: zero && gone ? Date.now() : null };
  }

  /** Waits for every window of the session, then for the ingest queue and its DLQ to empty. */
  async drain(sessionId: string, n: number, label: string, timeoutMs: number): Promise<number | null> {
    const ok = await waitFor(() => this.processed(sessionId, n).got >= n, { timeoutMs, tick: () => this.tick(label, this.processed(sessionId, n).got, n) });
    if (!ok) this.failures.push(`${label}: only ${this.processed(sessionId, n).got} of ${n} windows were processed within ${Math.round(timeoutMs / 1000)} s`);
    await waitFor(async () => (await this.backlog()) === 0, { timeoutMs: 30_000, tick: () => this.tick(label, n, n) });
    return ok ? this.processed(sessionId, n).completedAtMs : null;
  }

  /** Windows on the ingest queue and its DLQ: visible, in flight and delayed. */
  async backlog(): Promise<number> {
    const [a, b] = await Promise.all([this.platform.depth(this.ingest), this.platform.depth(this.dlq)]);
    return a.visible + a.inFlight + a.delayed + b.visible + b.inFlight + b.delayed;
  }

  readonly tick = async (phase: string, done: number, total: number): Promise<void> => {
    const [q, d] = await gauges(this.platform, [
      ["ingest", this.ingest],
      ["ingest-dlq", this.dlq],
    ]);
    const s = this.fleet.snapshot();
    this.ctx.view({
      scenario: this.name,
      elapsedMs: 0,
      progress: { done, total },
      queues: [q, d].filter((x) => x !== undefined),
      counters: { desired: s.desired, "in service": s.inService, "serving (healthy)": s.healthy, draining: s.draining },
      status: [`${phase}: group ${this.fleet.groupName}`],
    });
  };
}
