import { type AutoScalingClient, CreateOrUpdateTagsCommand, SetDesiredCapacityCommand, SetInstanceProtectionCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { instancesOf } from "../shared/ec2";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { ScalerConfig } from "../ingest/config";
import { describeFleet, type FleetGroup } from "../ingest/fleet";
import type { FetchFn } from "../ingest/gpu-http";
import { SCALED_OUT_AT_TAG } from "./group-tags";
import { type FleetMember, type ScaleDecision, scaleDecision } from "./scale-decision";
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
 * The GPU fleet's scaler, one per scheduled tick (fleet mode's stand-in for the idle stop): sizes the
 * group to the backlog, keeps busy instances protected from scale-in, and takes the group to zero
 * after the idle time (scale-decision.ts). Every tick reads the state afresh and sets absolute
 * values (a desired capacity, a protection flag), so a duplicate or concurrent tick sets the same
 * values again: ticks need no idempotency record.
 */
export function createScalerHandler(deps: ScalerHandlerDeps): SqsBatchHandler {
  const now = deps.now ?? Date.now;
  return async (event, context) => {
    try {
      return await processSqsBatch(event, () => tick(deps, now()), context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

async function tick(deps: ScalerHandlerDeps, nowMs: number): Promise<void> {
  const queues = [deps.config.ingestQueueUrl, deps.config.dlqUrl];
  const [group, backlog] = await Promise.all([describeFleet(deps.autoscaling, deps.config.fleetGroupName), queuedWindows(deps.sqs, queues)]);
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
