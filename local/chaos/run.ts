/**
 * One chaos run: the platform on moto with the fault proxy in front of the code under test,
 * generated traffic for every consumer, claim workers on the pool, then the ledger. The runtime
 * (event sources, scheduler, simulators) is the local run's own, untouched; only what the Lambdas,
 * the worker service and the claimers call goes through faults.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../../infra/bundle";
import { executablesSchema } from "../../functions/worker/config";
import { containerEnvironment, pickContainer } from "../hosts/worker-service";
import { LocalPlatform } from "../platform";
import { sendAll, waitFor } from "../scenarios/scenario";
import { readSteps } from "../scenarios/logs";
import type * as http from "node:http";
import { gatewayWindowsHeld, killChild, workerJobsHeld } from "./crash";
import { type CrashRecord, FaultProxy, type FaultRecord, type ForwardedCall, type Killed, type Upstreams } from "./fault-proxy";
import { type ChaosSummary, claimsPerInstance, type CrashHits, consumerTotals, type ConsumerTotals, leakedLocks, sumTotals } from "./ledger";
import { killedPerJob, WORKER_LEDGER, workerCrashRuns, workerJobCounts, workerJobsEveryRunKilled, workerRunsByJob } from "./worker-ledger";
import {
  acknowledgedEffects,
  claimLocks,
  type Effects,
  factsFor,
  fleetEffects,
  jobsDoneInTable,
  readQueues,
  retrainingEffects,
  type SentMessage,
  windowEffects,
  workerEffects,
  workerLedger,
  workerLogLines,
} from "./observe";
import { paginateScan } from "@aws-sdk/client-dynamodb";
import { PoolClaimers } from "./pool-claims";
import { type Receive, ReceiveRecorder } from "./receives";
import { drainedQueues, type InventoryRecord, queuesConsumedBy, recordedInventory } from "../../infra/parts/inventory";
import { type ChaosMessage, type Consumer, CONSUMERS, DRIVES, generateTraffic, trafficQueues } from "./traffic";

export interface ChaosOptions {
  stack: string;
  messages: number;
  faultRate: number;
  /** Per call a process makes mid-work, the chance it is killed (SIGKILL) right after it. @default 0 */
  crashRate?: number;
  seed: number;
  speed: number;
  /** Real seconds to wait for the queues to drain after the last send. */
  settleSeconds: number;
  /** Workflows claiming at once in each pool round. */
  claimers: number;
  /** Tasks of the worker service (the long jobs need slots). @default the service's desired count */
  workerTasks?: number;
  /** Where the run's state goes; never `.local/<stack>`, which `npm start` owns. */
  workDir: string;
  note: (line: string) => void;
}

export interface ChaosResult extends ChaosSummary {
  wallMs: number;
  /** The fault log, also written to `<workDir>/faults.jsonl`. */
  faultLog: readonly FaultRecord[];
  /** The processes killed, in the same journal. */
  crashLog: readonly CrashRecord[];
  settled: boolean;
}

/** The chaos run's state directory for a stack and seed: beside `npm start`'s `.local/<stack>`, never in it. */
export function chaosWorkDir(stack: string, seed?: number): string {
  return path.join(REPO_ROOT, ".local", seed === undefined ? `chaos-${stack}` : `chaos-${stack}-seed-${seed}`);
}

/** The worker job type the run adds to the allow-list for its long jobs: a fixed-argument sleep, as the dev stack's hold-8s. */
export const LONG_JOB_TYPE = "chaos-hold";
/** A long job lasts this many of the worker's heartbeats (the issue asks for at least three). */
export const LONG_JOB_HEARTBEATS = 4;

export interface LongJobSizing {
  /** The worker's heartbeat in real seconds at the run's speed (as localTaskEnvironment divides it). */
  heartbeatSeconds: number;
  /** The long job's run time, real seconds. */
  seconds: number;
}

