/**
 * When the GPU may be stopped. Pure, so every case is a table row in its test.
 *
 * "No work" is all of: no window queued or in flight on the ingest queue, none parked or being
 * delivered from its DLQ (parked messages are in flight there), and none running on the GPU (its
 * service's status says `active: 0`). The idle time is what the service reports since its last
 * window; a service that does not answer is judged by the instance's running time instead, so a
 * hung service does not keep a GPU billing forever.
 */
export interface GpuStatus {
  /** Windows the service is working on now. */
  active: number;
  /** Seconds since the service last received or finished a window. */
  idleSeconds: number;
}

export interface IdleInput {
  state: string;
  /** When the instance last started; its running time stands in for a silent service's idle time. */
  launchTime?: Date;
  /** The hold tag's value, if the instance carries it. */
  hold?: string;
  /** Messages visible, in flight or delayed on the ingest queue and its DLQ together. */
  queued: number;
  /** The service's answer, or undefined when it did not answer. */
  status?: GpuStatus;
  nowMs: number;
  idleStopMinutes: number;
}

export type IdleDecision =
  | { action: "none"; reason: "not_running" | "held" | "busy"; idleSeconds: number }
  | { action: "wait"; idleSeconds: number }
  | { action: "stop"; idleSeconds: number; basis: "service" | "running_time" };

/** A hold is `true`/`on` (until removed) or an ISO time it ends at; anything else holds nothing. */
export function holdActive(value: string | undefined, nowMs: number): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (v === "true" || v === "on") return true;
  const until = Date.parse(value);
  return Number.isFinite(until) && until > nowMs;
}

export function idleDecision(i: IdleInput): IdleDecision {
  if (i.state !== "running") return { action: "none", reason: "not_running", idleSeconds: 0 };
  if (holdActive(i.hold, i.nowMs)) return { action: "none", reason: "held", idleSeconds: 0 };
  if (i.queued > 0 || (i.status?.active ?? 0) > 0) return { action: "none", reason: "busy", idleSeconds: 0 };
  const basis = i.status ? "service" : "running_time";
  const idleSeconds = i.status ? i.status.idleSeconds : i.launchTime ? Math.max(0, (i.nowMs - i.launchTime.getTime()) / 1000) : 0;
  return idleSeconds >= i.idleStopMinutes * 60 ? { action: "stop", idleSeconds, basis } : { action: "wait", idleSeconds };
}
