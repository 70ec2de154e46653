/**
 * The GPU fleet, played around moto's Auto Scaling group (docs/local-run.md, "Stand-ins"): only what AWS
 * does for the group and moto does not (each instance runs the real gateway, ./gpu-host.ts, which owns
 * keys, status and drain). Boots (a warm-pool start's time when the pool can serve the launch); the load
 * balancer (`LocalLoadBalancer`, the in-service instances as targets); the terminate hook (a leaving
 * instance is deregistered and its metadata says `Terminated`; it is gone when its gateway completes the
 * lifecycle action, ../aws/autoscaling-proxy.ts, or at the hook's timeout); Spot markets from the mixed
 * instances policy's current distribution (the group stand-in's, ../aws/group-stand-in.ts, as
 * UpdateAutoScalingGroup leaves it), the on-demand share rounded up, and a changed distribution met by
 * replacing instances one at a time (`rebalance`); Spot interruptions and rebalance recommendations
 * (`interrupt`: in the metadata, EC2's event on the default bus, the instance out of the group, moto
 * launching the replacement; a notice's instance reclaimed at two minutes); and working towards desired
 * capacity (moto acts only inside SetDesiredCapacity: it is set again while unprotected excess instances
 * remain).
 * Launch failures (`failLaunches`: no GPU quota, no capacity in any pool): moto launches every instance it
 * is asked for, so an instance it launches while launches fail is held back as the attempt Auto Scaling
 * keeps retrying: never booted, never a target, not counted in service.
 */