/**
 * Pure: a long job's length at the run's speed. The worker's heartbeat is the stack's divided by
 * the speed (at least 1 s, as localTaskEnvironment does); its first visibility for a job that
 * estimates 1 s is one heartbeat extension, 3 heartbeats; the job lasts LONG_JOB_HEARTBEATS, so it
 * outlives that first visibility and needs every extension to land.
 */
export function longJobSizing(stackHeartbeatSeconds: number, speed: number): LongJobSizing {
  const heartbeatSeconds = Math.max(1, Math.ceil(stackHeartbeatSeconds / speed));
  return { heartbeatSeconds, seconds: LONG_JOB_HEARTBEATS * heartbeatSeconds };
}

/** Pure: the worker's environment with the long job type allowed (a fixed-argument sleep of `seconds`). */
export function withLongJobType(container: Record<string, string>, seconds: number): Record<string, string> {
  const executables = executablesSchema.parse(JSON.parse(container.WORKER_EXECUTABLES ?? "{}"));
  return { WORKER_EXECUTABLES: JSON.stringify({ ...executables, [LONG_JOB_TYPE]: { command: "/bin/sleep", args: [String(seconds)] } }) };
}

/** The queues whose emptiness means a consumer is done, of those it is fed from: none for the claims, whose adverts may wait. Pure. */
export function drainedBy(records: readonly InventoryRecord[], consumer: Consumer): string[] {
  const drained = new Set(drainedQueues(records));
  return queuesConsumedBy(records, DRIVES[consumer]).filter((q) => drained.has(q));
}

/** The local runtime's caller name of the worker service's code (local/platform.ts), which the fault proxy sees. */
const ECS_SERVICE_CALLER = "worker-service";
/** The GPU gateways' caller name (local/platform.ts): crashed, never faulted (their AWS calls were never in the fault run). */
export const GATEWAY_CALLER = "gpu-gateway";
/** Real ms before a killed worker task is replaced or a killed gateway restarted. */
const RESTART_AFTER_MS = 1000;

/** Kills the process of `caller` that made the call: a Lambda sandbox, a worker task or the GPU gateway. */
async function killCaller(p: LocalPlatform, caller: string, req: http.IncomingMessage): Promise<Killed | undefined> {
  if (caller === ECS_SERVICE_CALLER) {
    const alive = (p.worker?.tasks() ?? []).filter((t) => t.pid !== undefined && t.exitCode === null && t.signal === null);
    return killChild(
      req,
      alive.map((t) => ({ pid: t.pid ?? 0, logFile: t.logFile, logOffset: t.logOffset })),
      workerJobsHeld,
    );
  }
  if (caller === GATEWAY_CALLER) {
    const host = p.gpu?.host;
    const pid = host?.pid();
    if (host === undefined || pid === undefined) return undefined;
    return killChild(req, [{ pid, logFile: host.logFile(), logOffset: host.logOffset }], gatewayWindowsHeld);
  }
  const invocation = req.headers["x-local-invocation"];
  if (typeof invocation !== "string") return undefined;
  const crashed = await p.lambdas.crash(invocation);
  if (crashed === undefined) return undefined;
  const records = (crashed.event as { Records?: Array<{ messageId?: unknown }> }).Records ?? [];
  return {
    process: `sandbox ${crashed.logStreamName}`,
    untilMs: crashed.deadlineMs,
    work: records.map((r) => r.messageId).filter((id): id is string => typeof id === "string"),
  };
}

