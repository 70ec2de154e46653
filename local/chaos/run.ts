/**
 * One chaos run: the platform on moto with the fault proxy in front of the code under test,
 * generated traffic for every consumer, claim workers on the pool, then the ledger. The runtime
 * (event sources, scheduler, simulators) is the local run's own, untouched; only what the Lambdas,
 * the worker service and the claimers call goes through faults.
 */
import * as fs from "node:fs";
import type * as http from "node:http";
import * as path from "node:path";
import { REPO_ROOT } from "../../infra/bundle";
import { executablesSchema } from "../../functions/worker/config";
import { drainedQueues, type InventoryRecord, recordedInventory } from "../../infra/parts/inventory";
import { containerEnvironment, pickContainer } from "../hosts/worker-service";
import { LocalPlatform } from "../platform";
import { sendAll, waitFor } from "../scenarios/scenario";
import { account, ECS_SERVICE_CALLER, GATEWAY_CALLER, killsByCaller } from "./account";
import { gatewayWindowsHeld, killChild, workerJobsHeld } from "./crash";
import { type CrashRecord, FaultProxy, type FaultRecord, type ForwardedCall, type Killed, type Upstreams } from "./fault-proxy";
import { type ChaosSummary, sumTotals } from "./ledger";
import type { SentMessage } from "./observe";
import { PoolClaimers } from "./pool-claims";
import { recordReceives } from "./receives";
import { type ChaosMessage, generateTraffic, trafficQueues } from "./traffic";

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
export function chaosWorkDir(stack: string, seed: number): string {
  return path.join(REPO_ROOT, ".local", `chaos-${stack}-seed-${seed}`);
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

/** Real ms before a killed worker task is replaced or a killed gateway restarted. */
const RESTART_AFTER_MS = 1000;

/** Kills the process of `caller` that made the call: a Lambda sandbox, a worker task or the GPU gateway. */
async function killCaller(p: LocalPlatform, caller: string, req: http.IncomingMessage): Promise<Killed | undefined> {
  if (caller === ECS_SERVICE_CALLER) {
    const alive = (p.worker?.tasks() ?? []).filter((t): t is typeof t & { pid: number } => t.pid !== undefined && t.exitCode === null && t.signal === null);
    return killChild(req, alive, workerJobsHeld);
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

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  return new ChaosRun(o).play();
}

/** One run: the fault proxy from the start, the platform behind it once up. */
class ChaosRun {
  private readonly started = Date.now();
  private readonly faultFile: string;
  private readonly crashRate: number;
  /** The RunTask calls the proxy forwarded to moto (the retraining launcher's effects). */
  private readonly runTasks: ForwardedCall[] = [];
  private readonly proxy: FaultProxy;
  /** The Lambdas' upstreams: the claim library's SQS calls take the same SQS clock. */
  private lambdaUpstreams?: Upstreams;
  private platform?: LocalPlatform;
  private longJob?: LongJobSizing;

  constructor(private readonly o: ChaosOptions) {
    fs.mkdirSync(path.dirname(o.workDir), { recursive: true });
    this.faultFile = `${o.workDir}-faults.jsonl`;
    fs.rmSync(this.faultFile, { force: true });
    this.crashRate = o.crashRate ?? 0;
    this.proxy = this.faultProxy();
  }

  /** Plays the run, then stops the platform and the proxy, whatever happened. */
  async play(): Promise<ChaosResult> {
    try {
      return await this.playOnPlatform(await this.startPlatform());
    } finally {
      await this.platform?.stop();
      await this.proxy.stop();
    }
  }

  /** The platform behind the proxy, traffic for every consumer until the queues drain, then the ledger of the frozen runtime. */
  private async playOnPlatform(p: LocalPlatform): Promise<ChaosResult> {
    const receives = recordReceives(p.lambdas, (name) => p.topology.functions.find((f) => f.name === name)?.logicalName ?? name);
    const { claimers, inventory, traffic } = await this.planTraffic(p);
    const { sent, settled } = await this.sendUntilDrained(p, claimers, inventory, traffic);
    await this.freeze(p);
    const longJobs = { ...(this.longJob ?? { heartbeatSeconds: 0, seconds: 0 }), type: LONG_JOB_TYPE, sent: traffic.filter((m) => m.long).length };
    const byConsumer = await account({ platform: p, inventory, sent, receives, proxy: this.proxy, runTasks: this.runTasks, claimers, longJobs });
    const stats = this.proxy.stats();
    return {
      totals: sumTotals(byConsumer),
      byConsumer,
      faults: { injected: stats.injected, byKind: stats.byKind, kills: killsByCaller(this.proxy.kills()) },
      wallMs: Date.now() - this.started,
      faultLog: this.proxy.faults(),
      crashLog: this.proxy.kills(),
      settled,
    };
  }

  /** Faults (and, with a crash rate, kills) on the code's calls, each journalled to `<workDir>-faults.jsonl`. */
  private faultProxy(): FaultProxy {
    const journal = (record: FaultRecord | CrashRecord) => fs.appendFileSync(this.faultFile, `${JSON.stringify(record)}\n`);
    return new FaultProxy({
      seed: this.o.seed,
      rate: this.o.faultRate,
      faultFreeCallers: [GATEWAY_CALLER],
      ...(this.crashRate > 0
        ? {
            crash: {
              rate: this.crashRate,
              kill: async (caller: string, req: http.IncomingMessage) => (this.platform ? killCaller(this.platform, caller, req) : undefined),
            },
            onCrash: journal,
          }
        : {}),
      onForwarded: (call) => {
        if (call.service === "ecs" && call.operation === "RunTask") this.runTasks.push(call);
      },
      onFault: journal,
    });
  }

  /** The local run's platform, its code's AWS calls through the proxy and its worker allowed the long job. */
  private async startPlatform(): Promise<LocalPlatform> {
    const { o } = this;
    this.platform = await LocalPlatform.start({
      stack: o.stack,
      speed: o.speed,
      workDir: o.workDir,
      gpuBootSimMs: 30_000,
      taskSimMs: 5_000,
      note: o.note,
      ...(o.workerTasks !== undefined ? { workerTasks: o.workerTasks } : {}),
      ...(this.crashRate > 0 ? { restartKilledAfterMs: RESTART_AFTER_MS } : {}),
      workerEnv: (container) => {
        const longJob = longJobSizing(Number(container.WORKER_HEARTBEAT_SECONDS ?? 60), o.speed);
        this.longJob = longJob;
        return withLongJobType(container, longJob.seconds);
      },
      codeEndpoints: async (caller, upstream) => {
        if (caller !== ECS_SERVICE_CALLER && caller !== GATEWAY_CALLER) this.lambdaUpstreams ??= upstream;
        const front = await this.proxy.front(caller, upstream);
        // One port per caller: every service of that caller goes through it, and the proxy routes it on.
        return { aws: front, byService: Object.fromEntries(Object.keys(upstream.byService).map((service) => [service, front])) };
      },
    });
    return this.platform;
  }

  /** The pool's claimers, the program's inventory, and the seeded traffic for every consumer. */
  private async planTraffic(p: LocalPlatform): Promise<{ claimers: PoolClaimers; inventory: InventoryRecord[]; traffic: ChaosMessage[] }> {
    const { o, longJob } = this;
    // The claim library's SQS calls take the SQS clock as the Lambdas' do; EC2 and DynamoDB go to moto, as in the pool scenario.
    const claimEndpoint = await this.proxy.front("pool-claim", {
      aws: p.moto.endpoint,
      byService: { sqs: this.lambdaUpstreams?.byService.sqs ?? p.moto.endpoint },
    });
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
      `chaos: ${traffic.length} messages (${traffic.filter((m) => !m.wellFormed).length} malformed, ${longSent} long worker jobs of ${longJob?.seconds ?? 0} s), fault rate ${o.faultRate}, crash rate ${this.crashRate}, seed ${o.seed}, speed ${o.speed}`,
    );
    return { claimers, inventory, traffic };
  }

  /** Claims running, the traffic sent, then a wait (up to the settle time) for every drained queue to empty. */
  private async sendUntilDrained(
    p: LocalPlatform,
    claimers: PoolClaimers,
    inventory: readonly InventoryRecord[],
    traffic: ChaosMessage[],
  ): Promise<{ sent: SentMessage[]; settled: boolean }> {
    const { o, started } = this;
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
    return { sent, settled };
  }

  /** Freezes the runtime before the ledger reads it: nothing may move between the reads. */
  private async freeze(p: LocalPlatform): Promise<void> {
    // No kill may land while the runtime stops (a worker killed in its shutdown is not mid-work).
    this.proxy.setCrashRate(0);
    await Promise.all([...p.sources.values()].map((s) => s.stop()));
    await p.scheduler.stop();
    await p.worker?.stop();
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
        const bodies = slice.map((m) => m.body);
        const ids = await sendAll(platform, q, bodies);
        slice.forEach((m, j) => sent.push({ ...m, messageId: ids[j] ?? "" }));
      }
    }),
  );
  return sent;
}

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

/** Every drained queue of the program empty, and every malformed advert picked up by a claimer. */
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