import {
  type AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import { CreateTagsCommand, DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { type EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { REBALANCE_RECOMMENDATION, SPOT_EVENT_SOURCE, SPOT_INTERRUPTION_WARNING } from "../../functions/gpu/spot-events";
import type { Distribution, TerminatingInstance } from "../aws/group-stand-in";
import { everyUntil, type SimClock } from "./clock";
import type { ProcessedWindow } from "./fake-model";
import type { GpuHost } from "./gpu-host";
import type { LifecycleCompletion } from "../aws/autoscaling-proxy";
import { LocalLoadBalancer } from "./load-balancer";
import type { LocalFleet } from "../provision/topology-types";

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
  if (!spot || size <= spot.onDemandBaseCapacity) return size;
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
  /** Why it left (`rebalanced`: replaced to meet a changed distribution), or null while in the group. */
  leftBecause: "scale_in" | "interrupted" | "rebalanced" | null;
  /** Windows it held when it was cut off (0: drained cleanly). */
  cutOff: number;
  /** Its gateway completed its terminate lifecycle action (false: the hook timed out, or it still runs). */
  drainedByGateway: boolean;
}

/** Pure: dollars for instance lives, on-demand at the type's price, Spot at the discounted one. */
export function fleetCostUsd(
  lives: ReadonlyArray<Pick<FleetInstanceRecord, "instanceType" | "market"> & { simSeconds: number }>,
  usdPerHour: Readonly<Record<string, number>>,
  spotDiscount: number,
): { usd: number; unpriced: string[] } {
  const unpriced = [...new Set(lives.map((l) => l.instanceType).filter((t) => usdPerHour[t] === undefined))];
  const usd = lives.reduce((sum, l) => sum + (l.simSeconds / 3600) * (usdPerHour[l.instanceType] ?? 0) * (l.market === "spot" ? 1 - spotDiscount : 1), 0);
  return { usd: Math.round(usd * 100) / 100, unpriced };
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
  /** Simulated time from launch to the gateway starting. */
  bootSimMs: number;
  /** Simulated time from a warm-pool start to the gateway starting. */
  warmStartSimMs: number;
  /** One instance's processes (not started). */
  host: (instanceId: string) => Promise<GpuHost>;
  /** What every instance's model processed. */
  ledger: ProcessedWindow[];
  /** Routes the Lambdas' calls: `host:port` → loopback `host:port` (replaces the fleet's previous routes). */
  setRoutes: (routes: Record<string, string>) => void;
  note: (line: string) => void;
  /** @default 200 */
  pollRealMs?: number;
  /** The group's distribution now (the group stand-in's, which UpdateAutoScalingGroup changes). @default the program's, `fleet.spot` */
  distribution?: () => Distribution | undefined;
  /**
   * Where EC2 puts its Spot events (moto's default bus, whose rules deliver them), and the account
   * and region of the instances' ARNs. @default undefined (interruptions put no event)
   */
  signals?: { events: EventBridgeClient; account: string; region: string };
}

interface Member {
  record: FleetInstanceRecord;
  privateIp: string;
  host: GpuHost;
  boot?: NodeJS.Timeout;
  /** Real epoch ms by which a leaving instance is gone, whatever it still holds. */
  leaveByMs?: number;
  /** Its gateway completed the terminate lifecycle action. */
  completed?: boolean;
  /** Why the group took it out (a Spot interruption, or a replacement for the distribution); undefined: scale-in. */
  takenOut?: InterruptionKind | "rebalance";
}

export class GpuFleetSimulator {
  readonly lb: LocalLoadBalancer;
  private lbAddress?: { host: string; port: number };
  private readonly members = new Map<string, Member>();
  private readonly leaving = new Map<string, Member>();
  private readonly records: FleetInstanceRecord[] = [];
  /** The distribution last seen (JSON), and whether the group still works towards a changed one. */
  private lastDistribution?: string;
  private rebalancing = false;
  /** Why launches fail now (EC2's error), or undefined while they succeed. */
  private launchFailure?: string;
  /** Instances moto launched while launches failed: Auto Scaling's attempts, not in service. */
  private readonly failedLaunches = new Set<string>();
  private desired = 0;
  private inService = 0;
  private warmAvailable: number;
  private loop?: Promise<void>;
  private polling?: Promise<void>;
  private readonly stopped = new AbortController();
  /** The distribution launches follow now. */
  private readonly distribution: () => Distribution | undefined;

  constructor(private readonly opts: GpuFleetOptions) {
    this.lb = new LocalLoadBalancer({ healthCheck: opts.fleet.loadBalancer.healthCheck, speed: opts.clock.speed });
    this.warmAvailable = opts.fleet.warmPoolMinSize;
    this.distribution = opts.distribution ?? (() => opts.fleet.spot);
  }

  get groupName(): string {
    return this.opts.fleet.groupName;
  }

  async start(): Promise<void> {
    this.lbAddress = await this.lb.start();
    this.publishRoutes();
    await this.poll();
    const tick = () => this.poll().catch((err: unknown) => this.opts.note(`gpu fleet: ${(err as Error).message}`));
    this.loop = everyUntil(this.opts.pollRealMs ?? 200, this.stopped.signal, tick, false);
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
    await this.polling;
    const all = [...this.members.values(), ...this.leaving.values()];
    for (const m of all) clearTimeout(m.boot);
    await Promise.all(all.map((m) => m.host.kill()));
    await this.lb.stop();
  }

  /** `desired` and `inService` are what Auto Scaling publishes as GroupDesiredCapacity and GroupInServiceInstances (failed launches are not in service). */
  readonly snapshot = (): FleetSnapshot => ({ desired: this.desired, inService: this.inService, healthy: this.lb.healthyCount(), draining: this.leaving.size });
  /** Every instance the fleet had, in launch order. */
  readonly instances = (): FleetInstanceRecord[] => this.records.map((r) => ({ ...r }));
  /** Every window an instance's model finished, in order. */
  readonly received = (): ProcessedWindow[] => [...this.opts.ledger];

  /**
   * From now on every launch fails with `reason` (EC2's error, e.g. InsufficientInstanceCapacity), as
   * with no GPU quota or no Spot capacity in any pool; `undefined` lets launches succeed again, and the
   * attempts held back join the group at the next poll.
   */
  failLaunches(reason: string | undefined): void {
    this.launchFailure = reason;
    this.opts.note(reason === undefined ? `gpu fleet: launches succeed again` : `gpu fleet: every launch fails from now on (${reason})`);
  }

  /** A Spot instance of the group now in service (the one an interruption would take), if any; `launchedAfterMs`: only one launched since. */
  spotInService(launchedAfterMs = 0): string | undefined {
    return [...this.members.values()].find(
      (m) => m.record.market === "spot" && m.record.launchedAtMs > launchedAfterMs && this.lb.health(m.record.instanceId) === "healthy",
    )?.record.instanceId;
  }

  /** Instances the group still lists while the terminate hook holds them (Auto Scaling's `Terminating:Wait`). */
  terminating(): TerminatingInstance[] {
    return [...this.leaving.values()].map((m) => ({ instanceId: m.record.instanceId, instanceType: m.record.instanceType }));
  }

  /**
   * A gateway's CompleteLifecycleAction (../aws/autoscaling-proxy.ts): true, and the instance may go,
   * when it is leaving this group through its terminate hook; false (Auto Scaling's ValidationError) otherwise.
   */
  complete(c: LifecycleCompletion): boolean {
    const member = this.leaving.get(c.instanceId);
    if (!member || c.groupName !== this.groupName || c.hookName !== this.opts.fleet.drainHookName) return false;
    member.completed = true;
    return true;
  }

  /**
   * A Spot interruption of `instanceId` (the stand-in for EC2's notice or recommendation), in its
   * metadata; the group takes it out without lowering desired capacity, so moto launches the replacement.
   */
  async interrupt(instanceId: string, kind: InterruptionKind): Promise<void> {
    const member = this.members.get(instanceId);
    if (!member) throw new Error(`interrupt: ${instanceId} is not in service in ${this.groupName}`);
    if (member.record.market !== "spot") throw new Error(`interrupt: ${instanceId} is on-demand; EC2 interrupts only Spot instances`);
    member.takenOut = kind;
    if (kind === "notice") member.host.imds.noticeSpotInterruption(Date.now() + this.opts.clock.real(SPOT_NOTICE_SIM_MS));
    else member.host.imds.recommendRebalance();
    this.opts.note(`spot ${kind === "notice" ? "interruption notice" : "rebalance recommendation"} for ${instanceId}`);
    await this.putSpotEvent(instanceId, kind);
    await this.takeOut(instanceId);
    await this.poll();
  }

  /**
   * The group takes an instance out without lowering desired capacity (moto launches the
   * replacement). moto does it by detaching the instance, which drops its `aws:autoscaling:groupName`
   * tag; Auto Scaling leaves a terminated instance's tags as they were (the scaler finds an
   * interrupted instance's group by it once the instance has left), so the tag is put back.
   */
  private async takeOut(instanceId: string): Promise<void> {
    await this.opts.autoscaling.send(new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: false }));
    await this.opts.ec2.send(new CreateTagsCommand({ Resources: [instanceId], Tags: [{ Key: "aws:autoscaling:groupName", Value: this.groupName }] }));
  }

  /**
   * EC2's event for the interruption, on the default bus, stamped with the simulated time: the EC2 user
   * guide's Spot Instance Interruption Warning (`instance-id`, `instance-action`) or Instance Rebalance
   * Recommendation (`instance-id`). moto matches it against the program's rules and delivers it.
   */
  private async putSpotEvent(instanceId: string, kind: InterruptionKind): Promise<void> {
    const signals = this.opts.signals;
    if (!signals) return;
    const entry = {
      Source: SPOT_EVENT_SOURCE,
      DetailType: kind === "notice" ? SPOT_INTERRUPTION_WARNING : REBALANCE_RECOMMENDATION,
      Time: new Date(this.opts.clock.now()),
      Resources: [`arn:aws:ec2:${signals.region}:${signals.account}:instance/${instanceId}`],
      Detail: JSON.stringify(kind === "notice" ? { "instance-id": instanceId, "instance-action": "terminate" } : { "instance-id": instanceId }),
    };
    const out = await signals.events.send(new PutEventsCommand({ Entries: [entry] }));
    if ((out.FailedEntryCount ?? 0) > 0) throw new Error(`PutEvents refused the Spot event of ${instanceId}: ${JSON.stringify(out.Entries)}`);
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
    if (this.stopped.signal.aborted) return;
    const out = await this.opts.autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [this.groupName] }));
    const group = out.AutoScalingGroups?.[0];
    if (!group) throw new Error(`group ${this.groupName} is gone from moto`);
    this.desired = group.DesiredCapacity ?? 0;
    const inGroup = new Set((group.Instances ?? []).filter((i) => i.LifecycleState === "InService").flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])));
    for (const id of this.failedLaunches) if (!inGroup.has(id)) this.failedLaunches.delete(id);
    const fresh = [...inGroup].filter((id) => !this.members.has(id) && !this.leaving.has(id) && !this.records.some((r) => r.instanceId === id));
    if (this.launchFailure !== undefined) {
      for (const id of fresh.filter((x) => !this.failedLaunches.has(x))) {
        this.failedLaunches.add(id);
        this.opts.note(`gpu fleet: launching an instance for ${this.groupName} failed: ${this.launchFailure} (Auto Scaling retries)`);
      }
    } else if (fresh.length > 0) {
      for (const id of fresh) this.failedLaunches.delete(id);
      await this.admit(fresh);
    }
    this.inService = inGroup.size - [...this.failedLaunches].filter((id) => inGroup.has(id)).length;
    for (const [id, member] of this.members) if (!inGroup.has(id)) this.leave(member);
    await this.finishLeaving();
    await this.rebalance();
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
      const bootRealMs = this.opts.clock.real(warm ? this.opts.warmStartSimMs : this.opts.bootSimMs);
      const markets = [...this.members.values()].map((m) => m.record.market);
      const record: FleetInstanceRecord = {
        instanceId: id,
        instanceType: instance.InstanceType ?? "unknown",
        market: nextMarket(markets, this.distribution()),
        launchedAtMs: now,
        servingFromMs: now + bootRealMs,
        goneAtMs: null,
        leftBecause: null,
        cutOff: 0,
        drainedByGateway: false,
      };
      const host = await this.opts.host(id);
      const member: Member = { record, privateIp: instance.PrivateIpAddress, host };
      member.boot = setTimeout(() => {
        member.boot = undefined;
        host.start().catch((err: unknown) => this.opts.note(`gpu fleet: ${id} did not boot: ${(err as Error).message}`));
      }, bootRealMs);
      this.members.set(id, member);
      this.records.push(record);
      this.lb.register(id, host.port);
      this.opts.note(`gpu fleet: ${id} (${record.instanceType}, ${record.market}) joined ${this.groupName}${warm ? " from the warm pool" : ""}`);
    }
    this.publishRoutes();
  }

  /** The group let the instance go: out of the load balancer at once, its hook in its metadata; gone once its gateway completes it. */
  private leave(member: Member): void {
    const id = member.record.instanceId;
    this.members.delete(id);
    this.lb.deregister(id);
    member.host.imds.targetLifecycleState = "Terminated";
    const kind = member.takenOut;
    member.record.leftBecause = kind === undefined ? "scale_in" : kind === "rebalance" ? "rebalanced" : "interrupted";
    const hookSimMs = this.opts.fleet.drainHookSeconds * 1000;
    const limitSimMs = kind === "notice" ? Math.min(hookSimMs, SPOT_NOTICE_SIM_MS) : hookSimMs;
    member.leaveByMs = Date.now() + this.opts.clock.real(limitSimMs);
    this.leaving.set(id, member);
  }

  /**
   * A changed distribution (the scaler's UpdateAutoScalingGroup) is met by replacing instances
   * gradually, as Auto Scaling does ("an update to this setting means a gradual replacement of
   * instances", OnDemandPercentageAboveBaseCapacity): one at a time, each once the last replacement
   * serves, a Spot instance for an on-demand one (or back), until the group's markets match the
   * distribution at its size. Auto Scaling launches the new instance before it terminates the old;
   * moto launches only up to desired capacity, so here the old one leaves first (through its
   * terminate hook, draining) and moto launches the new one at once, by the distribution.
   */
  private async rebalance(): Promise<void> {
    const distribution = this.distribution();
    const seen = JSON.stringify(distribution ?? null);
    if (this.lastDistribution !== undefined && seen !== this.lastDistribution) this.rebalancing = true;
    this.lastDistribution = seen;
    if (!this.rebalancing || this.launchFailure !== undefined) return;
    const live = [...this.members.values()];
    const settling = live.some((m) => this.lb.health(m.record.instanceId) !== "healthy") || [...this.leaving.values()].some((m) => m.takenOut === "rebalance");
    if (settling) return;
    const onDemand = live.filter((m) => m.record.market === "on-demand").length;
    const wanted = onDemandCount(live.length, distribution);
    if (onDemand === wanted) {
      this.rebalancing = false;
      return;
    }
    const from: Market = onDemand < wanted ? "spot" : "on-demand";
    // The newest of the market that is over its share: the longest-serving instances stay.
    const victim = live.filter((m) => m.record.market === from).at(-1);
    if (!victim) return;
    victim.takenOut = "rebalance";
    this.opts.note(`gpu fleet: ${victim.record.instanceId} (${from}) replaced to meet the distribution (${wanted} of ${live.length} on demand)`);
    await this.takeOut(victim.record.instanceId);
  }

  private async finishLeaving(): Promise<void> {
    const now = Date.now();
    for (const [id, member] of this.leaving) {
      if (!member.completed && now < (member.leaveByMs ?? 0)) continue;
      clearTimeout(member.boot);
      member.record.cutOff = member.host.outstanding();
      member.record.drainedByGateway = member.completed === true;
      member.record.goneAtMs = now;
      this.leaving.delete(id);
      this.lb.remove(id);
      this.publishRoutes();
      await member.host.kill();
      const how = member.completed ? "drained, lifecycle action completed by its gateway" : "hook timed out";
      const cut = member.record.cutOff > 0 ? `, ${member.record.cutOff} windows cut off` : "";
      this.opts.note(`gpu fleet: ${id} gone (${member.record.leftBecause}, ${how}${cut})`);
    }
  }

  /** The load balancer's address, and each serving or draining instance's own (the scaler reads its status there). */
  private publishRoutes(): void {
    const port = this.opts.fleet.loadBalancer.port;
    const routes: Record<string, string> = {};
    if (this.lbAddress) routes[`${this.opts.fleet.loadBalancer.dnsName}:${port}`] = `${this.lbAddress.host}:${this.lbAddress.port}`;
    for (const m of [...this.members.values(), ...this.leaving.values()]) routes[`${m.privateIp}:${port}`] = `127.0.0.1:${m.host.lambdaPort}`;
    this.opts.setRoutes(routes);
  }
}
