/**
 * The chaos run's accounting, once the runtime is frozen: what the runtime, the fault proxy and the
 * claimers saw (observe.ts reads it) turned into each consumer's row of the ledger (ledger.ts,
 * worker-ledger.ts judge it). Also who is who in the fault proxy's journal: the callers.
 */
import * as os from "node:os";
import { drainedQueues, type InventoryRecord, queuesConsumedBy } from "../../infra/parts/inventory";
import type { LocalPlatform } from "../platform";
import { readSteps } from "../scenarios/logs";
import type { CrashRecord, FaultProxy, ForwardedCall } from "./fault-proxy";
import { claimsPerInstance, type CrashHits, consumerTotals, type ConsumerTotals, leakedLocks, type LockItem } from "./ledger";
import {
  acknowledgedEffects,
  claimLocks,
  type Effects,
  factsFor,
  fleetEffects,
  jobsDoneInTable,
  readQueues,
  retrainingEffects,
  scanItems,
  type SentMessage,
  windowEffects,
  workerEffects,
  workerLedger,
  workerLogLines,
} from "./observe";
import type { PoolClaimers } from "./pool-claims";
import type { Receive } from "./receives";
import { type Consumer, CONSUMERS, DRIVES } from "./traffic";
import {
  killedPerJob,
  WORKER_LEDGER,
  workerCrashRuns,
  workerJobCounts,
  workerJobsEveryRunKilled,
  type WorkerLedgerItem,
  workerRunsByJob,
} from "./worker-ledger";

/** The local runtime's caller name of the worker service's code (local/platform.ts), which the fault proxy sees. */
export const ECS_SERVICE_CALLER = "worker-service";
/** The GPU gateways' caller name (local/platform.ts): crashed, never faulted (their AWS calls were never in the fault run). */
export const GATEWAY_CALLER = "gpu-gateway";

/** The fault proxy's caller name of each consumer's code: its program consumer's name, or the ECS host's. Pure. */
export function callerOf(records: readonly InventoryRecord[], consumer: Consumer): string {
  const name = DRIVES[consumer];
  return records.some((p) => p.ecsServices.includes(name)) ? ECS_SERVICE_CALLER : name;
}

/** The queues whose emptiness means a consumer is done, of those it is fed from: none for the claims, whose adverts may wait. Pure. */
export function drainedBy(records: readonly InventoryRecord[], consumer: Consumer): string[] {
  const drained = new Set(drainedQueues(records));
  return queuesConsumedBy(records, DRIVES[consumer]).filter((q) => drained.has(q));
}

/** What the run hands its accounting. */
export interface AccountInput {
  platform: LocalPlatform;
  inventory: readonly InventoryRecord[];
  sent: readonly SentMessage[];
  receives: readonly Receive[];
  proxy: FaultProxy;
  /** RunTask calls the proxy forwarded to moto. */
  runTasks: readonly ForwardedCall[];
  claimers: PoolClaimers;
  /** The long worker jobs sent, as the worker's row reports them. */
  longJobs: { heartbeatSeconds: number; seconds: number; type: string; sent: number };
}

/** Everything the rows are built from, read once the runtime is frozen. */
type Seen = Awaited<ReturnType<typeof readEverything>>;

/** One row per consumer: where each of its messages ended up, and what is counted beside them. */
export async function account(input: AccountInput): Promise<ConsumerTotals[]> {
  const seen = await readEverything(input);
  return CONSUMERS.map((consumer) => {
    const part = partOf(seen, consumer);
    if (consumer === "worker") return workerRow(seen, part);
    if (consumer === "pool-claim") return poolClaimRow(seen, part);
    return consumerRow(seen, part);
  });
}

/** Reads what every row needs, once. */
async function readEverything(input: AccountInput) {
  const p = input.platform;
  const copies = await readQueues(p);
  const kills = input.proxy.kills();
  const workerLines = workerLogLines(p.options.workDir);
  const ledger = await workerLedger(p);
  return {
    ...input,
    copies,
    faults: input.proxy.faults(),
    kills,
    effects: await effectsByConsumer(input, workerLines, ledger),
    expiredIds: new Set((await p.moto.expired()).map((e) => e.messageId)),
    hits: crashHits(input.inventory, input.sent, input.receives, kills),
    workerLines,
    ledger,
    keyClaims: await heldKeyClaims(p),
    leaked: await leakedClaimLocks(p, input.claimers),
  };
}

