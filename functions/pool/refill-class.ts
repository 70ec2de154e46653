import { createHash } from "node:crypto";
import { BatchGetItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type EC2Client, type Instance, paginateDescribeInstances, RunInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { instancesOf } from "../shared/ec2";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { advertFor } from "./advert";
import type { PoolClassConfig, RefillConfig } from "./config";
import { acquireLock, LOCK_EXPIRES_AT, LOCK_KEY, type LockDeps, releaseLock } from "./lock";
import type { Clock } from "./pickup";

/** The lease's writes take the lock's deps, its re-send policy included. */
export interface RefillDeps extends LockDeps {
  ec2: EC2Client;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  clock: Clock;
  config: RefillConfig;
  logger: StepLogger;
  metrics: MetricsSink;
}

export type RefillOutcome = { kind: "lease_held" } | { kind: "refilled"; liveUnclaimed: number; started: string[]; launched: string[]; advertised: number };

/** The claim-table key of a class's refill lease; instance ids start with `i-`, so it never collides. */
export function leaseKey(resourceClass: string): string {
  return `lease#refill#${resourceClass}`;
}

/**
 * RunInstances idempotency token (hex SHA-256: 64 chars, EC2's limit): a retried message launches nothing new. The
 * launch count is deliberately not part of it: a retry that asks for a different MaxCount gets
 * `IdempotentParameterMismatch` (handled below) instead of a second launch, which could overshoot
 * the size while DescribeInstances has not caught up with the first one.
 */
export function clientToken(runId: string, resourceClass: string): string {
  return createHash("sha256").update(`${runId}\0${resourceClass}`).digest("hex");
}

const LIVE = new Set<string | undefined>(["pending", "running"]);

/** What the refill reads of an instance. */
interface PoolInstance {
  id: string;
  state: string | undefined;
  type: string | undefined;
}

// EC2 reports every instance with its id; the SDK types all its output fields as optional.
const poolInstance = (i: Instance): PoolInstance => ({ id: i.InstanceId!, state: i.State?.Name, type: i.InstanceType });

/** Request-tagged on every RunInstances: the resources the tag-conditioned grant covers. */
export const LAUNCH_TAGGED_RESOURCE_TYPES = ["instance", "volume", "network-interface"] as const;

/** SendMessageBatch takes at most 10 entries. */
const SQS_BATCH_MAX = 10;

function isIdempotentMismatch(error: unknown): boolean {
  return error instanceof Error && error.name === "IdempotentParameterMismatch";
}

async function poolInstances(deps: RefillDeps, cls: PoolClassConfig): Promise<PoolInstance[]> {
  const out: PoolInstance[] = [];
  const pages = paginateDescribeInstances(
    // A page token that comes back unchanged would otherwise page forever.
    { client: deps.ec2, stopOnSameToken: true },
    {
      Filters: [
        { Name: `tag:${deps.config.poolTagKey}`, Values: [deps.config.poolTag] },
        { Name: `tag:${deps.config.poolClassTagKey}`, Values: [cls.name] },
        { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped"] },
      ],
    },
  );
  for await (const page of pages) out.push(...instancesOf(page).map(poolInstance));
  return out;
}

/**
 * Ids among `ids` that hold an unexpired claim lock. Keys DynamoDB leaves unprocessed count as
 * unclaimed: counting too many idle instances can only make the run launch fewer, never more.
 */
async function claimedIds(deps: RefillDeps, ids: string[], nowSeconds: number): Promise<Set<string>> {
  const claimed = new Set<string>();
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    const out = await deps.dynamodb.send(
      new BatchGetItemCommand({
        RequestItems: {
          [deps.config.claimTableName]: {
            Keys: chunk.map((id) => ({ [LOCK_KEY]: { S: id } })),
            ProjectionExpression: "#k, #e",
            ExpressionAttributeNames: { "#k": LOCK_KEY, "#e": LOCK_EXPIRES_AT },
          },
        },
      }),
    );
    // No responses for the table: every key was left unprocessed.
    for (const item of out.Responses?.[deps.config.claimTableName] ?? []) {
      // The key is on every item returned. An item without an expiry (not written by acquireLock)
      // compares as NaN, so it counts as unclaimed.
      const id = item[LOCK_KEY]!.S!;
      if (Number(item[LOCK_EXPIRES_AT]?.N) >= nowSeconds) claimed.add(id);
    }
  }
  return claimed;
}

/**
 * Tops one class up to its size. Overlapping runs are serialised by a lease per class (a
 * conditional write in the claim table, owned by `runId`, the refill message's id, which is stable
 * across redeliveries); a run that finds it held by another run does nothing, one that finds it
 * held by itself (a lost response, or a redelivery after a crash) goes on. Inside the
 * lease the count comes from EC2 (pool-tagged, pending/running, not claimed), never from
 * adverts, so duplicated adverts cannot inflate or deflate it. Stopped unclaimed instances are
 * started first, the rest is launched from the class's launch template with an idempotency
 * token. Every new instance is advertised, and so is every idle one already running, because
 * the pool queue's short retention expires adverts that nobody picked up.
 */
export async function refillClass(deps: RefillDeps, cls: PoolClassConfig, runId: string): Promise<RefillOutcome> {
  const nowSeconds = Math.floor(deps.clock() / 1000);
  const key = leaseKey(cls.name);
  const lease = await acquireLock(deps, deps.config.claimTableName, key, runId, nowSeconds, nowSeconds + deps.config.leaseSeconds);
  if (!lease.acquired) {
    logStep(deps.logger, "info", "refill_lease_held", { resource_class: cls.name, run_id: runId, holder: lease.holder ?? null });
    countOne(deps.metrics, "RefillSkipped");
    return { kind: "lease_held" };
  }
  if (lease.recovered) {
    // Our own lease: this write's response was lost and the SDK's retry failed the condition on it,
    // or an earlier delivery of this message died holding it. Skipping would idle the class until it expires.
    logStep(deps.logger, "warn", "refill_lease_recovered", { resource_class: cls.name, run_id: runId, lease_expires_at: lease.expiresAt });
    countOne(deps.metrics, "RefillLeasesRecovered");
  }
  try {
    const instances = await poolInstances(deps, cls);
    const claimed = await claimedIds(
      deps,
      instances.map((i) => i.id),
      nowSeconds,
    );
    const idle = instances.filter((i) => !claimed.has(i.id));
    const live = idle.filter((i) => LIVE.has(i.state));
    const stopped = idle.filter((i) => i.state === "stopped");
    const deficit = Math.max(0, cls.size - live.length);
    logStep(deps.logger, "info", "pool_counted", {
      resource_class: cls.name,
      size: cls.size,
      live_unclaimed: live.length,
      stopped_unclaimed: stopped.length,
      claimed: claimed.size,
      deficit,
    });

    const toStart = stopped.slice(0, deficit);
    if (toStart.length > 0) {
      await deps.ec2.send(new StartInstancesCommand({ InstanceIds: toStart.map((i) => i.id) }));
      logStep(deps.logger, "info", "pool_instances_started", { resource_class: cls.name, instance_ids: toStart.map((i) => i.id) });
    }
    const toLaunch = deficit - toStart.length;
    let launched: PoolInstance[] = [];
    if (toLaunch > 0) {
      const tags = [
        { Key: deps.config.poolTagKey, Value: deps.config.poolTag },
        { Key: deps.config.poolClassTagKey, Value: cls.name },
      ];
      try {
        const out = await deps.ec2.send(
          new RunInstancesCommand({
            LaunchTemplate: { LaunchTemplateId: cls.launchTemplateId, Version: "$Default" },
            MinCount: 1,
            MaxCount: toLaunch,
            ClientToken: clientToken(runId, cls.name),
            // Also in the template; repeated here so the tag-conditioned RunInstances grant sees them as request tags.
            TagSpecifications: LAUNCH_TAGGED_RESOURCE_TYPES.map((ResourceType) => ({ ResourceType, Tags: tags })),
          }),
        );
        launched = (out.Instances ?? []).map(poolInstance);
        logStep(deps.logger, "info", "pool_instances_launched", { resource_class: cls.name, instance_ids: launched.map((i) => i.id), requested: toLaunch });
      } catch (error) {
        if (!isIdempotentMismatch(error)) throw error;
        // A redelivered message whose earlier attempt launched already (the count changed since):
        // those instances exist but this run can't name them; the next scheduled run counts and advertises them.
        logStep(deps.logger, "warn", "pool_launch_already_requested", { resource_class: cls.name, run_id: runId, requested: toLaunch });
        countOne(deps.metrics, "RefillLaunchTokenReused");
      }
    }
    for (const _ of toStart) countOne(deps.metrics, "PoolInstancesStarted");
    for (const _ of launched) countOne(deps.metrics, "PoolInstancesLaunched");

    const now = new Date(deps.clock());
    const toAdvertise = [...live, ...toStart, ...launched];
    await advertise(deps, cls, toAdvertise, now);
    logStep(deps.logger, "info", "refill_completed", {
      resource_class: cls.name,
      run_id: runId,
      started: toStart.length,
      launched: launched.length,
      advertised: toAdvertise.length,
    });
    return {
      kind: "refilled",
      liveUnclaimed: live.length,
      started: toStart.map((i) => i.id),
      launched: launched.map((i) => i.id),
      advertised: toAdvertise.length,
    };
  } finally {
    await releaseLease(deps, key, runId);
  }
}

/**
 * Releases the run's lease; a release that fails is logged and counted, not thrown: thrown from
 * `finally`, it would replace the run's own error (the one worth retrying on and reading), and the
 * lease expires with its TTL anyway. The run's outcome is the same either way: a failed run is
 * retried, and a later run that finds the lease still ours goes on.
 */
async function releaseLease(deps: RefillDeps, key: string, runId: string): Promise<void> {
  try {
    await releaseLock(deps, deps.config.claimTableName, key, runId);
  } catch (error) {
    logStep(deps.logger, "warn", "refill_lease_release_failed", { lease: key, run_id: runId, error: errorMessage(error) });
    countOne(deps.metrics, "RefillLeaseReleaseFailed");
  }
}

/**
 * One SendMessageBatch per 10 adverts. Entries SQS rejects fail the run (after the lease is
 * released), so the refill message is retried; a retry only re-advertises, which is harmless.
 */
async function advertise(deps: RefillDeps, cls: PoolClassConfig, instances: PoolInstance[], now: Date): Promise<void> {
  for (let i = 0; i < instances.length; i += SQS_BATCH_MAX) {
    const chunk = instances.slice(i, i + SQS_BATCH_MAX);
    const out = await deps.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: cls.queueUrl,
        Entries: chunk.map((instance, n) => ({
          Id: String(n),
          // A class lists at least one type (the config schema); the template launches the first.
          MessageBody: JSON.stringify(advertFor(instance.id, instance.type ?? cls.instanceTypes[0]!, cls, now)),
        })),
      }),
    );
    const failed = out.Failed ?? [];
    for (let k = 0; k < chunk.length - failed.length; k += 1) countOne(deps.metrics, "AdvertsPublished");
    if (failed.length > 0) {
      throw new Error(
        `SendMessageBatch rejected ${failed.length} advert(s) of ${cls.name}: ${failed.map((f) => `${f.Code} ${f.Message ?? ""}`.trim()).join("; ")}`,
      );
    }
  }
}
