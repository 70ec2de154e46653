import type { AutostartOutcome } from "./gpu";

/**
 * Why a DLQ message is parked, which decides for how long:
 * - `booting`: the GPU is on its way (a start was just accepted, it is pending or stopping, or it
 *   runs but its service does not answer yet). Short parks, so the backlog drains within a park
 *   of the service answering instead of waiting out the long park.
 * - `capacity`: EC2 has no capacity for the type now; retried at a moderate pace, and alarmed.
 * - `unavailable`: nothing can start it (no instance, an unexpected error): the long park, so a
 *   broken GPU costs one receive per message per long park.
 */
export type ParkReason = "booting" | "capacity" | "unavailable";

export interface ParkConfig {
  /** The long park (the specification's 900 s). */
  visibilityExtensionSeconds: number;
  bootParkSeconds: number;
  capacityRetrySeconds: number;
  /** A running GPU whose service refuses within this many seconds of launch counts as booting. */
  bootGraceSeconds: number;
}

/** Pure: the start attempt's outcome → why the message waits. */
export function parkReasonFor(outcome: AutostartOutcome): ParkReason {
  switch (outcome) {
    case "attempted":
    case "skipped":
    case "stopping":
      return "booting";
    case "insufficient_capacity":
      return "capacity";
    case "no_instance_found":
    case "failed":
      return "unavailable";
  }
}

/** Pure: how long a message parked for `reason` stays hidden. Never longer than the long park. */
export function parkSeconds(reason: ParkReason, c: ParkConfig): number {
  const seconds = reason === "booting" ? c.bootParkSeconds : reason === "capacity" ? c.capacityRetrySeconds : c.visibilityExtensionSeconds;
  return Math.min(seconds, c.visibilityExtensionSeconds);
}

/** Pure: a running GPU that refused a delivery is still booting if it launched within the grace. */
export function stillBooting(launchTime: Date | undefined, nowMs: number, c: Pick<ParkConfig, "bootGraceSeconds">): boolean {
  return launchTime !== undefined && nowMs - launchTime.getTime() < c.bootGraceSeconds * 1000;
}