async function leakedClaimLocks(p: LocalPlatform, claimers: PoolClaimers): Promise<LockItem[]> {
  const nowSeconds = Math.floor(p.clock.now() / 1000);
  return leakedLocks(await claimLocks(p, claimers.claimTableName), nowSeconds, (owner) => owner.startsWith(claimers.workflowPrefix), claimers.live);
}

/** Each consumer's side effects, where observe.ts finds them. */
async function effectsByConsumer(
  { platform: p, sent, runTasks, claimers, receives }: AccountInput,
  workerLines: ReturnType<typeof workerLogLines>,
  ledger: WorkerLedgerItem[] | undefined,
): Promise<Record<Consumer, Effects>> {
  const ofConsumer = (c: Consumer) => sent.filter((m) => m.consumer === c);
  const wellFormedKeyOfBody = new Map(sent.filter((m) => m.wellFormed).map((m) => [m.body, m.key]));
  const gpu = windowEffects(p.gpu?.received() ?? []);
  const fleetJobs = new Set(ofConsumer("fleet-termination").map((m) => m.key));
  const advertKeyById = new Map(ofConsumer("pool-claim").map((m) => [m.messageId, m.key]));
  const discardedKeys = claimers.steps.lines.filter((l) => l.step === "advert_discarded").map((l) => advertKeyById.get(String(l.message_id)));
  const discarded = new Set(discardedKeys.filter((key) => key !== undefined));
  const taskModels = p.ecsTasks.tasks().map((t) => t.tags.model_name ?? "");
  return {
    "ingest-window": gpu,
    "ingest-dlq": gpu,
    "retraining-launcher": retrainingEffects(runTasks, taskModels),
    "fleet-termination": fleetEffects(readSteps(p, DRIVES["fleet-termination"]), fleetJobDurations(sent), await jobsDoneInTable(p, fleetJobs)),
    "fleet-housekeeping": acknowledgedEffects(receives, DRIVES["fleet-housekeeping"], wellFormedKeyOfBody),
    "pool-refill": acknowledgedEffects(receives, DRIVES["pool-refill"], wellFormedKeyOfBody),
    "pool-claim": { effects: new Map(), duplicates: new Map(), incomplete: new Map(), discarded, details: {} },
    worker: workerEffects(workerLines, ledger ?? []),
  };
}

/** Each well-formed fleet job's duration → its key: a JobDuration metric names its job so. Pure. */
function fleetJobDurations(sent: readonly SentMessage[]): Map<number, string> {
  const durationToJob = new Map<number, string>();
  for (const m of sent.filter((x) => x.consumer === "fleet-termination")) {
    const d = (JSON.parse(m.body.startsWith("{") ? m.body : "{}") as { duration_seconds?: unknown }).duration_seconds;
    if (m.wellFormed && typeof d === "number") durationToJob.set(d, m.key);
  }
  return durationToJob;
}

/** One consumer's share of what was seen: its messages' facts, and the faults and kills its code met. */
type Part = ReturnType<typeof partOf>;

function partOf(seen: Seen, consumer: Consumer) {
  const hidden = drainedBy(seen.inventory, consumer).reduce((n, q) => n + (seen.copies.hidden.get(q) ?? 0), 0);
  const hits = seen.hits.get(consumer) ?? new Map<string, CrashHits>();
  const dlqExplained = consumer === "worker" ? workerJobsEveryRunKilled(seen.workerLines, killedPerJob(hits)) : undefined;
  const crash = { kills: seen.kills, hits, ...(dlqExplained ? { dlqExplained } : {}) };
  const facts = factsFor(consumer, seen.sent, seen.effects[consumer], seen.copies, seen.receives, seen.faults, hidden, crash, seen.expiredIds);
  const caller = callerOf(seen.inventory, consumer);
  return {
    consumer,
    facts,
    hits,
    caller,
    faultsInjected: seen.faults.filter((f) => f.caller === caller).length,
    kills: seen.kills.filter((k) => k.caller === caller).length,
  };
}

