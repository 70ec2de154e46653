import { type EC2Client, type Instance, StopInstancesCommand } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { IdleConfig } from "../ingest/config";
import type { FetchFn } from "../ingest/gpu-http";
import { describeInstanceById, readGpuInstanceId } from "../ingest/gpu";
import { idleDecision } from "./idle-decision";
import { queuedWindows, serviceStatus } from "./work-signals";

export interface IdleHandlerDeps {
  ssm: SSMClient;
  ec2: EC2Client;
  sqs: SQSClient;
  fetch: FetchFn;
  config: IdleConfig;
  logger: StepLogger;
  metrics: MetricsSink;
  now?: () => number;
}

/**
 * The GPU idle check, one per scheduled tick: stops this stack's GPU after `idleStopMinutes` of no
 * work. Every tick is independent (a duplicate tick reads the same state and at worst stops an
 * instance that is already stopping, which EC2 accepts), so ticks need no idempotency record.
 */
export function createIdleHandler(deps: IdleHandlerDeps): SqsBatchHandler {
  const now = deps.now ?? Date.now;
  return async (event, context) => {
    try {
      return await processSqsBatch(event, () => check(deps, now()), context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

async function check(deps: IdleHandlerDeps, nowMs: number): Promise<void> {
  const instance = await findGpu(deps);
  const state = instance?.State?.Name ?? "not_found";
  deps.metrics.addMetric("GpuRunning", MetricUnit.Count, state === "running" ? 1 : 0);
  if (!instance?.InstanceId || state !== "running") {
    logStep(deps.logger, "info", "gpu_idle_check", { state, decision: "not_running" });
    return;
  }
  const hold = instance.Tags?.find((t) => t.Key === deps.config.holdTag)?.Value;
  const [queued, status] = await Promise.all([
    queuedWindows(deps.sqs, ingestQueues(deps)),
    serviceStatus(deps, { instanceId: instance.InstanceId, privateIp: instance.PrivateIpAddress }),
  ]);
  const decision = idleDecision({ state, launchTime: instance.LaunchTime, hold, queued, status, nowMs, idleStopMinutes: deps.config.idleStopMinutes });
  deps.metrics.addMetric("GpuIdleMinutes", MetricUnit.Count, Math.floor(decision.idleSeconds / 60));
  logStep(deps.logger, "info", "gpu_idle_check", {
    instance_id: instance.InstanceId,
    decision: decision.action === "none" ? decision.reason : decision.action,
    idle_seconds: Math.round(decision.idleSeconds),
    queued,
    active: status?.active ?? null,
  });
  if (decision.action !== "stop") return;
  // Look once more right before stopping: a window that arrived since is work.
  if ((await queuedWindows(deps.sqs, ingestQueues(deps))) > 0) {
    logStep(deps.logger, "info", "gpu_idle_stop_skipped", { instance_id: instance.InstanceId, reason: "work_arrived" });
    return;
  }
  const out = await deps.ec2.send(new StopInstancesCommand({ InstanceIds: [instance.InstanceId] }));
  const previous = out.StoppingInstances?.[0]?.PreviousState?.Name;
  logStep(deps.logger, "info", "gpu_idle_stopped", {
    instance_id: instance.InstanceId,
    previous_state: previous ?? "unknown",
    idle_seconds: Math.round(decision.idleSeconds),
    basis: decision.basis,
  });
  // Counted once per real stop: a duplicate tick finds it stopping and is not a second stop.
  if (previous === "running") countOne(deps.metrics, "GpuStopped");
}

async function findGpu(deps: IdleHandlerDeps): Promise<Instance | undefined> {
  const id = await readGpuInstanceId(deps);
  return id ? ((await describeInstanceById(deps.ec2, id)) ?? undefined) : undefined;
}

const ingestQueues = (deps: IdleHandlerDeps): string[] => [deps.config.ingestQueueUrl, deps.config.dlqUrl];