/** The fault proxy's caller name of each consumer's code: its program consumer's name, or the ECS host's. Pure. */
export function callerOf(records: readonly InventoryRecord[], consumer: Consumer): string {
  const name = DRIVES[consumer];
  return records.some((p) => p.ecsServices.includes(name)) ? ECS_SERVICE_CALLER : name;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  fs.mkdirSync(path.dirname(o.workDir), { recursive: true });
  const faultFile = `${o.workDir}-faults.jsonl`;
  fs.rmSync(faultFile, { force: true });
  const runTasks: ForwardedCall[] = [];
  const crashRate = o.crashRate ?? 0;
  const live: { platform?: LocalPlatform } = {};
  const proxy = new FaultProxy({
    seed: o.seed,
    rate: o.faultRate,
    faultFreeCallers: [GATEWAY_CALLER],
    ...(crashRate > 0
      ? {
          crash: {
            rate: crashRate,
            kill: async (caller: string, req: http.IncomingMessage) => (live.platform ? killCaller(live.platform, caller, req) : undefined),
          },
          onCrash: (crash: CrashRecord) => fs.appendFileSync(faultFile, `${JSON.stringify(crash)}\n`),
        }
      : {}),
    onForwarded: (call) => {
      if (call.service === "ecs" && call.operation === "RunTask") runTasks.push(call);
    },
    onFault: (fault) => fs.appendFileSync(faultFile, `${JSON.stringify(fault)}\n`),
  });
  const upstreams: { lambdas?: Upstreams } = {};
  let platform: LocalPlatform | undefined;
  let longJob: LongJobSizing | undefined;
  try {
    platform = await LocalPlatform.start({
      stack: o.stack,
      speed: o.speed,
      workDir: o.workDir,
      gpuBootSimMs: 30_000,
      taskSimMs: 5_000,
      note: o.note,
      ...(o.workerTasks !== undefined ? { workerTasks: o.workerTasks } : {}),
      ...(crashRate > 0 ? { restartKilledAfterMs: RESTART_AFTER_MS } : {}),
      workerEnv: (container) => {
        longJob = longJobSizing(Number(container.WORKER_HEARTBEAT_SECONDS ?? 60), o.speed);
        return withLongJobType(container, longJob.seconds);
      },
      codeEndpoints: async (caller, upstream) => {
        if (caller !== ECS_SERVICE_CALLER && caller !== GATEWAY_CALLER) upstreams.lambdas ??= upstream;
        const front = await proxy.front(caller, upstream);
        // One port per caller: every service of that caller goes through it, and the proxy routes it on.
        return { aws: front, byService: Object.fromEntries(Object.keys(upstream.byService).map((service) => [service, front])) };
      },
    });
    const p = platform;
    live.platform = p;
    const receives = new ReceiveRecorder();
    receives.attach(p.lambdas, (name) => p.topology.functions.find((f) => f.name === name)?.logicalName ?? name);

    // The claim library's SQS calls take the SQS clock as the Lambdas' do; EC2 and DynamoDB go to moto, as in the pool scenario.
    const claimEndpoint = await proxy.front("pool-claim", { aws: p.moto.endpoint, byService: { sqs: upstreams.lambdas?.byService.sqs ?? p.moto.endpoint } });
    const claimers = new PoolClaimers(p, claimEndpoint, o.claimers, `c${o.seed.toString(36)}`);
    const inventory = recordedInventory(p.topology.resources);
    const traffic = generateTraffic(o.messages, {
      queues: trafficQueues(inventory, claimers.cls.name),
      seed: o.seed,
      poolClass: claimers.cls.name,
      workerJobType: workerJobType(p),
      ...(longJob ? { longJobType: LONG_JOB_TYPE } : {}),
      nowMs: p.clock.now(),
    });
    const longSent = traffic.filter((m) => m.long).length;
    o.note(
      `chaos: ${traffic.length} messages (${traffic.filter((m) => !m.wellFormed).length} malformed, ${longSent} long worker jobs of ${longJob?.seconds ?? 0} s), fault rate ${o.faultRate}, crash rate ${crashRate}, seed ${o.seed}, speed ${o.speed}`,
    );

    claimers.start(Math.max(1000, (5 * 60_000) / o.speed));
    const sent = await sendTraffic(p, traffic);
    o.note(`chaos: all sent after ${((Date.now() - started) / 1000).toFixed(0)} s; waiting for the queues to drain`);
    const discards = () => claimers.steps.count("advert_discarded");
    const settled = await waitFor(() => drained(p, inventory, traffic, sent, discards), {
      timeoutMs: o.settleSeconds * 1000,
      everyMs: 1000,
      tick: progress(p, inventory, o, started),
    });
    if (!settled) o.note(`chaos: the queues did not drain within ${o.settleSeconds} s; what is left counts as remaining`);
    await claimers.stop();
    // No kill may land while the runtime stops (a worker killed in its shutdown is not mid-work).
    proxy.setCrashRate(0);
    // Freeze the runtime before reading: nothing may move between the reads.
    await Promise.all([...p.sources.values()].map((s) => s.stop()));
    await p.scheduler.stop();
    await p.worker?.stop();

    const byConsumer = await account(p, inventory, sent, receives, proxy, runTasks, claimers, {
      ...(longJob ?? { heartbeatSeconds: 0, seconds: 0 }),
      type: LONG_JOB_TYPE,
      sent: longSent,
    });
    const stats = proxy.stats();
    return {
      totals: sumTotals(byConsumer),
      byConsumer,
      faults: { injected: stats.injected, byKind: stats.byKind, kills: killsByCaller(proxy.kills()) },
      wallMs: Date.now() - started,
      faultLog: proxy.faults(),
      crashLog: proxy.kills(),
      settled,
    };
  } finally {
    await platform?.stop();
    await proxy.stop();
  }
}

