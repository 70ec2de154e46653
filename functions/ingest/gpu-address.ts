/**
 * The GPU tier as the consumers see it, in either capacity mode: where a window goes and what "start
 * the GPU" did. Types only, in a module of their own, so the single-instance code (gpu.ts) and the
 * fleet code (fleet.ts) share them without importing each other.
 */

export interface GpuAddress {
  instanceId: string;
  privateIp: string;
  /** When the instance last entered `pending`: a service that refuses soon after is still booting. */
  launchTime?: Date;
}

/**
 * - `attempted`: StartInstances accepted; `skipped`: already pending or running.
 * - `stopping`: StartInstances refused with IncorrectInstanceState (the instance is still stopping,
 *   for example after an idle stop); a start a few seconds later succeeds.
 * - `insufficient_capacity`: EC2 has no capacity for the type in the zone now; retried later.
 * - `no_instance_found`, `failed`: nothing to start, or any other error.
 */
export type AutostartOutcome = "attempted" | "skipped" | "stopping" | "insufficient_capacity" | "no_instance_found" | "failed";