/** The worker's row: its messages, its job runs and leases, and its runs under crashes. */
function workerRow(seen: Seen, part: Part): ConsumerTotals {
  const { consumer, facts } = part;
  const row = consumerTotals(consumer, facts);
  // Leases are judged only once every worker message is accounted for: one still on the queue may rightly hold one.
  const killedHolders = new Set(seen.kills.filter((k) => k.caller === ECS_SERVICE_CALLER).map((k) => `${os.hostname()}:${k.process.replace(/^pid /, "")}`));
  const counts = workerJobCounts(seen.workerLines, seen.ledger, row.remaining === 0, { holders: killedHolders, nowMs: Date.now() });
  const runs = workerCrashRuns(...workerRunsByJob(seen.workerLines), killedPerJob(part.hits));
  return consumerTotals(consumer, facts, {
    worker: counts,
    crash: runs,
    kills: part.kills,
    details: {
      ...seen.effects[consumer].details,
      ...counts.details,
      longJobs: seen.longJobs,
      faultsInjected: part.faultsInjected,
      kills: part.kills,
      messagesHitByKills: part.hits.size,
      crashRunsOverBound: runs.over.slice(0, 10),
    },
  });
}

/** A Lambda consumer's row; the windows' also counts the GPU gateways' kills and the key claims they still hold. */
function consumerRow(seen: Seen, part: Part): ConsumerTotals {
  const { consumer, facts } = part;
  const windows = consumer === "ingest-window" || consumer === "ingest-dlq";
  // The gateways' kills and held claims are counted once, on the window consumer's row.
  const gatewayKills = consumer === "ingest-window" ? seen.kills.filter((k) => k.caller === GATEWAY_CALLER).length : 0;
  return consumerTotals(consumer, facts, {
    kills: part.kills + gatewayKills,
    ...(consumer === "ingest-window" ? { leakedKeyClaims: seen.keyClaims.length } : {}),
    details: {
      ...seen.effects[consumer].details,
      faultsInjected: part.faultsInjected,
      receivesPastVisibility: receivesPastVisibility(seen.platform, seen.receives, part.caller),
      kills: part.kills,
      messagesHitByKills: part.hits.size,
      ...(windows ? { gatewayKills } : {}),
      ...(consumer === "ingest-window" ? { keyClaimsHeld: seen.keyClaims.slice(0, 10) } : {}),
    },
  });
}

/** The claims' row: adverts, and the claim rounds' duplicates and leaked locks. */
function poolClaimRow(seen: Seen, part: Part): ConsumerTotals {
  const { claimers, leaked } = seen;
  const claims = claimsPerInstance(claimers.rounds);
  return consumerTotals(part.consumer, part.facts, {
    duplicateSideEffects: claims.duplicates,
    leakedLocks: leaked.length,
    details: {
      rounds: claimers.rounds.length,
      claims: claimers.rounds.reduce((n, r) => n + r.length, 0),
      instancesClaimed: Object.keys(claims.claims).length,
      claimsPerInstance: claims.claims,
      exhaustedAnswers: claimers.exhausted,
      claimErrors: claimers.errors,
      lostRaces: claimers.steps.count("claim_lost_race"),
      leaked: leaked.map((l) => ({ instanceId: l.instanceId, owner: l.owner, expiresAtSeconds: l.expiresAtSeconds })),
      advertsDiscarded: claimers.steps.count("advert_discarded"),
      // Adverts SQS deleted for age before a claimer reached them: a loaded machine's claimers fall behind the pool's retention.
      advertsExpired: part.facts.filter((f) => f.expired === true).length,
      faultsInjected: part.faultsInjected,
    },
  });
}

/** Pure: kills per caller, for the summary. */
export function killsByCaller(kills: readonly CrashRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of kills) out[k.caller] = (out[k.caller] ?? 0) + 1;
  return out;
}

/**
 * Pure: for each consumer, the kills that hit each message's work (by message key). A killed
 * invocation's batch is named by message ids, which a redelivery keeps; a deferral copy or redrive
 * has a new id, found through its body. A worker task's work is job ids (the worker's keys), a
 * gateway's window keys (the windows' keys).
 */
