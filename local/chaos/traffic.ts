/**
 * The chaos run's generated traffic: for every consumer of the five parts, mostly well-formed
 * messages and some malformed ones, drawn from the seed. Every body is unique (it carries the
 * message's own key), so a copy of it found anywhere (a quarantine, a DLQ, a deferral) names its
 * message without relying on SQS message ids.
 */
import { type InventoryRecord, queuesConsumedBy } from "../../infra/parts/inventory";
import { Rng } from "./rng";

/**
 * The consumers the run drives, each by the program's consumer its messages feed: its name in the
 * parts' inventory (infra/parts/inventory.ts). Which queue that is comes from the program
 * (trafficQueues, below), never from here. Pool claims are driven separately (pool-claims.ts).
 */
export const DRIVES = {
  "ingest-window": "ingest-window",
  "ingest-dlq": "ingest-dlq-consumer",
  "retraining-launcher": "retraining-launcher",
  "fleet-termination": "fleet-termination-consumer",
  "fleet-housekeeping": "fleet-housekeeping-consumer",
  "pool-refill": "pool-refill",
  "pool-claim": "pool-claim",
  worker: "worker",
} as const;
export type Consumer = keyof typeof DRIVES;
/** The consumers the run drives, in the order it reports them. */
export const CONSUMERS = Object.keys(DRIVES) as Consumer[];

export interface ChaosMessage {
  consumer: Consumer;
  /** Logical name of the queue it is sent to. */
  queue: string;
  /** The domain key its effects are found by (window, model, job…); unique in a run. */
  key: string;
  body: string;
  wellFormed: boolean;
  /** A worker job of the long type (LONG_JOB_SHARE). */
  long?: boolean;
}

/**
 * Shares of the total per consumer. Retraining is small on purpose: the dev stack's launcher runs
 * at most 2 tasks at once and gathers for a 5 s (real) batching window, about 0.4 launches a
 * second whatever the speed, so its share is capped (`RETRAINING_MAX`).
 */
export const SHARES: Record<Consumer, number> = {
  "ingest-window": 0.3,
  "ingest-dlq": 0.05,
  "retraining-launcher": 0.01,
  "fleet-termination": 0.3,
  "fleet-housekeeping": 0.01,
  "pool-refill": 0.02,
  "pool-claim": 0.02,
  worker: 0.29,
};
/**
 * The queue each driven consumer's messages go to, from the program's inventory: the one queue its
 * program consumer takes from, or for the pool's claims the run's class's advert queue. Pure.
 */
export function trafficQueues(records: readonly InventoryRecord[], poolClass: string): Record<Consumer, string> {
  const adverts = new Map(records.flatMap((p) => p.queues).flatMap((q) => (q.advertClass === undefined ? [] : [[q.label, q.advertClass] as const])));
  return Object.fromEntries(
    CONSUMERS.map((c) => {
      const queues = queuesConsumedBy(records, DRIVES[c]).filter((q) => !adverts.has(q) || adverts.get(q) === poolClass);
      if (queues.length !== 1)
        throw new Error(
          `chaos: ${c} drives ${DRIVES[c]}, which the program has consume ${queues.length} queues (${queues.join(", ") || "none"}); expected one`,
        );
      return [c, queues[0]!];
    }),
  ) as Record<Consumer, string>;
}

export const RETRAINING_MAX = 40;
/** Of each consumer's messages, this share is malformed (at least one each). */
export const MALFORMED_SHARE = 0.05;
/**
 * Of the worker's well-formed jobs, this share (at least one) is of the long type: jobs that
 * outlive their first visibility timeout, so they live on heartbeats (run.ts sizes them).
 */
export const LONG_JOB_SHARE = 0.05;

export interface TrafficContext {
  seed: number;
  /** The logical name of the queue each consumer's messages are sent to, as the program declares it. */
  queues: Record<Consumer, string>;
  /** The pool class whose queue gets the malformed adverts and whose refill gets the triggers. */
  poolClass: string;
  /** A job type the stack's worker allows, for well-formed jobs. */
  workerJobType: string;
  /** The allowed job type that runs for several heartbeats, for LONG_JOB_SHARE of them; none without. */
  longJobType?: string;
  /** Simulated now, epoch ms (timestamps in bodies). */
  nowMs: number;
}

