import { DescribeInstancesCommand, type EC2Client, type Instance, paginateDescribeInstances, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { GetParameterCommand, PutParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";
import { instancesOf } from "../shared/ec2";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { describeFleet, ensureFleetCapacity, type FleetGroup, fleetAddress, type FleetTarget } from "./fleet";
import type { AutostartOutcome, GpuAddress } from "./gpu-address";

export type { AutostartOutcome, GpuAddress } from "./gpu-address";

/** The SSM parameter holds this when no GPU instance is registered. */
export const NO_INSTANCE_SENTINEL = "none";

export interface GpuLookupDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  logger: StepLogger;
  config: { instanceIdParam: string; nameTag: string };
  /** Fleet mode: the Auto Scaling group and its load balancer stand in for the single instance (fleet.ts). */
  fleet?: FleetTarget;
}

export class GpuUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GpuUnavailableError";
  }
}

/** States from which the instance can never run again, so an SSM id pointing at one is stale. */
const GONE_STATES: ReadonlySet<string> = new Set(["terminated", "shutting-down"]);
const STARTING_OR_RUNNING: ReadonlySet<string> = new Set(["pending", "running"]);

function hasErrorName(error: unknown, ...names: string[]): boolean {
  return error instanceof Error && names.includes(error.name);
}

/** The instance id registered in SSM, or null when it holds the sentinel or does not exist. */
export async function readGpuInstanceId(deps: Pick<GpuLookupDeps, "ssm" | "logger"> & { config: { instanceIdParam: string } }): Promise<string | null> {
  const name = deps.config.instanceIdParam;
  try {
    const out = await deps.ssm.send(new GetParameterCommand({ Name: name }));
    const value = out.Parameter?.Value?.trim();
    return !value || value === NO_INSTANCE_SENTINEL ? null : value;
  } catch (error) {
    if (!hasErrorName(error, "ParameterNotFound")) throw error;
    logStep(deps.logger, "warn", "gpu_instance_id_param_not_found", { param: name });
    return null;
  }
}

/** The instance, or null when EC2 no longer knows the id (it vanishes some time after termination). */
export async function describeInstanceById(ec2: EC2Client, instanceId: string): Promise<Instance | null> {
  try {
    const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    return instancesOf(out).find((i) => i.InstanceId === instanceId) ?? null;
  } catch (error) {
    if (hasErrorName(error, "InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed")) return null;
    throw error;
  }
}

async function findInstanceByTag(deps: GpuLookupDeps, state: "stopped" | "running"): Promise<Instance | null> {
  const pages = paginateDescribeInstances(
    { client: deps.ec2 },
    {
      Filters: [
        { Name: "tag:Name", Values: [deps.config.nameTag] },
        { Name: "instance-state-name", Values: [state] },
      ],
    },
  );
  for await (const page of pages) {
    const found = instancesOf(page).find((i) => i.InstanceId);
    if (found) return found;
  }
  return null;
}

function runningAddress(instance: Instance | null): GpuAddress | null {
  if (instance?.State?.Name !== "running" || !instance.InstanceId || !instance.PrivateIpAddress) return null;
  return { instanceId: instance.InstanceId, privateIp: instance.PrivateIpAddress, ...(instance.LaunchTime ? { launchTime: instance.LaunchTime } : {}) };
}

interface StartCandidate {
  instanceId: string;
  state: string;
  source: "ssm" | "tag_scan";
}

/**
 * What an availability check already read: the SSM id and, for a real id, the instance it names
 * (null when EC2 does not know it). Passing it to `tryStartGpu` spares a second SSM read and
 * DescribeInstances in the same invocation.
 */
export interface GpuObservation {
  ssmId: string | null;
  instance: Instance | null;
  /** Fleet mode: the group as the availability check described it. */
  fleet?: FleetGroup;
}

async function findStartCandidate(deps: GpuLookupDeps, seen?: GpuObservation): Promise<StartCandidate | null> {
  const ssmId = seen ? seen.ssmId : await readGpuInstanceId(deps);
  if (ssmId) {
    const instance = seen ? seen.instance : await describeInstanceById(deps.ec2, ssmId);
    const state = instance?.State?.Name ?? "not_found";
    if (instance && !GONE_STATES.has(state)) return { instanceId: ssmId, state, source: "ssm" };
    logStep(deps.logger, "warn", "gpu_instance_id_stale", { instance_id: ssmId, state });
  }
  const tagged = await findInstanceByTag(deps, "stopped");
  if (!tagged?.InstanceId) return null;
  return { instanceId: tagged.InstanceId, state: tagged.State?.Name ?? "stopped", source: "tag_scan" };
}

/**
 * Fire-and-forget start of the GPU instance: never throws and never waits for `running`.
 * It does not write SSM; the window consumer re-registers the id once the instance runs.
 */
