/**
 * The GPU fleet, played around moto's Auto Scaling group (docs/local-run.md, "Stand-ins"). moto 5.2
 * launches and terminates the group's instances on every change of desired capacity and keeps scale-in
 * protection; the rest of what AWS does for the group, moto stores and never runs, so this plays it:
 * - **The instances' services**: one `FleetInstanceService` per instance in the group, booting for
 *   the boot time after it is first seen, then serving windows at the configured pace.
 * - **The load balancer** (`LocalLoadBalancer`): the group's in-service instances are its targets,
 *   health-checked, least outstanding requests. An instance that leaves the group leaves it at once.
 * - **The terminate lifecycle hook** (Terminating:Wait, the drain): moto terminates at once; here a
 *   leaving instance stops getting windows (deregistered) but finishes those it holds, for at most the
 *   hook's timeout and the deregistration delay, then goes, cutting off whatever it still held.
 * - **Spot markets**: which instances are Spot, from the recorded mixed instances policy, rounding the
 *   on-demand share up as Auto Scaling does (moto does not model markets).
 * - **Spot interruptions and rebalance recommendations** (`interrupt`): moto has none. A two-minute
 *   notice: the group takes the instance out (replacement launched at once: capacity rebalancing), it
 *   drains, and EC2 reclaims it at two minutes whatever it still holds. A rebalance recommendation:
 *   the same, without the reclaim (the hook's timeout bounds the drain).
 * - **Reconciling to desired capacity**: Auto Scaling keeps working towards desired capacity, so an
 *   instance whose scale-in protection is lifted after a scale-in goes then; moto acts only inside the
 *   SetDesiredCapacity call, leaving a protected instance in the group for good. Here, while the
 *   group holds more in-service instances than desired and some are unprotected, desired capacity is
 *   set again (to the same value), on which moto terminates the unprotected excess.
 * - **The warm pool**: moto keeps no warm instances; here a launch that the pool can serve starts in
 *   `warmStartSimMs` instead of booting, and the pool refills after a boot's time.
 */
