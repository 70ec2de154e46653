import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { type ResendPolicy, withResends } from "../shared/resend";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { type Advert, classContradiction, parseAdvert, type ResourceClassSpec, unsuitability, type WorkflowRequirements } from "./advert";

/** The original system's tolerance: the same instance seen more than this many times means local exhaustion. */
export const DEFAULT_TOLERANCE = 5;
/**
 * How long a receive waits for an advert before the pool counts as empty. A short poll (0) asks
 * only a sample of SQS's servers and "might not return any messages" while the queue holds some
 * (SQS developer guide, short and long polling), which would be a false global exhaustion: the
 * workflow launches cold while warm instances wait. A long poll asks every server and returns as
 * soon as one advert is there, so it costs its wait only when the pool really is empty.
 */
export const EMPTY_POOL_WAIT_SECONDS = 1;
/** SQS DelaySeconds limit. */
export const MAX_REQUEUE_DELAY_SECONDS = 900;

/** Injected so tests and other runtimes decide what "now" is; epoch milliseconds. */
export type Clock = () => number;

export interface PickupDeps {
  sqs: SQSClient;
  clock: Clock;
  logger: StepLogger;
  metrics: MetricsSink;
  /** How the delete on receipt is re-sent after the SDK gave up (absent: withResends' DEFAULT_RESEND); tests pass an instant sleep. */
  resend?: ResendPolicy;
}

export interface PickupRequest {
  /** URL of the pool queue of `resourceClass`. */
  queueUrl: string;
  /** The class the queue serves; adverts that contradict it are discarded. */
  resourceClass: ResourceClassSpec;
  /** The workflow's compute requirements. */
  requirements: WorkflowRequirements;
  /** DelaySeconds of a re-queued unsuitable advert (0–900). */
  requeueDelaySeconds: number;
  /** Sightings of one instance_id allowed before local exhaustion (≥ 1; the original system's is 5). */
  tolerance: number;
  /** Epoch ms after which no new cycle starts. */
  deadline: number;
}

export type PickupResult =
  | { kind: "suitable"; advert: Advert; cycles: number }
  | { kind: "exhausted"; scope: "global" | "local"; cycles: number; instanceId?: string }
  | { kind: "deadline"; cycles: number };

export class PickupArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PickupArgumentError";
  }
}

export function validatePickupRequest(r: Pick<PickupRequest, "requeueDelaySeconds" | "tolerance" | "deadline">): void {
  const errors: string[] = [];
  if (!Number.isInteger(r.requeueDelaySeconds) || r.requeueDelaySeconds < 0 || r.requeueDelaySeconds > MAX_REQUEUE_DELAY_SECONDS) {
    errors.push(`requeueDelaySeconds must be an integer in 0..${MAX_REQUEUE_DELAY_SECONDS} (got ${r.requeueDelaySeconds})`);
  }
  if (!Number.isInteger(r.tolerance) || r.tolerance < 1) errors.push(`tolerance must be an integer ≥ 1 (got ${r.tolerance})`);
  if (!Number.isFinite(r.deadline)) errors.push("deadline must be an epoch-ms number");
  if (errors.length > 0) throw new PickupArgumentError(errors.join("; "));
}

/**
 * The original system's pickup manager. Each cycle: receive one message (a 1 s long poll, not the
 * original's short poll: EMPTY_POOL_WAIT_SECONDS), delete it at once, validate
 * it, then discard (malformed or contradicting its class), re-queue with a delay (unsuitable)
 * or return it (suitable). Ends with global exhaustion on an empty receive, local exhaustion
 * when one instance_id is seen more than `tolerance` times, or `deadline`.
 *
 * The loop is bounded: every cycle removes a message, re-queues only unsuitable ones, and an
 * unsuitable instance can come back at most `tolerance` times; the deadline caps the rest.
 * SQS errors (after the SDK's own retries) propagate to the caller.
 */