export async function tryStartGpu(deps: GpuLookupDeps, seen?: GpuObservation): Promise<AutostartOutcome> {
  if (deps.fleet) return ensureFleetCapacity(deps.fleet, deps.logger, seen?.fleet);
  try {
    const candidate = await findStartCandidate(deps, seen);
    if (!candidate) {
      logStep(deps.logger, "info", "gpu_autostart_no_instance_found");
      return "no_instance_found";
    }
    if (candidate.state === "stopping") {
      // StartInstances would only be refused (IncorrectInstanceState); the next return starts it.
      logStep(deps.logger, "info", "gpu_autostart_stopping", { instance_id: candidate.instanceId });
      return "stopping";
    }
    if (STARTING_OR_RUNNING.has(candidate.state)) {
      logStep(deps.logger, "info", "gpu_autostart_skipped", {
        instance_id: candidate.instanceId,
        state: candidate.state,
      });
      return "skipped";
    }
    try {
      await deps.ec2.send(new StartInstancesCommand({ InstanceIds: [candidate.instanceId] }));
    } catch (error) {
      const refused = startRefusal(error);
      if (!refused) throw error;
      logStep(deps.logger, refused === "stopping" ? "info" : "warn", `gpu_autostart_${refused}`, {
        instance_id: candidate.instanceId,
        error: errorMessage(error),
      });
      return refused;
    }
    logStep(deps.logger, "info", "gpu_autostart_attempted", {
      instance_id: candidate.instanceId,
      source: candidate.source,
    });
    return "attempted";
  } catch (error) {
    logStep(deps.logger, "error", "gpu_autostart_failed", { error: errorMessage(error) });
    return "failed";
  }
}

/** The two StartInstances refusals that mean "try again soon" rather than "broken". */
function startRefusal(error: unknown): "stopping" | "insufficient_capacity" | undefined {
  if (hasErrorName(error, "IncorrectInstanceState")) return "stopping";
  if (hasErrorName(error, "InsufficientInstanceCapacity")) return "insufficient_capacity";
  return undefined;
}

/**
 * The running GPU's address, or null if none runs. Falls back to the Name tag when SSM holds
 * the sentinel or an id that is not running, and then re-registers the running id in SSM.
 * SSM/EC2 errors (after the SDK's retries) propagate.
 */
export async function findRunningGpu(deps: GpuLookupDeps): Promise<GpuAddress | null> {
  return (await lookupGpu(deps)).address;
}

/** findRunningGpu, plus what it read on the way, for a start attempt that follows. */
export async function lookupGpu(deps: GpuLookupDeps): Promise<{ address: GpuAddress | null; seen: GpuObservation }> {
  if (deps.fleet) {
    const group = await describeFleet(deps.fleet.autoscaling, deps.fleet.groupName);
    return { address: fleetAddress(group, deps.fleet.serviceHost), seen: { ssmId: null, instance: null, fleet: group } };
  }
  const ssmId = await readGpuInstanceId(deps);
  let instance: Instance | null = null;
  if (ssmId) {
    instance = await describeInstanceById(deps.ec2, ssmId);
    const address = runningAddress(instance);
    if (address) return { address, seen: { ssmId, instance } };
    logStep(deps.logger, "info", "gpu_instance_not_running", {
      instance_id: ssmId,
      state: instance?.State?.Name ?? "not_found",
    });
  }
  const address = runningAddress(await findInstanceByTag(deps, "running"));
  if (address) await registerInstanceId(deps, address.instanceId, ssmId);
  return { address, seen: { ssmId, instance } };
}

/** Like findRunningGpu, but no running GPU is an error: the caller's records must be retried. */
export async function resolveGpuAddress(deps: GpuLookupDeps): Promise<GpuAddress> {
  const address = await findRunningGpu(deps);
  if (!address)
    throw new GpuUnavailableError(deps.fleet ? `no GPU in service in group ${deps.fleet.groupName}` : "no running GPU instance (checked SSM id and Name tag)");
  return address;
}

/**
 * A failed write-back is only logged: the GPU is reachable now, and the next invocation's tag
 * scan will try again.
 */
async function registerInstanceId(deps: GpuLookupDeps, instanceId: string, previous: string | null): Promise<void> {
  try {
    await deps.ssm.send(
      new PutParameterCommand({
        Name: deps.config.instanceIdParam,
        Value: instanceId,
        Type: "String",
        Overwrite: true,
      }),
    );
    logStep(deps.logger, "info", "gpu_instance_id_updated", {
      instance_id: instanceId,
      previous_instance_id: previous ?? NO_INSTANCE_SENTINEL,
    });
  } catch (error) {
    logStep(deps.logger, "warn", "gpu_instance_id_update_failed", {
      instance_id: instanceId,
      error: errorMessage(error),
    });
  }
}
