import {
  type AutoScalingClient,
  CreateOrUpdateTagsCommand,
  DeleteTagsCommand,
  SetDesiredCapacityCommand,
  SetInstanceProtectionCommand,
  UpdateAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import type { SQSRecord } from "aws-lambda";
import { instancesOf } from "../shared/ec2";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { ScalerConfig } from "../ingest/config";
import { describeFleet, type FleetGroup } from "../ingest/fleet";
import type { FetchFn } from "../ingest/gpu-http";
import { SCALED_OUT_AT_TAG, spotInterruptionTag } from "./group-tags";
import { type FleetMember, type ScaleDecision, scaleDecision } from "./scale-decision";
import { onDemandPercentWanted, type SpotBreakerSettings, type SpotBreakerState, spotBreaker } from "./spot-breaker";
import { type SpotSignal, spotSignalOf } from "./spot-events";
import { queuedWindows, serviceStatus } from "./work-signals";

export interface ScalerHandlerDeps {
  autoscaling: AutoScalingClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  config: ScalerConfig;
  logger: StepLogger;
  metrics: MetricsSink;
  now?: () => number;
}

export { SCALED_OUT_AT_TAG };

/** SetInstanceProtection takes at most 50 instance ids per call. */
const PROTECTION_BATCH = 50;

/**
 * The GPU fleet's scaler, one per message on its queue (fleet mode's stand-in for the idle stop):
 * sizes the group to the backlog, keeps busy instances protected from scale-in, and takes the group
 * to zero after the idle time (scale-decision.ts). Its queue carries the schedule's ticks and, with
 * Spot, EC2's interruption warnings and rebalance recommendations: one of the group's own is first
 * recorded as a tag on the group, and every message then ticks, which also sets the group's
 * on-demand share by the Spot breaker (spot-breaker.ts). Every tick reads the state afresh and sets
 * absolute values (a desired capacity, a protection flag, a percentage, a tag per interruption), so
 * a duplicate or concurrent tick sets the same values again: ticks need no idempotency record.
 */
export function createScalerHandler(deps: ScalerHandlerDeps): SqsBatchHandler {
  const now = deps.now ?? Date.now;
  return async (event, context) => {
    try {
      return await processSqsBatch(event, (record) => tick(deps, record, now()), context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

async function tick(deps: ScalerHandlerDeps, record: SQSRecord, nowMs: number): Promise<void> {
  const queues = [deps.config.ingestQueueUrl, deps.config.dlqUrl];
  const [group, backlog] = await Promise.all([describeFleet(deps.autoscaling, deps.config.fleetGroupName), queuedWindows(deps.sqs, queues)]);
  const event = spotSignalOf(record.body);
  if (event && "malformed" in event)
    logStep(deps.logger, "warn", "spot_event_malformed", { group: group.name, message_id: record.messageId, reason: event.malformed });
  const tags = event && "signal" in event ? await recordInterruption(deps, group, event.signal, nowMs) : group.tags;
  // The distribution before any scale-out: what this tick launches follows the breaker.
  const breaker = await applyBreaker(deps, group, tags, nowMs);
  const members = await membersOf(deps, group);
  const scaledOutAt = Date.parse(group.tags[SCALED_OUT_AT_TAG] ?? "");
  const decision = scaleDecision({
    backlog,
    group,
    members,
    ...(group.tags[deps.config.holdTag] !== undefined ? { hold: group.tags[deps.config.holdTag] } : {}),
    ...(Number.isFinite(scaledOutAt) ? { lastScaleOutMs: scaledOutAt } : {}),
    nowMs,
    windowsPerInstance: deps.config.windowsPerInstance,
    scaleInCooldownSeconds: deps.config.scaleInCooldownSeconds,
    idleStopMinutes: deps.config.idleStopMinutes,
  });
  deps.metrics.addMetric("GpuFleetBacklog", MetricUnit.Count, backlog);
  deps.metrics.addMetric("GpuFleetInService", MetricUnit.Count, group.inService.length);
  logStep(deps.logger, "info", "gpu_fleet_scale_check", {
    group: group.name,
    backlog,
    in_service: group.inService.length,
    desired: group.desired,
    decision: decision.reason,
    target: decision.desired,
    idle_seconds: Math.round(decision.idleSeconds),
    ...(breaker
      ? {
          spot_breaker: breaker.open ? "open" : "closed",
          spot_interruptions_in_window: breaker.inWindow,
          ...(breaker.open && breaker.trip ? { spot_breaker_until: new Date(breaker.trip.untilMs).toISOString() } : {}),
        }
      : {}),
  });
  // Protection first: a scale-in must find busy instances protected before it picks what to take.
  await applyProtection(deps, group, decision);
  if (decision.desired !== group.desired) await setDesired(deps, group, decision, queues, nowMs);
  deps.metrics.addMetric("GpuFleetDesired", MetricUnit.Count, decision.desired);
}

/** The in-service instances with their addresses, launch times and services' answers. */
async function membersOf(deps: ScalerHandlerDeps, group: FleetGroup): Promise<FleetMember[]> {
  if (group.inService.length === 0) return [];
  const out = await deps.ec2.send(new DescribeInstancesCommand({ InstanceIds: group.inService.map((i) => i.instanceId) }));
  const byId = new Map(instancesOf(out).map((i) => [i.InstanceId, i]));
  return Promise.all(
    group.inService.map(async (m) => {
      const instance = byId.get(m.instanceId);
      const status = await serviceStatus(deps, { instanceId: m.instanceId, privateIp: instance?.PrivateIpAddress });
      return {
        instanceId: m.instanceId,
        protectedFromScaleIn: m.protectedFromScaleIn,
        ...(status ? { status } : {}),
        ...(instance?.LaunchTime ? { launchTime: instance.LaunchTime } : {}),
      };
    }),
  );
}

async function applyProtection(deps: ScalerHandlerDeps, group: FleetGroup, decision: ScaleDecision): Promise<void> {
  for (const protect of [true, false]) {
    const ids = decision.protection.filter((p) => p.protect === protect).map((p) => p.instanceId);
    for (let i = 0; i < ids.length; i += PROTECTION_BATCH) {
      const batch = ids.slice(i, i + PROTECTION_BATCH);
      await deps.autoscaling.send(new SetInstanceProtectionCommand({ AutoScalingGroupName: group.name, InstanceIds: batch, ProtectedFromScaleIn: protect }));
      logStep(deps.logger, "info", "gpu_fleet_protection_set", { group: group.name, instance_ids: batch, protected: protect });
    }
  }
}

async function setDesired(deps: ScalerHandlerDeps, group: FleetGroup, decision: ScaleDecision, queues: string[], nowMs: number): Promise<void> {
  const down = decision.desired < group.desired;
  // Look once more right before taking capacity away to zero: a window that arrived since is work.
  if (down && decision.desired === 0 && (await queuedWindows(deps.sqs, queues)) > 0) {
    logStep(deps.logger, "info", "gpu_fleet_scale_skipped", { group: group.name, reason: "work_arrived" });
    return;
  }
  if (!down) {
    // Written before the change: a scale-out whose tag failed would otherwise cool down from an older one.
    await deps.autoscaling.send(
      new CreateOrUpdateTagsCommand({
        Tags: [
          {
            ResourceId: group.name,
            ResourceType: "auto-scaling-group",
            Key: SCALED_OUT_AT_TAG,
            Value: new Date(nowMs).toISOString(),
            PropagateAtLaunch: false,
          },
        ],
      }),
    );
  }
  await deps.autoscaling.send(new SetDesiredCapacityCommand({ AutoScalingGroupName: group.name, DesiredCapacity: decision.desired, HonorCooldown: false }));
  logStep(deps.logger, "info", "gpu_fleet_desired_set", {
    group: group.name,
    previous_desired: group.desired,
    desired: decision.desired,
    reason: decision.reason,
  });
  countOne(deps.metrics, down ? "GpuFleetScaledIn" : "GpuFleetScaledOut");
}

/** The breaker's settings from the scaler's environment. */
function breakerSettings(config: ScalerConfig): SpotBreakerSettings {
  return {
    interruptions: config.spotBreakerInterruptions,
    windowMinutes: config.spotBreakerWindowMinutes,
    cooldownMinutes: config.spotBreakerCooldownMinutes,
  };
}

/** EC2 could not describe the instance: it never existed here or is long gone (terminated instances stay about an hour). */
const UNKNOWN_INSTANCE = new Set(["InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"]);

/**
 * Whether the interrupted instance is (or was) the group's. In the group's description while it
 * serves or drains; an event handled after it left (a retried delivery, a drain that already ended)
 * finds it by the `aws:autoscaling:groupName` tag Auto Scaling puts on what it launches.
 */
async function isMember(deps: ScalerHandlerDeps, group: FleetGroup, instanceId: string): Promise<boolean> {
  if (group.instances.some((i) => i.instanceId === instanceId)) return true;
  try {
    const out = await deps.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    return instancesOf(out).some((i) => i.InstanceId === instanceId && i.Tags?.some((t) => t.Key === "aws:autoscaling:groupName" && t.Value === group.name));
  } catch (error) {
    if (error instanceof Error && UNKNOWN_INSTANCE.has(error.name)) return false;
    throw error;
  }
}

/**
 * Records a member's interruption as its own tag (`encache:spot-interruption:<id>` = the event's
 * time), one CreateOrUpdateTags of that one key: a duplicate delivery finds it recorded, and two at
 * once write the same value. Another instance's event is counted as ignored. Returns the group's
 * tags with the record.
 */
async function recordInterruption(deps: ScalerHandlerDeps, group: FleetGroup, signal: SpotSignal, nowMs: number): Promise<Record<string, string>> {
  const fields = {
    group: group.name,
    instance_id: signal.instanceId,
    kind: signal.kind,
    time: signal.time,
    ...(signal.action ? { action: signal.action } : {}),
  };
  if (deps.config.spotPercent === 0 || !(await isMember(deps, group, signal.instanceId))) {
    logStep(deps.logger, "info", "spot_interruption_ignored", { ...fields, reason: deps.config.spotPercent === 0 ? "no_spot" : "not_a_member" });
    countOne(deps.metrics, "SpotInterruptionsIgnored");
    return group.tags;
  }
  const key = spotInterruptionTag(signal.instanceId);
  const recorded = group.tags[key];
  if (recorded !== undefined) {
    logStep(deps.logger, "info", "spot_interruption_duplicate", { ...fields, recorded });
    return group.tags;
  }
  const tags = { ...group.tags, [key]: signal.time };
  // Too old to matter (older than window + cool-down, or beyond the cap): writing it would only prune it.
  if (spotBreaker(tags, nowMs, breakerSettings(deps.config)).prune.includes(key)) {
    logStep(deps.logger, "info", "spot_interruption_stale", fields);
    return group.tags;
  }
  await deps.autoscaling.send(
    new CreateOrUpdateTagsCommand({
      Tags: [{ ResourceId: group.name, ResourceType: "auto-scaling-group", Key: key, Value: signal.time, PropagateAtLaunch: false }],
    }),
  );
  logStep(deps.logger, "info", "spot_interruption_recorded", fields);
  countOne(deps.metrics, "SpotInterruptions");
  return tags;
}

/**
 * With Spot, the group's on-demand share above the base follows the breaker: 100 while it is open,
 * the configured 100 − spotPercent otherwise, set only when the group's differs. Then the records
 * that can no longer matter go. Undefined without Spot.
 */
async function applyBreaker(deps: ScalerHandlerDeps, group: FleetGroup, tags: Record<string, string>, nowMs: number): Promise<SpotBreakerState | undefined> {
  if (deps.config.spotPercent === 0) return undefined;
  const state = spotBreaker(tags, nowMs, breakerSettings(deps.config));
  const live = group.onDemandPercentAboveBase;
  const wanted = onDemandPercentWanted(state.open, deps.config.spotPercent);
  if (live === undefined) {
    logStep(deps.logger, "warn", "gpu_fleet_no_mixed_instances_policy", { group: group.name, spot_percent: deps.config.spotPercent });
  } else if (live !== wanted) {
    await deps.autoscaling.send(
      new UpdateAutoScalingGroupCommand({
        AutoScalingGroupName: group.name,
        // The distribution as the group has it, but for the share: whichever way Auto Scaling takes the
        // parts of a distribution left out of an update (kept or defaulted), none of them changes.
        MixedInstancesPolicy: { InstancesDistribution: { ...group.instancesDistribution, OnDemandPercentageAboveBaseCapacity: wanted } },
      }),
    );
    const change = { group: group.name, previous_on_demand_percent: live, on_demand_percent: wanted };
    if (state.open && state.trip) {
      logStep(deps.logger, "warn", "spot_breaker_opened", {
        ...change,
        interruptions: state.trip.interruptions,
        tripped_at: new Date(state.trip.atMs).toISOString(),
        until: new Date(state.trip.untilMs).toISOString(),
      });
      countOne(deps.metrics, "SpotBreakerTrips");
    } else if (live === 100) logStep(deps.logger, "info", "spot_breaker_closed", change);
    else logStep(deps.logger, "info", "gpu_fleet_distribution_set", { ...change, reason: "configured" });
  }
  if (state.prune.length > 0) {
    await deps.autoscaling.send(
      new DeleteTagsCommand({ Tags: state.prune.map((Key) => ({ ResourceId: group.name, ResourceType: "auto-scaling-group", Key })) }),
    );
    logStep(deps.logger, "info", "spot_interruptions_pruned", { group: group.name, keys: state.prune });
  }
  return state;
}
