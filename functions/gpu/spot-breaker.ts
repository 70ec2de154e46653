/**
 * The GPU fleet's Spot circuit breaker, as a pure function of the group's interruption tags and now
 * (docs/parts/ingest.md, "The Spot breaker"). Every Spot interruption notice or rebalance
 * recommendation of a member is one tag `encache:spot-interruption:<instance-id>` = the event's time
 * (group-tags.ts); the scaler reads them with the group, so the breaker's state lives on the group,
 * not in the scaler, and the scaler stays stateless.
 *
 * - **Open** iff some N recorded times fall within W of each other (the N-th minus the first ≤ W)
 *   and now is before the time completing them plus the cool-down C. A later trip extends the
 *   cool-down; only the latest trip matters, since each one's end is its completing time plus C.
 * - **Pruned**: a record older than W + C can be in no trip whose cool-down still runs (a running
 *   trip completes after now − C, and its first record is at most W before that), so its tag goes.
 * - **Capped**: of the rest, only the most recent `interruptionTagCap` stay: N + (N − 1) × ⌈C / W⌉.
 *   That many decide exactly: if the latest running trip completed at t, fewer than C has passed
 *   since; the records after t fall in ⌈C / W⌉ spans of W, each holding at most N − 1 of them (N in
 *   one span would be a later trip), so t and the N − 1 before it are among the most recent
 *   N + (N − 1) × ⌈C / W⌉. An Auto Scaling group holds 50 tags: the config keeps the cap at most
 *   SPOT_BREAKER_MAX_TAGS (4 with the defaults), beside the stack's own and the scaler's.
 */
import { SPOT_INTERRUPTION_TAG_PREFIX } from "./group-tags";

export interface SpotBreakerSettings {
  /** N: interruptions that open the breaker when they fall within the window. */
  interruptions: number;
  /** W, minutes. */
  windowMinutes: number;
  /** C, minutes: how long the breaker stays open after the interruption that opened it. */
  cooldownMinutes: number;
}

/** The most interruption tags the breaker may keep on the group (of the 50 an Auto Scaling group allows). */
export const SPOT_BREAKER_MAX_TAGS = 20;

/** One recorded interruption: its tag, the instance and the event's time. */
export interface RecordedInterruption {
  key: string;
  instanceId: string;
  atMs: number;
}

export interface SpotBreakerState {
  open: boolean;
  /** The latest trip: when its N-th interruption happened, how many fell in its window, and when its cool-down ends. */
  trip?: { atMs: number; interruptions: number; untilMs: number };
  /** Recorded interruptions within the window before now. */
  inWindow: number;
  /** Every readable record, oldest first. */
  recorded: RecordedInterruption[];
  /** Tags to delete: older than W + C, beyond the cap, or unreadable. */
  prune: string[];
}

const MINUTE_MS = 60_000;

/** The most recent records the breaker keeps: N + (N − 1) × ⌈C / W⌉ (module comment). Pure. */
export function interruptionTagCap(s: SpotBreakerSettings): number {
  return s.interruptions + (s.interruptions - 1) * Math.ceil(s.cooldownMinutes / s.windowMinutes);
}

/** The group's interruption records among its tags, and the keys under the prefix whose value is no time. Pure. */
export function interruptionsOf(tags: Readonly<Record<string, string>>): { recorded: RecordedInterruption[]; unreadable: string[] } {
  const recorded: RecordedInterruption[] = [];
  const unreadable: string[] = [];
  for (const [key, value] of Object.entries(tags)) {
    if (!key.startsWith(SPOT_INTERRUPTION_TAG_PREFIX)) continue;
    const atMs = Date.parse(value);
    const instanceId = key.slice(SPOT_INTERRUPTION_TAG_PREFIX.length);
    if (Number.isFinite(atMs) && instanceId.length > 0) recorded.push({ key, instanceId, atMs });
    else unreadable.push(key);
  }
  recorded.sort((a, b) => a.atMs - b.atMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { recorded, unreadable };
}

/** The breaker as the group's tags say at `nowMs`. Pure. */
export function spotBreaker(tags: Readonly<Record<string, string>>, nowMs: number, s: SpotBreakerSettings): SpotBreakerState {
  const windowMs = s.windowMinutes * MINUTE_MS;
  const cooldownMs = s.cooldownMinutes * MINUTE_MS;
  const { recorded: all, unreadable } = interruptionsOf(tags);
  const fresh = all.filter((r) => r.atMs > nowMs - windowMs - cooldownMs);
  const recorded = fresh.slice(Math.max(0, fresh.length - interruptionTagCap(s)));
  const kept = new Set(recorded.map((r) => r.key));
  const prune = [...all.filter((r) => !kept.has(r.key)).map((r) => r.key), ...unreadable].sort();
  let trip: SpotBreakerState["trip"];
  for (let k = recorded.length - 1; k >= s.interruptions - 1 && trip === undefined; k -= 1) {
    const atMs = recorded[k]!.atMs;
    if (atMs - recorded[k - s.interruptions + 1]!.atMs <= windowMs) {
      trip = { atMs, interruptions: recorded.filter((r) => r.atMs <= atMs && r.atMs >= atMs - windowMs).length, untilMs: atMs + cooldownMs };
    }
  }
  return {
    open: trip !== undefined && nowMs < trip.untilMs,
    ...(trip ? { trip } : {}),
    inWindow: recorded.filter((r) => r.atMs > nowMs - windowMs && r.atMs <= nowMs).length,
    recorded,
    prune,
  };
}

/**
 * The on-demand percentage above the base the group should have: 100 while the breaker is open,
 * else the configured mix (100 − spotPercent). Pure.
 */
export function onDemandPercentWanted(open: boolean, spotPercent: number): number {
  return open ? 100 : 100 - spotPercent;
}
