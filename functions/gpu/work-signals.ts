import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import type { FetchFn } from "../ingest/gpu-http";
import type { GpuStatus } from "./idle-decision";

/**
 * The two signals of work that the idle stop (one instance) and the scaler (the fleet) both read:
 * the windows queued, and each GPU service's own account of what it is doing.
 */

const QUEUE_DEPTH = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"] as const;

/** Windows waiting on the ingest queue and parked or in delivery on its DLQ (visible, in flight and delayed). */
export async function queuedWindows(sqs: SQSClient, queueUrls: readonly string[]): Promise<number> {
  const depths = await Promise.all(
    queueUrls.map(async (QueueUrl) => {
      const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: [...QUEUE_DEPTH] }));
      return QUEUE_DEPTH.reduce((sum, k) => sum + Number(out.Attributes?.[k] ?? 0), 0);
    }),
  );
  return depths.reduce((a, b) => a + b, 0);
}

export interface StatusDeps {
  fetch: FetchFn;
  config: { servicePort: number; statusPath: string; requestTimeoutMs: number };
  logger: StepLogger;
}

/** The GPU service's own account of its work, or undefined when it does not answer sensibly. */
export async function serviceStatus(deps: StatusDeps, instance: { instanceId: string; privateIp: string | undefined }): Promise<GpuStatus | undefined> {
  if (!instance.privateIp) return undefined;
  const url = `http://${instance.privateIp}:${deps.config.servicePort}${deps.config.statusPath}`;
  try {
    const res = await deps.fetch(url, { method: "GET", signal: AbortSignal.timeout(deps.config.requestTimeoutMs) });
    const body = (await res.json()) as Partial<GpuStatus>;
    if (!res.ok || typeof body.active !== "number" || typeof body.idleSeconds !== "number")
      throw new Error(`status ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
    return { active: body.active, idleSeconds: body.idleSeconds };
  } catch (error) {
    logStep(deps.logger, "warn", "gpu_status_unavailable", { instance_id: instance.instanceId, error: errorMessage(error) });
    return undefined;
  }
}