/** The allow-listed job type the worker runs fastest: `payload-digest` when the stack has it. */
function workerJobType(platform: LocalPlatform): string {
  const service = platform.topology.services[0];
  const td = platform.topology.taskDefinitions.find((t) => t.arn === service?.taskDefinitionArn);
  if (!td) return "payload-digest";
  const types = Object.keys(executablesSchema.parse(JSON.parse(containerEnvironment(pickContainer(td)).WORKER_EXECUTABLES ?? "{}")));
  return types.includes("payload-digest") ? "payload-digest" : (types[0] ?? "payload-digest");
}

/** Sends each queue's messages in order (queues in parallel); returns them with their SQS message ids. */
async function sendTraffic(platform: LocalPlatform, traffic: ChaosMessage[]): Promise<SentMessage[]> {
  const byQueue = new Map<string, ChaosMessage[]>();
  for (const m of traffic) byQueue.set(m.queue, [...(byQueue.get(m.queue) ?? []), m]);
  const sent: SentMessage[] = [];
  await Promise.all(
    [...byQueue].map(async ([queue, messages]) => {
      const q = platform.queue(queue);
      // In slices, so consumers start while the rest is still being sent, as real traffic would arrive.
      for (let i = 0; i < messages.length; i += 100) {
        const slice = messages.slice(i, i + 100);
        const ids = await sendAll(
          platform,
          q,
          slice.map((m) => m.body),
        );
        slice.forEach((m, j) => sent.push({ ...m, messageId: ids[j] ?? "" }));
      }
    }),
  );
  return sent;
}

/** Every drained queue of the program empty, and every malformed advert picked up by a claimer. */
/**
 * Pure: whether the run's malformed adverts are settled. They stay visible until a pickup discards
 * them, while well-formed ones may wait in the pool for claimers; an advert whose every pickup
 * failed moves to the class's DLQ and is settled there too (the ledger judges whether every receive
 * was faulted), and one SQS deleted for age is gone (`expired`). Without the DLQ term, a run whose claimers' receives kept failing waited out its
 * whole settle time (seen at 30 % on a loaded machine).
 */
export function advertsSettled(a: { sent: number; inPool: number; discarded: number; parkedInDlq: number; expired?: number }): boolean {
  return a.sent === 0 || a.inPool === 0 || a.discarded + a.parkedInDlq + (a.expired ?? 0) >= a.sent;
}

async function drained(
  platform: LocalPlatform,
  inventory: readonly InventoryRecord[],
  traffic: readonly ChaosMessage[],
  sent: readonly SentMessage[],
  discards: () => number,
): Promise<boolean> {
  const depths = await Promise.all(drainedQueues(inventory).map((q) => platform.depth(platform.queue(q))));
  if (depths.some((d) => d.visible + d.inFlight + d.delayed > 0)) return false;
  const adverts = new Set(sent.filter((m) => m.consumer === "pool-claim").map((m) => m.messageId));
  const advertQueue = traffic.find((m) => m.consumer === "pool-claim")?.queue;
  if (advertQueue === undefined) return true;
  const pool = await platform.depth(platform.queue(advertQueue));
  const dlq = inventory.flatMap((p) => p.queues).find((q) => q.label === advertQueue)?.dlq;
  const parked = dlq === undefined ? 0 : (await platform.depth(platform.queue(dlq))).visible;
  const expired = (await platform.moto.expired()).filter((e) => adverts.has(e.messageId)).length;
  return advertsSettled({ sent: adverts.size, inPool: pool.visible + pool.inFlight, discarded: discards(), parkedInDlq: parked, expired });
}

