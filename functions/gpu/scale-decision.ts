/**
 * The GPU fleet's desired capacity, from the backlog. Pure, so every case is a table row in its test.
 *
 * - Scale out at once: ceil(backlog / windowsPerInstance), at least 1 while anything is queued,
 *   bounded by the group's min and max.
 * - Scale in (to a smaller non-zero size) only once `scaleInCooldownSeconds` have passed since the
 *   last scale-out: a backlog that dips between bursts does not churn instances, each of which
 *   costs a boot.
 * - Scale to zero (the idle stop of the single GPU) after `idleStopMinutes` without work: nothing
 *   queued, parked or in flight, no instance busy, and the least idle instance idle that long.
 *   A service that does not answer is judged by its instance's running time, as the idle stop does.
 * - A hold (the hold tag on the group, `true` or an end time) keeps at least one instance.
 * - Scale-in protection follows each instance's service: protected while it serves a window, so
 *   Auto Scaling, choosing what to take on a scale-in, takes only idle instances.
 */
import { type GpuStatus, holdActive } from "./idle-decision";

export interface FleetMember {
  instanceId: string;
  /** The service's answer, or undefined when it did not answer. */
  status?: GpuStatus;
  /** When the instance launched: its running time stands in for a silent service's idle time. */
  launchTime?: Date;
  /** As the group reports it now. */
  protectedFromScaleIn: boolean;
}

export interface ScaleInput {
  /** Messages visible, in flight or delayed on the ingest queue and its DLQ together. */
  backlog: number;
  group: { desired: number; min: number; max: number };
  /** The group's in-service instances. */
  members: readonly FleetMember[];
  /** The hold tag's value on the group, if any. */
  hold?: string;
  /** Epoch ms of the last scale-out (the group's scaled-out-at tag), if known. */
  lastScaleOutMs?: number;
  nowMs: number;
  windowsPerInstance: number;
  scaleInCooldownSeconds: number;
  /** 0 turns scale-to-zero off: the fleet then keeps at least one instance once it has one. */
  idleStopMinutes: number;
}

export type ScaleReason = "scale_out" | "scale_in" | "cooldown" | "steady" | "busy" | "held" | "idle_wait" | "idle_stop";

export interface ScaleDecision {
  /** The desired capacity to set (equal to the group's when nothing changes). */
  desired: number;
  reason: ScaleReason;
  /** Instances whose scale-in protection must change, and to what. */
  protection: Array<{ instanceId: string; protect: boolean }>;
  /** Seconds the least idle instance has been idle (0 while anything is busy or queued). */
  idleSeconds: number;
}

const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));

/** Instances busy now: the service says it works on a window. A silent service is not protected: it may be hung. */
function busy(m: FleetMember): boolean {
  return (m.status?.active ?? 0) > 0;
}

/** Seconds since the member last did work: the service's account, or its running time when silent. */
function idleSecondsOf(m: FleetMember, nowMs: number): number {
  if (m.status) return m.status.idleSeconds;
  return m.launchTime ? Math.max(0, (nowMs - m.launchTime.getTime()) / 1000) : 0;
}

export function scaleDecision(i: ScaleInput): ScaleDecision {
  const protection = i.members.filter((m) => busy(m) !== m.protectedFromScaleIn).map((m) => ({ instanceId: m.instanceId, protect: busy(m) }));
  const held = holdActive(i.hold, i.nowMs);
  const floor = Math.min(i.group.max, Math.max(i.group.min, held ? 1 : 0));
  const current = i.group.desired;
  const decide = (desired: number, reason: ScaleReason, idleSeconds = 0): ScaleDecision => ({ desired, reason, protection, idleSeconds });
  const sinceScaleOut = i.lastScaleOutMs === undefined ? Number.POSITIVE_INFINITY : (i.nowMs - i.lastScaleOutMs) / 1000;
  const coolingDown = sinceScaleOut < i.scaleInCooldownSeconds;

  if (i.backlog > 0) {
    const wanted = clamp(Math.ceil(i.backlog / i.windowsPerInstance), Math.min(i.group.max, Math.max(floor, 1)), i.group.max);
    if (wanted > current) return decide(wanted, "scale_out");
    if (wanted === current) return decide(current, "steady");
    return coolingDown ? decide(current, "cooldown") : decide(wanted, "scale_in");
  }
  if (current < floor) return decide(floor, held ? "held" : "steady");
  if (i.members.some(busy)) return decide(current, "busy");
  // Idle since: the least idle member's account; with none in service yet, the last scale-out (unknown: just now).
  const idleSeconds =
    i.members.length > 0 ? Math.min(...i.members.map((m) => idleSecondsOf(m, i.nowMs))) : Number.isFinite(sinceScaleOut) ? Math.max(0, sinceScaleOut) : 0;
  if (i.idleStopMinutes > 0 && idleSeconds >= i.idleStopMinutes * 60) {
    if (current <= floor) return decide(current, held ? "held" : "steady", idleSeconds);
    return decide(floor, held ? "held" : "idle_stop", idleSeconds);
  }
  // Until the idle stop, one instance stays warm; more than that go once the cool-down has passed.
  const warm = Math.max(floor, Math.min(1, current));
  if (current > warm) return coolingDown ? decide(current, "cooldown", idleSeconds) : decide(warm, "scale_in", idleSeconds);
  if (current <= floor) return decide(current, held ? "held" : "steady", idleSeconds);
  return decide(current, i.idleStopMinutes > 0 ? "idle_wait" : "steady", idleSeconds);
}