/** How many of `total` each consumer gets: its share, at least 2 (one well-formed, one malformed). */
export function allocate(total: number): Record<Consumer, number> {
  const out = {} as Record<Consumer, number>;
  for (const c of CONSUMERS) out[c] = Math.max(2, Math.round(total * SHARES[c]));
  out["retraining-launcher"] = Math.min(out["retraining-launcher"], RETRAINING_MAX);
  // What rounding and the caps left over goes to the cheapest consumer to drain.
  const sum = CONSUMERS.reduce((n, c) => n + out[c], 0);
  out["fleet-termination"] = Math.max(2, out["fleet-termination"] + (total - sum));
  return out;
}

/** Pure: the run's messages, in the order they are sent (shuffled across consumers). */
export function generateTraffic(total: number, ctx: TrafficContext): ChaosMessage[] {
  const rng = new Rng(ctx.seed);
  const tag = `c${ctx.seed.toString(36)}`;
  const counts = allocate(total);
  const all: ChaosMessage[] = [];
  for (const consumer of CONSUMERS) {
    const n = counts[consumer];
    const malformed = Math.max(1, Math.round(n * MALFORMED_SHARE));
    const long = consumer === "worker" && ctx.longJobType !== undefined ? longJobs(n - malformed) : 0;
    for (let i = 0; i < n; i++) all.push(GENERATORS[consumer](rng, { ...ctx, tag, i, malformed: i < malformed, long: i >= malformed && i < malformed + long }));
  }
  return rng.shuffle(all);
}

/** Pure: how many of `wellFormed` worker jobs are long: LONG_JOB_SHARE rounded up, at least one. */
export function longJobs(wellFormed: number): number {
  return wellFormed <= 0 ? 0 : Math.min(wellFormed, Math.max(1, Math.ceil(wellFormed * LONG_JOB_SHARE)));
}

