import { DescribeInstancesCommand, type EC2Client, type Instance, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { instancesOf } from "../shared/ec2";
import { errorMessage, logStep } from "../shared/logger";
import { countOne } from "../shared/metrics";
import { POOL_CLASS_TAG_KEY, POOL_TAG_KEY } from "./tags";
import { type Advert, type ResourceClassSpec, type WorkflowRequirements } from "./advert";
import { acquireLock, type LockDeps, releaseLock } from "./lock";
import { DEFAULT_TOLERANCE, pickup, type PickupDeps } from "./pickup";

export interface ClaimDeps extends PickupDeps, LockDeps {
  ec2: EC2Client;
}

/** Input of {@link claimInstance}. */
export interface ClaimRequest {
  /**
   * The claimant; stored in the lock as its owner. Stable for the workflow (never a request or
   * invocation id): it is how a retried lock write recognises its own lock.
   */
  workflowId: string;
  /** The pool queue of `resourceClass`. */
  queueUrl: string;
  resourceClass: ResourceClassSpec;
  requirements: WorkflowRequirements;
  /** The claim table (hash key `instance_id`, TTL `expires_at`). */
  claimTableName: string;
  /** Value of the `encache:pool` tag every pool instance carries. */
  poolTag: string;
  /** How long the claim lock lives, in seconds (TTL). */
  lockTtlSeconds: number;
  /** Re-queue delay of unsuitable adverts (0–900 s). */
  requeueDelaySeconds: number;
  /** @default 5 */
  tolerance?: number;
  /** Epoch ms: no pickup or claim attempt starts after it. */
  deadline: number;
}

/** Output of {@link claimInstance}. */
export type ClaimResult =
  | {
      outcome: "claimed";
      instanceId: string;
      advert: Advert;
      /** The instance's state when claimed; `stopped` ones were started (`started: true`). */
      state: string;
      started: boolean;
      /** Epoch seconds at which the lock expires. */
      lockExpiresAt: number;
      /** Pickups this claim took (1 unless a race was lost or an instance was gone). */
      attempts: number;
    }
  | { outcome: "exhausted"; scope: "global" | "local" | "deadline"; attempts: number };

/** Instances in these states can serve a workflow (stopped ones after StartInstances). */
const CLAIMABLE = new Set(["pending", "running", "stopped"]);

/**
 * The claim API. Picks an advert from the pool, takes the per-instance DynamoDB lock
 * (conditional write), checks the instance in EC2, starts it if it is stopped, and returns it.
 * A lost race, or an instance that is terminated, missing, stopping or not a pool member of
 * the class, releases its lock (if taken) and asks the pool again. The lock's owner is the
 * workflow id: a failed lock condition on an item this workflow owns (its own write, whose
 * response was lost) is a claim, not a lost race.
 *
 * Errors: `PickupArgumentError` for invalid delay/tolerance/deadline; SQS, DynamoDB and EC2
 * errors (after the SDK's retries) propagate, and a lock already taken is released first.
 * Exhaustion is a result, never an error, and is counted as `PoolExhausted`.
 */
export async function claimInstance(deps: ClaimDeps, request: ClaimRequest): Promise<ClaimResult> {
  const tolerance = request.tolerance ?? DEFAULT_TOLERANCE;
  let attempts = 0;
  for (;;) {
    attempts += 1;
    const picked = await pickup(deps, {
      queueUrl: request.queueUrl,
      resourceClass: request.resourceClass,
      requirements: request.requirements,
      requeueDelaySeconds: request.requeueDelaySeconds,
      tolerance,
      deadline: request.deadline,
    });
    if (picked.kind !== "suitable") {
      const scope = picked.kind === "deadline" ? "deadline" : picked.scope;
      logStep(deps.logger, "info", "claim_exhausted", { workflow_id: request.workflowId, resource_class: request.resourceClass.name, scope, attempts });
      countOne(deps.metrics, "PoolExhausted");
      return { outcome: "exhausted", scope, attempts };
    }
    const instanceId = picked.advert.instance_id;
    const nowSeconds = Math.floor(deps.clock() / 1000);
    let lock: Awaited<ReturnType<typeof acquireLock>>;
    try {
      lock = await acquireLock(deps, request.claimTableName, instanceId, request.workflowId, nowSeconds, nowSeconds + request.lockTtlSeconds, {
        resource_class: request.resourceClass.name,
      });
    } catch (error) {
      // Every send of the lock write failed, and some may have applied with their answer lost: the
      // lock may be this workflow's with nobody to release it (the caller gets an error, not an
      // instance), held for its whole TTL. It is released (conditional on this owner) before the error goes up.
      await releaseQuietly(deps, request, instanceId, "acquire_failed");
      throw error;
    }
    if (!lock.acquired) {
      logStep(deps.logger, "info", "claim_lost_race", { workflow_id: request.workflowId, instance_id: instanceId, holder: lock.holder ?? null });
      countOne(deps.metrics, "ClaimsLostRace");
      continue;
    }
    const lockExpiresAt = lock.expiresAt;
    if (lock.recovered) {
      // The lock is this workflow's already (a lost PutItem response the SDK retried): taking it for
      // a lost race would leak it for its whole TTL, with the instance's advert already gone.
      logStep(deps.logger, "warn", "claim_lock_recovered", { workflow_id: request.workflowId, instance_id: instanceId, lock_expires_at: lockExpiresAt });
      countOne(deps.metrics, "ClaimLocksRecovered");
    }
    let verdict: { claimable: true; state: string; started: boolean } | { claimable: false; reason: string };
    try {
      verdict = await checkAndStart(deps, request, instanceId);
    } catch (error) {
      await releaseQuietly(deps, request, instanceId, "check_failed");
      throw error;
    }
    if (!verdict.claimable) {
      // A release that fails leaves a lock on an instance nobody can claim (it expires with its TTL):
      // no reason to fail the workflow's claim when the pool may hold another instance.
      await releaseQuietly(deps, request, instanceId, "instance_unavailable");
      logStep(deps.logger, "warn", "claim_instance_unavailable", { workflow_id: request.workflowId, instance_id: instanceId, reason: verdict.reason });
      countOne(deps.metrics, "ClaimsInstanceUnavailable");
      continue;
    }
    logStep(deps.logger, "info", "instance_claimed", {
      workflow_id: request.workflowId,
      instance_id: instanceId,
      state: verdict.state,
      started: verdict.started,
      attempts,
    });
    countOne(deps.metrics, "InstancesClaimed");
    return { outcome: "claimed", instanceId, advert: picked.advert, state: verdict.state, started: verdict.started, lockExpiresAt, attempts };
  }
}

/**
 * Releases the workflow's lock on the way out of a failed claim; a release that fails too is logged
 * (the lock then lapses at its TTL) so that the claim's own error is the one that goes up.
 */
async function releaseQuietly(deps: ClaimDeps, request: ClaimRequest, instanceId: string, reason: string): Promise<void> {
  try {
    await releaseLock(deps, request.claimTableName, instanceId, request.workflowId);
  } catch (error) {
    logStep(deps.logger, "warn", "claim_lock_release_failed", { workflow_id: request.workflowId, instance_id: instanceId, reason, error: errorMessage(error) });
    countOne(deps.metrics, "ClaimLockReleaseFailed");
  }
}

async function describe(ec2: EC2Client, instanceId: string): Promise<Instance | null> {
  try {
    const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    return instancesOf(out).find((i) => i.InstanceId === instanceId) ?? null;
  } catch (error) {
    if (error instanceof Error && (error.name === "InvalidInstanceID.NotFound" || error.name === "InvalidInstanceID.Malformed")) return null;
    throw error;
  }
}

async function checkAndStart(
  deps: ClaimDeps,
  request: ClaimRequest,
  instanceId: string,
): Promise<{ claimable: true; state: string; started: boolean } | { claimable: false; reason: string }> {
  const instance = await describe(deps.ec2, instanceId);
  if (!instance) return { claimable: false, reason: "not_found" };
  const tag = (key: string) => instance.Tags?.find((t) => t.Key === key)?.Value;
  // A forged or stale advert must not hand out an instance outside the pool.
  if (tag(POOL_TAG_KEY) !== request.poolTag || tag(POOL_CLASS_TAG_KEY) !== request.resourceClass.name) {
    return { claimable: false, reason: "not_a_pool_member" };
  }
  const state = instance.State?.Name ?? "unknown";
  if (!CLAIMABLE.has(state)) return { claimable: false, reason: state };
  if (state !== "stopped") return { claimable: true, state, started: false };
  await deps.ec2.send(new StartInstancesCommand({ InstanceIds: [instanceId] }));
  logStep(deps.logger, "info", "claim_instance_started", { instance_id: instanceId });
  return { claimable: true, state, started: true };
}

/**
 * Gives a claimed instance back (the claimant's own lock only). Resolves false if another
 * workflow holds the instance; true once the claimant's lock is gone (also when a lost response
 * means an earlier attempt of this release already deleted it, or the lock had expired away).
 */
export async function releaseClaim(deps: Pick<ClaimDeps, "dynamodb">, claimTableName: string, instanceId: string, workflowId: string): Promise<boolean> {
  return releaseLock(deps, claimTableName, instanceId, workflowId);
}