export async function pickup(deps: PickupDeps, request: PickupRequest): Promise<PickupResult> {
  validatePickupRequest(request);
  const { logger, metrics } = deps;
  const sightings = new Map<string, number>();
  let cycles = 0;

  while (deps.clock() < request.deadline) {
    cycles += 1;
    const received = await deps.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: request.queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: EMPTY_POOL_WAIT_SECONDS }),
    );
    const message = received.Messages?.[0];
    if (!message) {
      logStep(logger, "info", "pool_exhausted", { scope: "global", resource_class: request.resourceClass.name, cycles });
      countOne(metrics, "PoolExhaustedGlobal");
      return { kind: "exhausted", scope: "global", cycles };
    }
    // Delete at once: concurrent pickups must not see the same advert (docs/parts/pool.md, step 2).
    // Re-sent after the SDK gave up: a delete whose answer was lost has removed the advert, and
    // failing here would drop it unjudged (a malformed one neither discarded nor counted). A
    // DeleteMessage of the same handle again succeeds, so the re-send learns the outcome.
    await withResends(() => deps.sqs.send(new DeleteMessageCommand({ QueueUrl: request.queueUrl, ReceiptHandle: message.ReceiptHandle })), deps.resend);

    const body = message.Body ?? "";
    const parsed = parseAdvert(body);
    if (!parsed.ok) {
      discard(deps, message.MessageId, parsed.reason, request.resourceClass.name);
      continue;
    }
    const advert = parsed.advert;
    const contradiction = classContradiction(advert, request.resourceClass);
    if (contradiction) {
      discard(deps, message.MessageId, contradiction, request.resourceClass.name, advert.instance_id);
      continue;
    }

    const seen = (sightings.get(advert.instance_id) ?? 0) + 1;
    sightings.set(advert.instance_id, seen);
    if (seen > request.tolerance) {
      // The advert that crossed the tolerance stays available to other workflows.
      await requeue(deps, request, body, advert, "tolerance_exceeded", seen);
      logStep(logger, "info", "pool_exhausted", {
        scope: "local",
        resource_class: request.resourceClass.name,
        instance_id: advert.instance_id,
        sightings: seen,
        tolerance: request.tolerance,
        cycles,
      });
      countOne(metrics, "PoolExhaustedLocal");
      return { kind: "exhausted", scope: "local", cycles, instanceId: advert.instance_id };
    }

    const mismatch = unsuitability(advert, request.requirements);
    if (mismatch === null) {
      logStep(logger, "info", "advert_suitable", { instance_id: advert.instance_id, resource_class: advert.resource_class, cycles });
      countOne(metrics, "AdvertsPickedUp");
      return { kind: "suitable", advert, cycles };
    }
    await requeue(deps, request, body, advert, mismatch, seen);
  }

  logStep(logger, "warn", "pickup_deadline_reached", { resource_class: request.resourceClass.name, cycles });
  countOne(metrics, "PickupDeadlineReached");
  return { kind: "deadline", cycles };
}

function discard(deps: PickupDeps, messageId: string | undefined, reason: string, resourceClass: string, instanceId?: string): void {
  // Already deleted on receipt; the original system drops malformed adverts rather than quarantining them.
  logStep(deps.logger, "warn", "advert_discarded", { message_id: messageId, reason, resource_class: resourceClass, instance_id: instanceId });
  countOne(deps.metrics, "AdvertsDiscarded");
}

async function requeue(deps: PickupDeps, request: PickupRequest, body: string, advert: Advert, reason: string, sightings: number): Promise<void> {
  await deps.sqs.send(new SendMessageCommand({ QueueUrl: request.queueUrl, MessageBody: body, DelaySeconds: request.requeueDelaySeconds }));
  logStep(deps.logger, "info", "advert_requeued", {
    instance_id: advert.instance_id,
    reason,
    sightings,
    delay_seconds: request.requeueDelaySeconds,
  });
  countOne(deps.metrics, "AdvertsRequeued");
}