function progress(platform: LocalPlatform, inventory: readonly InventoryRecord[], o: ChaosOptions, started: number): () => Promise<void> {
  let last = 0;
  return async () => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    const names = drainedQueues(inventory);
    const depths = await Promise.all(names.map(async (n) => [n, await platform.depth(platform.queue(n))] as const));
    o.note(`chaos: ${((Date.now() - started) / 1000).toFixed(0)} s, left: ${depths.map(([n, d]) => `${n} ${d.visible + d.inFlight + d.delayed}`).join(", ")}`);
  };
}

async function account(
  p: LocalPlatform,
  inventory: readonly InventoryRecord[],
  sent: readonly SentMessage[],
  recorder: ReceiveRecorder,
  proxy: FaultProxy,
  runTasks: readonly ForwardedCall[],
  claimers: PoolClaimers,
  longJobs: LongJobSizing & { type: string; sent: number },
): Promise<ConsumerTotals[]> {
  const copies = await readQueues(p);
  const receives = recorder.receives();
  const faults = proxy.faults();
  const wellFormedKeyOfBody = new Map(sent.filter((m) => m.wellFormed).map((m) => [m.body, m.key]));
  const ofConsumer = (c: Consumer) => sent.filter((m) => m.consumer === c);

  const gpu = windowEffects(p.gpu?.received() ?? []);
  const fleetJobs = new Set(ofConsumer("fleet-termination").map((m) => m.key));
  const durationToJob = new Map<number, string>();
  for (const m of ofConsumer("fleet-termination")) {
    const d = (JSON.parse(m.body.startsWith("{") ? m.body : "{}") as { duration_seconds?: unknown }).duration_seconds;
    if (m.wellFormed && typeof d === "number") durationToJob.set(d, m.key);
  }
  const discarded = new Set<string>();
  const advertKeyById = new Map(ofConsumer("pool-claim").map((m) => [m.messageId, m.key]));
  for (const l of claimers.steps.lines) {
    const key = l.step === "advert_discarded" ? advertKeyById.get(String(l.message_id)) : undefined;
    if (key !== undefined) discarded.add(key);
  }
  const effects: Record<Consumer, Effects> = {
    "ingest-window": gpu,
    "ingest-dlq": gpu,
    "retraining-launcher": retrainingEffects(
      runTasks,
      p.ecsTasks.tasks().map((t) => t.tags.model_name ?? ""),
    ),
    "fleet-termination": fleetEffects(readSteps(p, DRIVES["fleet-termination"]), durationToJob, await jobsDoneInTable(p, fleetJobs)),
    "fleet-housekeeping": acknowledgedEffects(receives, DRIVES["fleet-housekeeping"], wellFormedKeyOfBody),
    "pool-refill": acknowledgedEffects(receives, DRIVES["pool-refill"], wellFormedKeyOfBody),
    "pool-claim": { effects: new Map(), duplicates: new Map(), incomplete: new Map(), discarded, details: {} },
    worker: workerEffects(workerLogLines(p.options.workDir), (await workerLedger(p)) ?? []),
  };
  const ledger = await workerLedger(p);
  const expired = await p.moto.expired();
  const expiredIds = new Set(expired.map((e) => e.messageId));
  const kills = proxy.kills();
  const hits = crashHits(inventory, sent, receives, kills);
  const workerLines = workerLogLines(p.options.workDir);
  const keyClaims = await heldKeyClaims(p);

  const claims = claimsPerInstance(claimers.rounds);
  const nowSeconds = Math.floor(p.clock.now() / 1000);
  const leaked = leakedLocks(await claimLocks(p, claimers.claimTableName), nowSeconds, (owner) => owner.startsWith(claimers.workflowPrefix), claimers.live);

  return CONSUMERS.map((consumer) => {
    const hidden = drainedBy(inventory, consumer).reduce((n, q) => n + (copies.hidden.get(q) ?? 0), 0);
    const consumerHits = hits.get(consumer) ?? new Map<string, CrashHits>();
    const dlqExplained = consumer === "worker" ? workerJobsEveryRunKilled(workerLines, killedPerJob(consumerHits)) : undefined;
    const facts = factsFor(
      consumer,
      sent,
      effects[consumer],
      copies,
      receives,
      faults,
      hidden,
      {
        kills,
        hits: consumerHits,
        ...(dlqExplained ? { dlqExplained } : {}),
      },
      expiredIds,
    );
    const caller = callerOf(inventory, consumer);
    const faultsHere = faults.filter((f) => f.caller === caller).length;
    const killsHere = kills.filter((k) => k.caller === caller).length;
    const crashDetails = { kills: killsHere, messagesHitByKills: consumerHits.size };
    const pastVisibility = receivesPastVisibility(p, receives, caller);
    if (consumer === "worker") {
      const row = consumerTotals(consumer, facts);
      // Leases are judged only once every worker message is accounted for: one still on the queue may rightly hold one.
      const killedHolders = new Set(kills.filter((k) => k.caller === ECS_SERVICE_CALLER).map((k) => `${os.hostname()}:${k.process.replace(/^pid /, "")}`));
      const counts = workerJobCounts(workerLines, ledger, row.remaining === 0, { holders: killedHolders, nowMs: Date.now() });
      const runs = workerCrashRuns(...workerRunsByJob(workerLines), killedPerJob(consumerHits));
      return consumerTotals(consumer, facts, {
        worker: counts,
        crash: runs,
        kills: killsHere,
        details: {
          ...effects[consumer].details,
          ...counts.details,
          longJobs,
          faultsInjected: faultsHere,
          ...crashDetails,
          crashRunsOverBound: runs.over.slice(0, 10),
        },
      });
    }
    const windows = consumer === "ingest-window" || consumer === "ingest-dlq";
    // The gateways' kills and held claims are counted once, on the window consumer's row.
    const gatewayKills = consumer === "ingest-window" ? kills.filter((k) => k.caller === GATEWAY_CALLER).length : 0;
    if (consumer !== "pool-claim")
      return consumerTotals(consumer, facts, {
        kills: killsHere + gatewayKills,
        ...(consumer === "ingest-window" ? { leakedKeyClaims: keyClaims.length } : {}),
        details: {
          ...effects[consumer].details,
          faultsInjected: faultsHere,
          receivesPastVisibility: pastVisibility,
          ...crashDetails,
          ...(windows ? { gatewayKills } : {}),
          ...(consumer === "ingest-window" ? { keyClaimsHeld: keyClaims.slice(0, 10) } : {}),
        },
      });
    return consumerTotals(consumer, facts, {
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
        advertsExpired: facts.filter((f) => f.expired === true).length,
        faultsInjected: faultsHere,
      },
    });
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
  const held: Array<{ key: string; holder?: string; leaseExpiresAt?: number }> = [];
  for await (const page of paginateScan({ client: p.aws.dynamodb }, { TableName: table.name, ConsistentRead: true })) {
    for (const item of page.Items ?? []) {
      // The gateway's leases are real time (epoch ms).
      if (item.state?.S !== "claimed" || Number(item.lease_expires_at?.N ?? 0) <= Date.now()) continue;
      held.push({
        key: item.window_key?.S ?? "",
        ...(item.holder?.S !== undefined ? { holder: item.holder.S } : {}),
        ...(item.lease_expires_at?.N !== undefined ? { leaseExpiresAt: Number(item.lease_expires_at.N) } : {}),
      });
    }
  }
  return held;
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
