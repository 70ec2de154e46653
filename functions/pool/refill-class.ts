import { createHash } from "node:crypto";
import { BatchGetItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type EC2Client, type Instance, paginateDescribeInstances, RunInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { advertFor, POOL_CLASS_TAG_KEY, POOL_TAG_KEY } from "./advert";
import type { PoolClassConfig, RefillConfig } from "./config";
import { acquireLock, LOCK_EXPIRES_AT, LOCK_KEY, releaseLock } from "./lock";
import type { Clock } from "./pickup";

export interface RefillDeps {
  ec2: EC2Client;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  clock: Clock;
  config: RefillConfig;
  logger: StepLogger;
  metrics: MetricsSink;
}

export type RefillOutcome =
  | { kind: "lease_held" }
  | { kind: "refilled"; liveUnclaimed: number; started: string[]; launched: string[]; advertised: number };

/** The claim-table key of a class's refill lease; instance ids start with `i-`, so it never collides. */
export function leaseKey(resourceClass: string): string {
  return `lease#refill#${resourceClass}`;
}

/** RunInstances idempotency token (≤ 64 chars): a retried message launches nothing new. */
export function clientToken(runId: string, resourceClass: string): string {
  return createHash("sha256").update(`${runId}\0${resourceClass}`).digest("hex").slice(0, 64);
}

const LIVE = new Set(["pending", "running"]);

async function poolInstances(deps: RefillDeps, cls: PoolClassConfig): Promise<Instance[]> {
  const out: Instance[] = [];
  const pages = paginateDescribeInstances(
    { client: deps.ec2 },
    {
      Filters: [
        { Name: `tag:${POOL_TAG_KEY}`, Values: [deps.config.poolTag] },
        { Name: `tag:${POOL_CLASS_TAG_KEY}`, Values: [cls.name] },
        { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped"] },
      ],
    },
  );
  for await (const page of pages) out.push(...(page.Reservations ?? []).flatMap((r) => r.Instances ?? []));
  return out.filter((i) => i.InstanceId);
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
    for (const item of out.Responses?.[deps.config.claimTableName] ?? []) {
      const id = item[LOCK_KEY]?.S;
      if (id && Number(item[LOCK_EXPIRES_AT]?.N ?? 0) >= nowSeconds) claimed.add(id);
    }
  }
  return claimed;
}

/**
 * Tops one class up to its size. Overlapping runs are serialised by a lease per class (a
 * conditional write in the claim table); a run that finds it held does nothing. Inside the
 * lease the count comes from EC2 (pool-tagged, pending/running, not claimed), never from
 * adverts, so duplicated adverts cannot inflate or deflate it. Stopped unclaimed instances are
 * started first, the rest is launched from the class's launch template with an idempotency
 * token. Every new instance is advertised, and so is every idle one already running, because
 * the pool queue's short retention expires adverts that nobody picked up.
 */
export async function refillClass(deps: RefillDeps, cls: PoolClassConfig, runId: string): Promise<RefillOutcome> {
  const nowSeconds = Math.floor(deps.clock() / 1000);
  const key = leaseKey(cls.name);
  if (!(await acquireLock(deps, deps.config.claimTableName, key, runId, nowSeconds, nowSeconds + deps.config.leaseSeconds))) {
    logStep(deps.logger, "info", "refill_lease_held", { resource_class: cls.name, run_id: runId });
    countOne(deps.metrics, "RefillSkipped");
    return { kind: "lease_held" };
  }
  try {
    const instances = await poolInstances(deps, cls);
    const claimed = await claimedIds(deps, instances.map((i) => i.InstanceId ?? ""), nowSeconds);
    const idle = instances.filter((i) => !claimed.has(i.InstanceId ?? ""));
    const live = idle.filter((i) => LIVE.has(i.State?.Name ?? ""));
    const stopped = idle.filter((i) => i.State?.Name === "stopped");
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
      await deps.ec2.send(new StartInstancesCommand({ InstanceIds: toStart.map((i) => i.InstanceId ?? "") }));
      logStep(deps.logger, "info", "pool_instances_started", { resource_class: cls.name, instance_ids: toStart.map((i) => i.InstanceId) });
    }
    const toLaunch = deficit - toStart.length;
    let launched: Instance[] = [];
    if (toLaunch > 0) {
      const tags = [
        { Key: POOL_TAG_KEY, Value: deps.config.poolTag },
        { Key: POOL_CLASS_TAG_KEY, Value: cls.name },
      ];
      const out = await deps.ec2.send(
        new RunInstancesCommand({
          LaunchTemplate: { LaunchTemplateId: cls.launchTemplateId, Version: "$Default" },
          MinCount: 1,
          MaxCount: toLaunch,
          ClientToken: clientToken(runId, cls.name),
          // Also in the template; repeated here so the tag-conditioned RunInstances grant sees them as request tags.
          TagSpecifications: [
            { ResourceType: "instance", Tags: tags },
            { ResourceType: "volume", Tags: tags },
          ],
        }),
      );
      launched = out.Instances ?? [];
      logStep(deps.logger, "info", "pool_instances_launched", { resource_class: cls.name, instance_ids: launched.map((i) => i.InstanceId), requested: toLaunch });
    }
    for (const _ of toStart) countOne(deps.metrics, "PoolInstancesStarted");
    for (const _ of launched) countOne(deps.metrics, "PoolInstancesLaunched");

    const now = new Date(deps.clock());
    const toAdvertise = [...live, ...toStart, ...launched];
    for (const instance of toAdvertise) {
      const advert = advertFor(instance.InstanceId ?? "", instance.InstanceType ?? cls.instanceTypes[0] ?? "", cls, now);
      await deps.sqs.send(new SendMessageCommand({ QueueUrl: cls.queueUrl, MessageBody: JSON.stringify(advert) }));
      countOne(deps.metrics, "AdvertsPublished");
    }
    logStep(deps.logger, "info", "refill_completed", {
      resource_class: cls.name,
      started: toStart.length,
      launched: launched.length,
      advertised: toAdvertise.length,
    });
    return {
      kind: "refilled",
      liveUnclaimed: live.length,
      started: toStart.map((i) => i.InstanceId ?? ""),
      launched: launched.map((i) => i.InstanceId ?? ""),
      advertised: toAdvertise.length,
    };
  } finally {
    await releaseLock(deps, deps.config.claimTableName, key, runId);
  }
}
