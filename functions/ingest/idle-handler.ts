import { type EC2Client, type Instance, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { IdleConfig } from "./config";
import type { FetchFn } from "./gpu-http";
import { describeInstanceById, readGpuInstanceId } from "./gpu";
import { type GpuStatus, idleDecision } from "./idle-decision";

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

const QUEUE_DEPTH = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"] as const;

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
  const [queued, status] = await Promise.all([queuedWindows(deps), serviceStatus(deps, instance)]);
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
  if ((await queuedWindows(deps)) > 0) {
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

/** Windows waiting on the ingest queue and parked or in delivery on its DLQ. */
async function queuedWindows(deps: IdleHandlerDeps): Promise<number> {
  const depths = await Promise.all(
    [deps.config.ingestQueueUrl, deps.config.dlqUrl].map(async (QueueUrl) => {
      const out = await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: [...QUEUE_DEPTH] }));
      return QUEUE_DEPTH.reduce((sum, k) => sum + Number(out.Attributes?.[k] ?? 0), 0);
    }),
  );
  return depths.reduce((a, b) => a + b, 0);
}

/** The GPU service's own account of its work, or undefined when it does not answer sensibly. */
async function serviceStatus(deps: IdleHandlerDeps, instance: Instance): Promise<GpuStatus | undefined> {
  if (!instance.PrivateIpAddress) return undefined;
  const url = `http://${instance.PrivateIpAddress}:${deps.config.servicePort}${deps.config.statusPath}`;
  try {
    const res = await deps.fetch(url, { method: "GET", signal: AbortSignal.timeout(deps.config.requestTimeoutMs) });
    const body = (await res.json()) as Partial<GpuStatus>;
    if (!res.ok || typeof body.active !== "number" || typeof body.idleSeconds !== "number")
      throw new Error(`status ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
    return { active: body.active, idleSeconds: body.idleSeconds };
  } catch (error) {
    logStep(deps.logger, "warn", "gpu_status_unavailable", { instance_id: instance.InstanceId, error: errorMessage(error) });
    return undefined;
  }
}