export function crashHits(
  inventory: readonly InventoryRecord[],
  sent: readonly SentMessage[],
  receives: readonly Receive[],
  kills: readonly CrashRecord[],
): Map<Consumer, Map<string, CrashHits>> {
  const out = new Map<Consumer, Map<string, CrashHits>>();
  const hit = (consumer: Consumer, key: string, kind: keyof CrashHits) => {
    const byKey = out.get(consumer) ?? new Map<string, CrashHits>();
    out.set(consumer, byKey);
    const h = byKey.get(key) ?? { invocations: 0, processes: 0 };
    h[kind] += 1;
    byKey.set(key, h);
  };
  const keyById = new Map(sent.map((m) => [m.messageId, m]));
  const byBody = new Map(sent.map((m) => [`${m.consumer}\u0000${m.body}`, m]));
  const consumersOf = (caller: string) => CONSUMERS.filter((c) => callerOf(inventory, c) === caller);
  const bodyOf = new Map(receives.map((r) => [`${r.fn}\u0000${r.messageId}`, r.body]));
  for (const k of kills) {
    if (k.caller === GATEWAY_CALLER) {
      const windows = new Set(sent.filter((m) => m.consumer === "ingest-window" || m.consumer === "ingest-dlq").map((m) => `${m.consumer}\u0000${m.key}`));
      for (const key of new Set(k.work))
        for (const c of ["ingest-window", "ingest-dlq"] as const) if (windows.has(`${c}\u0000${key}`)) hit(c, key, "processes");
      continue;
    }
    if (k.caller === ECS_SERVICE_CALLER) {
      for (const job of new Set(k.work)) hit("worker", WORKER_LEDGER.jobIdOf(job), "processes");
      continue;
    }
    for (const consumer of consumersOf(k.caller)) {
      for (const id of new Set(k.work)) {
        const direct = keyById.get(id);
        const body = bodyOf.get(`${k.caller}\u0000${id}`);
        const m = direct?.consumer === consumer ? direct : body !== undefined ? byBody.get(`${consumer}\u0000${body}`) : undefined;
        if (m !== undefined) hit(consumer, m.key, "invocations");
      }
    }
  }
  return out;
}

/**
 * The GPU gateways' key claims still held at the end: items `claimed` in the key table, their lease
 * unexpired, once every window is settled (nothing is in flight to hold one). A killed gateway's
 * claim lapses at its lease (its TTL as a claim: expired, any instance takes it over), and the
 * window's next POST takes it over and marks it done.
 */
async function heldKeyClaims(p: LocalPlatform): Promise<Array<{ key: string; holder?: string; leaseExpiresAt?: number }>> {
  const table = p.topology.tables.find((t) => t.logicalName.endsWith("gpu-keys"));
  if (!table) return [];
  // The gateway's leases are real time (epoch ms).
  const held = (await scanItems(p, table.name)).filter((item) => item.state?.S === "claimed" && Number(item.lease_expires_at?.N ?? 0) > Date.now());
  return held.map((item) => ({
    key: item.window_key?.S ?? "",
    ...(item.holder?.S !== undefined ? { holder: item.holder.S } : {}),
    ...(item.lease_expires_at?.N !== undefined ? { leaseExpiresAt: Number(item.lease_expires_at.N) } : {}),
  }));
}

/**
 * Deliveries whose invocation outlasted its queue's visibility timeout (divided by the speed): the
 * batch went back to the queue while it still ran, so a second delivery is the time compression's
 * doing. Reported so a duplicate can be told from one the platform made.
 */
function receivesPastVisibility(p: LocalPlatform, receives: readonly Receive[], fn: string): number {
  const queues = p.topology.mappings.filter((m) => p.topology.functions.find((f) => f.name === m.functionName)?.logicalName === fn);
  const visibilityMs =
    Math.min(...queues.map((m) => p.topology.queues.find((q) => q.arn === m.queueArn)?.visibilityTimeoutSeconds ?? Infinity)) * (1000 / p.clock.speed);
  return receives.filter((r) => r.fn === fn && r.endMs - r.startMs > visibilityMs).length;
}
