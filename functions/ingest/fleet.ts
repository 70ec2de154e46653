import { type AutoScalingClient, DescribeAutoScalingGroupsCommand, type InstancesDistribution, SetDesiredCapacityCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import type { AutostartOutcome, GpuAddress } from "./gpu-address";

/**
 * The GPU tier in fleet mode (`gpu.capacity.mode: fleet`, docs/parts/ingest.md): an EC2 Auto Scaling
 * group behind an internal load balancer. The consumers POST to the load balancer; "start the GPU"
 * becomes "make sure the group wants at least one instance", and the scaler (scaler-handler.ts)
 * owns every other change of desired capacity.
 */
export interface FleetTarget {
  autoscaling: AutoScalingClient;
  /** The stack's Auto Scaling group. */
  groupName: string;
  /** The internal load balancer's DNS name: the one address the consumers POST windows to. */
  serviceHost: string;
}

export interface FleetInstance {
  instanceId: string;
  lifecycleState: string;
  protectedFromScaleIn: boolean;
}

export interface FleetGroup {
  name: string;
  desired: number;
  min: number;
  max: number;
  /** Instances in the group's `InService` state (warm-pool and terminating ones are not serving). */
  inService: FleetInstance[];
  /** Every instance the group holds, whatever its lifecycle state. */
  instances: FleetInstance[];
  tags: Record<string, string>;
  /**
   * The mixed instances policy's on-demand share above the base (Auto Scaling's default, 100, when the
   * policy leaves it out); undefined for a group without a mixed instances policy.
   */
  onDemandPercentAboveBase?: number;
  /** The mixed instances policy's distribution as Auto Scaling describes it (what a change of one part sends back whole). */
  instancesDistribution?: InstancesDistribution;
}

export class FleetGroupNotFoundError extends Error {
  constructor(groupName: string) {
    super(`Auto Scaling group ${groupName} not found`);
    this.name = "FleetGroupNotFoundError";
  }
}

/** The group as Auto Scaling describes it now; throws when it does not exist (a wrong name is a deploy defect). */
export async function describeFleet(autoscaling: AutoScalingClient, groupName: string): Promise<FleetGroup> {
  const out = await autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [groupName] }));
  const group = out.AutoScalingGroups?.find((g) => g.AutoScalingGroupName === groupName);
  if (!group) throw new FleetGroupNotFoundError(groupName);
  const instances = (group.Instances ?? []).flatMap((i) =>
    i.InstanceId ? [{ instanceId: i.InstanceId, lifecycleState: i.LifecycleState ?? "unknown", protectedFromScaleIn: i.ProtectedFromScaleIn === true }] : [],
  );
  return {
    name: groupName,
    desired: group.DesiredCapacity ?? 0,
    min: group.MinSize ?? 0,
    max: group.MaxSize ?? 0,
    inService: instances.filter((i) => i.lifecycleState === "InService"),
    instances,
    tags: Object.fromEntries((group.Tags ?? []).flatMap((t) => (t.Key !== undefined ? [[t.Key, t.Value ?? ""]] : []))),
    ...(group.MixedInstancesPolicy
      ? {
          onDemandPercentAboveBase: group.MixedInstancesPolicy.InstancesDistribution?.OnDemandPercentageAboveBaseCapacity ?? 100,
          instancesDistribution: { ...group.MixedInstancesPolicy.InstancesDistribution },
        }
      : {}),
  };
}

/**
 * The load balancer's address while at least one instance is in service, else null. The address
 * names the group, not an instance: the load balancer picks the instance per request.
 */
export function fleetAddress(group: FleetGroup, serviceHost: string): GpuAddress | null {
  return group.inService.length > 0 ? { instanceId: group.name, privateIp: serviceHost } : null;
}

/**
 * "Start the GPU" in fleet mode: raise desired capacity to 1 when it is 0. Never lowers it, and never
 * raises it past 1: the scaler sizes the group to the backlog on its next tick. Two DLQ invocations
 * that both read 0 both set 1, which Auto Scaling takes as one change. Never throws, like tryStartGpu.
 * - `skipped`: the group already wants capacity; `attempted`: this call raised it.
 * - `stopping`: Auto Scaling refused while a scaling activity is in progress (retried soon).
 * - `insufficient_capacity`: the group's max is 0 (nothing may run: a config defect, retried at the capacity pace).
 * - `failed`: anything else.
 */
export async function ensureFleetCapacity(target: FleetTarget, logger: StepLogger, seen?: FleetGroup): Promise<AutostartOutcome> {
  try {
    const group = seen ?? (await describeFleet(target.autoscaling, target.groupName));
    if (group.desired >= 1) {
      logStep(logger, "info", "gpu_fleet_capacity_present", { group: group.name, desired: group.desired, in_service: group.inService.length });
      return "skipped";
    }
    if (group.max < 1) {
      logStep(logger, "warn", "gpu_fleet_max_zero", { group: group.name });
      return "insufficient_capacity";
    }
    try {
      await target.autoscaling.send(new SetDesiredCapacityCommand({ AutoScalingGroupName: group.name, DesiredCapacity: 1, HonorCooldown: false }));
    } catch (error) {
      if (!(error instanceof Error && error.name === "ScalingActivityInProgressFault")) throw error;
      logStep(logger, "info", "gpu_fleet_scaling_in_progress", { group: group.name, error: errorMessage(error) });
      return "stopping";
    }
    logStep(logger, "info", "gpu_fleet_capacity_raised", { group: group.name, previous_desired: group.desired, desired: 1 });
    return "attempted";
  } catch (error) {
    logStep(logger, "error", "gpu_fleet_capacity_failed", { group: target.groupName, error: errorMessage(error) });
    return "failed";
  }
}

/**
 * When the group's longest-serving in-service instance launched (DescribeInstances: Auto Scaling's
 * description carries no launch time). A window the load balancer refuses while even this instance
 * is within the boot grace failed because the fleet is still booting (the first instance's service
 * does not answer yet), so the DLQ consumer parks it for the boot park, as instance mode does with
 * its one instance's launch time (park.ts stillBooting). Undefined when nothing is in service or the
 * read fails: then there is no boot park, and the failure retries as before. Never throws.
 */
export async function oldestInServiceLaunch(ec2: EC2Client, group: FleetGroup, logger: StepLogger): Promise<Date | undefined> {
  const ids = group.inService.map((i) => i.instanceId);
  if (ids.length === 0) return undefined;
  try {
    const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }));
    const launches = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []).flatMap((i) => (i.LaunchTime ? [i.LaunchTime.getTime()] : []));
    // An instance with no launch time in the answer is not known to be young: no boot park.
    if (launches.length < ids.length) return undefined;
    return new Date(Math.min(...launches));
  } catch (error) {
    logStep(logger, "warn", "gpu_fleet_launch_times_failed", { group: group.name, error: errorMessage(error) });
    return undefined;
  }
}