interface Draw extends TrafficContext {
  tag: string;
  i: number;
  malformed: boolean;
  long: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** An EC2-shaped instance id, unique per message: fleet's schema wants `i-` and 8–17 hex digits. */
const instanceIdFor = (seed: number, i: number) => `i-${(seed % 0xffff).toString(16).padStart(4, "0")}${i.toString(16).padStart(8, "0")}`;

/** One message of `d`: `good()` when well-formed, else one of `bad` picked (after the draws its key took). */
function shaped(consumer: Consumer, rng: Rng, d: Draw, key: string, good: () => string, bad: string[]): ChaosMessage {
  const base = { consumer, queue: d.queues[consumer], key };
  return d.malformed ? { ...base, wellFormed: false, body: rng.pick(bad) } : { ...base, wellFormed: true, body: good() };
}

const GENERATORS: Record<Consumer, (rng: Rng, d: Draw) => ChaosMessage> = {
  "ingest-window": (rng, d) => window("ingest-window", rng, d),
  "ingest-dlq": (rng, d) => window("ingest-dlq", rng, d),

  "retraining-launcher": (rng, d) => {
    const model = `Chaos${rng.pick(["Pascal", "Euler", "Gauss"])}-${d.tag}-${d.i}`;
    return shaped("retraining-launcher", rng, d, model, () => JSON.stringify({ model_name: model, trigger: rng.pick(["manual", "drift_detected"]) }), [
      JSON.stringify({ model_name: "", trigger: "manual", chaos_key: model }),
      JSON.stringify({ model_name: `-${model} has spaces!`, trigger: "manual" }),
      JSON.stringify({ model_name: model, trigger: "whenever" }),
      `{"model_name": "${model}", trigger`,
    ]);
  },

  "fleet-termination": (rng, d) => {
    const job = `job-${d.tag}-${d.i}`;
    const failed = rng.chance(0.2);
    const message = {
      instance_id: instanceIdFor(d.seed, d.i),
      job_id: job,
      status: failed ? "failure" : "success",
      exit_code: failed ? 2 : 0,
      // Unique per job: the JobDuration metric's value is how the ledger ties an EMF line to its job.
      duration_seconds: 100_000 + d.i,
      started_at: iso(d.nowMs - 3_600_000),
      completed_at: iso(d.nowMs),
      ...(failed ? { error: "exit status 2" } : {}),
    };
    return shaped("fleet-termination", rng, d, job, () => JSON.stringify(message), [
      JSON.stringify({ ...message, instance_id: `not-an-instance-${d.i}` }),
      JSON.stringify({ ...message, status: "exploded" }),
      JSON.stringify({ ...message, exit_code: "two" }),
      `not json: ${job}`,
    ]);
  },

  "fleet-housekeeping": (rng, d) => {
    // Not orphaned_instances: a sweep with a short max runtime would terminate the pool's warm
    // instances under the claimers (the fleet scenario covers it); these three touch nothing the run counts on.
    const task = rng.pick(["stale_ssm", "old_jobs", "pool_audit"]);
    const timestamp = iso(d.nowMs + d.i);
    return shaped("fleet-housekeeping", rng, d, `${task}@${timestamp}`, () => JSON.stringify({ task_type: task, timestamp, params: {} }), [
      JSON.stringify({ task_type: "defragment", timestamp, params: {} }),
      JSON.stringify({ task_type: task, timestamp, params: { typo_minutes: 5 } }),
    ]);
  },

  "pool-refill": (rng, d) => {
    const scheduled = iso(d.nowMs + d.i * 1000);
    return shaped("pool-refill", rng, d, `refill@${scheduled}`, () => JSON.stringify({ resource_class: d.poolClass, scheduled_time: scheduled }), [
      JSON.stringify({ resource_class: `no-such-class-${d.i}`, scheduled_time: scheduled }),
      JSON.stringify({ scheduled_time: scheduled }),
    ]);
  },

  // Only malformed adverts: a well-formed one must name a real pool instance, and the refill
  // publishes those; the claimers (pool-claims.ts) are this consumer's well-formed traffic.
  "pool-claim": (rng, d) => {
    const key = `advert-${d.tag}-${d.i}`;
    return {
      consumer: "pool-claim",
      queue: d.queues["pool-claim"],
      key,
      wellFormed: false,
      body: rng.pick([
        JSON.stringify({
          instance_id: `bogus-${key}`,
          resource_class: d.poolClass,
          instance_type: "c7g.large",
          usage_class: "on-demand",
          cpu: 2,
          memory_mib: 4096,
          advertised_at: iso(d.nowMs),
        }),
        JSON.stringify({ instance_id: instanceIdFor(d.seed, d.i), resource_class: d.poolClass, cpu: -1, chaos_key: key }),
        `advert? ${key}`,
      ]),
    };
  },

  worker: (rng, d) => {
    const job = `w-${d.tag}-${d.i}`;
    // estimated_seconds 1 for the long ones too: their first visibility is then one heartbeat
    // extension, shorter than the job, and only heartbeats keep the message hidden while it runs.
    const long = d.long && d.longJobType !== undefined;
    const [type, text] = long ? [d.longJobType, "chaos, long"] : [d.workerJobType, "chaos"];
    const message = shaped("worker", rng, d, job, () => JSON.stringify({ job_id: job, type, payload: { n: d.i, text }, estimated_seconds: 1 }), [
      JSON.stringify({ job_id: job, type: d.workerJobType }),
      JSON.stringify({ job_id: "", type: d.workerJobType, payload: { key: job } }),
      `job ${job}`,
    ]);
    return long ? { ...message, long: true } : message;
  },
};

function window(consumer: "ingest-window" | "ingest-dlq", rng: Rng, d: Draw): ChaosMessage {
  const sessionId = `${consumer === "ingest-dlq" ? "dlq" : "s"}-${d.tag}-${Math.floor(d.i / 50)}`;
  const windowIndex = d.i % 50;
  const key = `${sessionId}/${windowIndex}`;
  return shaped(consumer, rng, d, key, () => JSON.stringify({ sessionId, userId: "chaos", windowIndex, frameCount: 30 }), [
    JSON.stringify({ sessionId, userId: "chaos", windowIndex: "not-a-number", frameCount: 30, chaos_key: key }),
    JSON.stringify({ sessionId, windowIndex, frameCount: -1, chaos_key: key }),
    `window ${key}`,
  ]);
}