import {
  type AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import type { SimClock } from "./clock";
import { FleetInstanceService, type ProcessedWindow, SharedKeys } from "./fleet-service";
import { LocalLoadBalancer, type TargetHealth } from "./load-balancer";
import type { LocalFleet } from "../provision/topology";

export type Market = "on-demand" | "spot";

/** How a Spot instance is taken: a two-minute interruption notice, or a rebalance recommendation. */
export type InterruptionKind = "notice" | "rebalance";

/** EC2 reclaims a Spot instance two minutes after the interruption notice. */
export const SPOT_NOTICE_SIM_MS = 120_000;

/**
 * Pure: on-demand instances Auto Scaling keeps in a mixed group of `size`: the base first, then the
 * percentage of the rest, rounded up ("If the percentage results in a fractional number, Amazon EC2
 * Auto Scaling rounds up to the next integer in favor of On-Demand Instances": the Auto Scaling user
 * guide, "Instances distribution").
 */
export function onDemandCount(size: number, spot: NonNullable<LocalFleet["spot"]> | undefined): number {
  if (!spot) return size;
  if (size <= spot.onDemandBaseCapacity) return size;
  return spot.onDemandBaseCapacity + Math.ceil(((size - spot.onDemandBaseCapacity) * spot.onDemandPercentageAboveBaseCapacity) / 100);
}

/** Pure: the market of the next instance the group launches, given the markets it keeps now. */
export function nextMarket(live: readonly Market[], spot: NonNullable<LocalFleet["spot"]> | undefined): Market {
  const onDemand = live.filter((m) => m === "on-demand").length;
  return onDemand < onDemandCount(live.length + 1, spot) ? "on-demand" : "spot";
}

/** One instance's life, for the cost table and the report. */
export interface FleetInstanceRecord {
  instanceId: string;
  instanceType: string;
  market: Market;
  /** Real epoch ms: first seen in the group; serving from; gone (null while it runs). */
  launchedAtMs: number;
  servingFromMs: number;
  goneAtMs: number | null;
  /** Why it left: scale-in, interrupted (Spot), or null while in the group. */
  leftBecause: "scale_in" | "interrupted" | null;
  /** Windows it held when it was cut off (0: drained cleanly). */
  cutOff: number;
}

/** Pure: dollars for instance lives, on-demand at the type's price, Spot at the discounted one. */
export function fleetCostUsd(
  lives: ReadonlyArray<Pick<FleetInstanceRecord, "instanceType" | "market"> & { simSeconds: number }>,
  usdPerHour: Readonly<Record<string, number>>,
  spotDiscount: number,
): { usd: number; unpriced: string[] } {
  let usd = 0;
  const unpriced = new Set<string>();
  for (const life of lives) {
    const price = usdPerHour[life.instanceType];
    if (price === undefined) {
      unpriced.add(life.instanceType);
      continue;
    }
    usd += (life.simSeconds / 3600) * price * (life.market === "spot" ? 1 - spotDiscount : 1);
  }
  return { usd: Math.round(usd * 100) / 100, unpriced: [...unpriced] };
}

export interface FleetSnapshot {
  desired: number;
  /** Instances the group reports InService. */
  inService: number;
  /** Targets the load balancer sends windows to. */
  healthy: number;
  /** Instances leaving, still draining. */
  draining: number;
}

export interface GpuFleetOptions {
  autoscaling: AutoScalingClient;
  ec2: EC2Client;
  fleet: LocalFleet;
  clock: SimClock;
  servicePath: string;
  statusPath: string;
  /** Simulated time from launch to the service answering. */
  bootSimMs: number;
  /** Simulated time from a warm-pool start to the service answering. */
  warmStartSimMs: number;
  /** Simulated time one window takes on one slot. */
  windowSimMs: number;
  slots: number;
  /** Routes the Lambdas' calls: `host:port` → loopback `host:port` (replaces the fleet's previous routes). */
  setRoutes: (routes: Record<string, string>) => void;
  note: (line: string) => void;
  /** @default 200 */
  pollRealMs?: number;
}

interface Member {
  record: FleetInstanceRecord;
  privateIp: string;
  service: FleetInstanceService;
  port: number;
  /** Real epoch ms by which a leaving instance is gone, whatever it still holds. */
  leaveByMs?: number;
}

export class GpuFleetSimulator {
  readonly lb: LocalLoadBalancer;
  private lbAddress?: { host: string; port: number };
  private readonly members = new Map<string, Member>();
  private readonly leaving = new Map<string, Member>();
  private readonly records: FleetInstanceRecord[] = [];
  /** Services of instances that are gone, kept for their counts. */
  private readonly gone: FleetInstanceService[] = [];
  private readonly processed: ProcessedWindow[] = [];
  private readonly interrupted = new Map<string, InterruptionKind>();
  /** The Idempotency-Keys the fleet's instances share (fleet-service.ts). */
  private readonly keys = new SharedKeys();
  private desired = 0;
  private inService = 0;
  private warmAvailable: number;
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private stopped = false;

  constructor(private readonly opts: GpuFleetOptions) {
    const hc = opts.fleet.loadBalancer.healthCheck;
    this.lb = new LocalLoadBalancer({ healthCheck: { ...hc, path: hc.path }, speed: opts.clock.speed });
    this.warmAvailable = opts.fleet.warmPoolMinSize;
  }

  get groupName(): string {
    return this.opts.fleet.groupName;
  }

  async start(): Promise<void> {
    this.lbAddress = await this.lb.start();
    this.publishRoutes();
    await this.poll();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.polling;
    await Promise.all([...this.members.values(), ...this.leaving.values()].map((m) => m.service.kill()));
    await this.lb.stop();
  }

  snapshot(): FleetSnapshot {
    return { desired: this.desired, inService: this.inService, healthy: this.lb.healthyCount(), draining: this.leaving.size };
  }

  /** Every instance the fleet had, in launch order. */
  instances(): FleetInstanceRecord[] {
    return this.records.map((r) => ({ ...r }));
  }

  /** Every window an instance finished, in order. */
  received(): ProcessedWindow[] {
    return [...this.processed];
  }

  /** Deliveries answered as repeats, and refused while their key was in progress, across the fleet. */
  deduplicated(): { repeats: number; conflicts: number } {
    const services = [...this.members.values(), ...this.leaving.values()].map((m) => m.service).concat(this.gone);
    return {
      repeats: services.reduce((n, s) => n + s.repeatedDeliveries(), 0),
      conflicts: services.reduce((n, s) => n + s.conflictingDeliveries(), 0),
    };
  }

  /** Windows (by Idempotency-Key) processed more than once across the fleet. */
  servedTwice(): number {
    const seen = new Map<string, number>();
    for (const w of this.processed) if (w.key !== "") seen.set(w.key, (seen.get(w.key) ?? 0) + 1);
    return [...seen.values()].filter((n) => n > 1).length;
  }

  /** Windows an instance of the group holds now (worked on or queued); 0 once it is gone. */
  holding(instanceId: string): number {
    return (this.members.get(instanceId) ?? this.leaving.get(instanceId))?.service.outstanding() ?? 0;
  }

  targetHealth(instanceId: string): TargetHealth | undefined {
    return this.lb.health(instanceId);
  }

  /** A Spot instance of the group now in service (the one an interruption would take), if any. */
  spotInService(): string | undefined {
    return [...this.members.values()].find((m) => m.record.market === "spot" && this.lb.health(m.record.instanceId) === "healthy")?.record.instanceId;
  }

  /**
   * A Spot interruption of `instanceId` (the stand-in for EC2's notice or recommendation): the group
   * takes it out without lowering desired capacity, so moto launches the replacement at once.
   */
  async interrupt(instanceId: string, kind: InterruptionKind): Promise<void> {
    const member = this.members.get(instanceId);
    if (!member) throw new Error(`interrupt: ${instanceId} is not in service in ${this.groupName}`);
    if (member.record.market !== "spot") throw new Error(`interrupt: ${instanceId} is on-demand; EC2 interrupts only Spot instances`);
    this.interrupted.set(instanceId, kind);
    this.opts.note(`spot ${kind === "notice" ? "interruption notice" : "rebalance recommendation"} for ${instanceId}`);
    await this.opts.autoscaling.send(new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: false }));
    await this.poll();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.poll()
        .catch((err: unknown) => this.opts.note(`gpu fleet: ${(err as Error).message}`))
        .finally(() => this.schedule());
    }, this.opts.pollRealMs ?? 200);
    this.timer.unref();
  }

  /**
   * One poll at a time, whoever asks (the timer, `start`, `interrupt`): two overlapping polls would
   * both see a new instance before either admitted it, and admit it twice.
   */
  private poll(): Promise<void> {
    const next = (this.polling ?? Promise.resolve()).catch(() => undefined).then(() => this.pollOnce());
    this.polling = next;
    return next;
  }

  private async pollOnce(): Promise<void> {
    const out = await this.opts.autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [this.groupName] }));
    const group = out.AutoScalingGroups?.[0];
    if (!group) throw new Error(`group ${this.groupName} is gone from moto`);
    this.desired = group.DesiredCapacity ?? 0;
    const inGroup = new Set((group.Instances ?? []).filter((i) => i.LifecycleState === "InService").flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])));
    this.inService = inGroup.size;
    const fresh = [...inGroup].filter((id) => !this.members.has(id) && !this.leaving.has(id) && !this.records.some((r) => r.instanceId === id));
    if (fresh.length > 0) await this.admit(fresh);
    for (const [id, member] of this.members) if (!inGroup.has(id)) this.leave(member);
    await this.finishLeaving();
    const unprotected = (group.Instances ?? []).filter((i) => i.LifecycleState === "InService" && !i.ProtectedFromScaleIn).length;
    if (inGroup.size > this.desired && unprotected > 0) {
      await this.opts.autoscaling.send(
        new SetDesiredCapacityCommand({ AutoScalingGroupName: this.groupName, DesiredCapacity: this.desired, HonorCooldown: false }),
      );
    }
  }

  private async admit(ids: string[]): Promise<void> {
    const out = await this.opts.ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
    const described = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    for (const id of ids) {
      const instance = described.find((i) => i.InstanceId === id);
      if (!instance?.PrivateIpAddress) continue;
      const now = Date.now();
      const warm = this.warmAvailable > 0;
      if (warm) {
        this.warmAvailable -= 1;
        // The pool launches and stops a replacement: ready again after a boot's time.
        setTimeout(() => (this.warmAvailable += 1), this.opts.clock.real(this.opts.bootSimMs)).unref();
      }
      const servingFromMs = now + this.opts.clock.real(warm ? this.opts.warmStartSimMs : this.opts.bootSimMs);
      const record: FleetInstanceRecord = {
        instanceId: id,
        instanceType: instance.InstanceType ?? "unknown",
        market: nextMarket(
          [...this.members.values()].map((m) => m.record.market),
          this.opts.fleet.spot,
        ),
        launchedAtMs: now,
        servingFromMs,
        goneAtMs: null,
        leftBecause: null,
        cutOff: 0,
      };
      const service = new FleetInstanceService({
        instanceId: id,
        servingFromMs,
        windowRealMs: this.opts.clock.real(this.opts.windowSimMs),
        slots: this.opts.slots,
        servicePath: this.opts.servicePath,
        statusPath: this.opts.statusPath,
        speed: this.opts.clock.speed,
        onProcessed: (w) => this.processed.push(w),
        keys: this.keys,
      });
      const { port } = await service.start();
      const member: Member = { record, privateIp: instance.PrivateIpAddress, service, port };
      this.members.set(id, member);
      this.records.push(record);
      this.lb.register(id, port);
      this.opts.note(`gpu fleet: ${id} (${record.instanceType}, ${record.market}) joined ${this.groupName}${warm ? " from the warm pool" : ""}`);
    }
    this.publishRoutes();
  }

  /** The group let the instance go: out of the load balancer at once; gone once drained, or at the drain's limit. */
  private leave(member: Member): void {
    const id = member.record.instanceId;
    this.members.delete(id);
    this.lb.deregister(id);
    const kind = this.interrupted.get(id);
    member.record.leftBecause = kind ? "interrupted" : "scale_in";
    const fleet = this.opts.fleet;
    const drainSimMs = Math.min(fleet.drainHookSeconds, fleet.loadBalancer.deregistrationDelaySeconds) * 1000;
    const limitSimMs = kind === "notice" ? Math.min(drainSimMs, SPOT_NOTICE_SIM_MS) : drainSimMs;
    member.leaveByMs = Date.now() + this.opts.clock.real(limitSimMs);
    this.leaving.set(id, member);
  }

  private async finishLeaving(): Promise<void> {
    const now = Date.now();
    for (const [id, member] of this.leaving) {
      const drained = member.service.outstanding() === 0 && this.lb.outstanding(id) === 0;
      if (!drained && now < (member.leaveByMs ?? 0)) continue;
      member.record.cutOff = member.service.outstanding();
      member.record.goneAtMs = now;
      this.leaving.delete(id);
      this.lb.remove(id);
      await member.service.kill();
      this.gone.push(member.service);
      this.publishRoutes();
      this.opts.note(
        `gpu fleet: ${id} gone (${member.record.leftBecause}${member.record.cutOff > 0 ? `, ${member.record.cutOff} windows cut off` : ", drained"})`,
      );
    }
  }

  /** The load balancer's address, and each serving or draining instance's own (the scaler reads its status there). */
  private publishRoutes(): void {
    const port = this.opts.fleet.loadBalancer.port;
    const routes: Record<string, string> = {};
    if (this.lbAddress) routes[`${this.opts.fleet.loadBalancer.dnsName}:${port}`] = `${this.lbAddress.host}:${this.lbAddress.port}`;
    for (const m of [...this.members.values(), ...this.leaving.values()]) routes[`${m.privateIp}:${port}`] = `127.0.0.1:${m.port}`;
    this.opts.setRoutes(routes);
  }
}
