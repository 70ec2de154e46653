/**
 * The ledger's rules, pure: from what was observed of one message (its effects, where copies of it
 * sit) to its outcome, and from the outcomes to the run's totals. The observation itself is
 * observe.ts; these functions only judge, so each rule is tested on its own (test/local/chaos-ledger.test.ts).
 */
import type { FaultKind, FaultRecord } from "./fault-proxy";
import type { Receive } from "./receives";
import type { Consumer } from "./traffic";
import type { MessageCounts } from "../show/view";

export type Outcome = "processed" | "quarantined" | "inDlq" | "remaining" | "lost";

export interface MessageFacts {
  consumer: Consumer;
  key: string;
  wellFormed: boolean;
  /** Side effects observed for it: GPU deliveries, tasks, completions, acknowledgements… */
  effects: number;
  /** Effects that happened more often than once where once is the contract (see observe.ts per consumer). */
  duplicates: number;
  /** An effect whose companion never happened, e.g. a job completed without its metrics. */
  incomplete?: string;
  /** In a quarantine with a reason or, for a pool advert, discarded and counted. */
  quarantined: boolean;
  /** In a DLQ with no quarantine reason. */
  inDlq: boolean;
  /** The fault log shows every receive of the DLQ copy failed by an injected fault. */
  everyReceiveFaulted: boolean;
  /** Still on a consumed queue (visible, in flight or delayed). */
  remaining: boolean;
}

export interface Verdict {
  outcome: Outcome;
  duplicates: number;
  reason?: string;
}

/** One message's outcome. Rules in order; the first that applies decides. */
export function judge(f: MessageFacts): Verdict {
  const duplicates = Math.max(0, f.duplicates);
  const lost = (reason: string): Verdict => ({ outcome: "lost", duplicates, reason });
  if (f.wellFormed && f.incomplete !== undefined) return lost(f.incomplete);
  if (f.wellFormed && f.effects > 0) return { outcome: "processed", duplicates };
  if (!f.wellFormed && f.quarantined) return { outcome: "quarantined", duplicates };
  if (!f.wellFormed && f.effects > 0) return lost("a malformed message had an effect");
  if (f.inDlq) return f.everyReceiveFaulted ? { outcome: "inDlq", duplicates } : lost("in a DLQ, and not every receive was failed by an injected fault");
  if (f.wellFormed && f.quarantined) return lost("a well-formed message was quarantined");
  if (f.remaining) return { outcome: "remaining", duplicates };
  return lost(f.wellFormed ? "no effect, and on no queue" : "malformed, yet neither quarantined nor discarded");
}

/** Faults count against a receive within this much of its invocation (clocks of two processes). */
const RECEIVE_SLACK_MS = 50;

/** Pure: whether a fault's request names any of `tokens` (message ids, receipt handles, keys). */
export function mentions(fault: Pick<FaultRecord, "request" | "messageIds" | "receiptHandles">, tokens: readonly string[]): boolean {
  return tokens.some((t) => t !== "" && (fault.messageIds.includes(t) || fault.receiptHandles.includes(t) || fault.request.includes(t)));
}

/**
 * Pure: was this receive failed by an injected fault? It must have failed (the record was kept),
 * and a fault must have hit the same function during the invocation, on a call that names this
 * message (its id, receipt handle or key) or names none of its batchmates (a batch-wide call, such
 * as counting running tasks).
 */
export function receiveFaulted(r: Receive, faults: readonly FaultRecord[], keys: readonly string[]): boolean {
  if (r.acknowledged) return false;
  const own = [r.messageId, r.receiptHandle, ...keys];
  return faults.some(
    (f) =>
      f.caller === r.fn &&
      f.kind !== "latency" &&
      f.atMs >= r.startMs - RECEIVE_SLACK_MS &&
      f.atMs <= r.endMs + RECEIVE_SLACK_MS &&
      (mentions(f, own) || !mentions(f, r.batchmates)),
  );
}

/**
 * Pure: the DLQ rule's test. Every receive of the message (`messageId`, the copy in the DLQ) was
 * failed by a fault: each delivery to a function (receiveFaulted) and each ReceiveMessage whose
 * response the proxy lost (those count as receives no consumer ever saw). No receive at all proves nothing.
 */
export function everyReceiveFaulted(messageId: string, receives: readonly Receive[], faults: readonly FaultRecord[], keys: readonly string[]): boolean {
  const delivered = receives.filter((r) => r.messageId === messageId);
  const lostReceives = faults.filter((f) => f.kind === "response-lost" && f.operation === "ReceiveMessage" && f.messageIds.includes(messageId));
  if (delivered.length + lostReceives.length === 0) return false;
  return delivered.every((r) => receiveFaulted(r, faults, keys));
}

/**
 * Pure: the DLQ rule for a copy that a consumer dead-lettered itself (the retraining launcher, on a
 * message's last receive, sends it to the DLQ stamped with the source message's id, and
 * acknowledges the source). The copy's own id was never received; the source's receives are judged
 * instead, and its latest one, acknowledged by the dead-letter, must have been failed by a fault
 * like every other.
 */
export function everyReceiveFaultedBeforeDeadLetter(
  sourceId: string,
  receives: readonly Receive[],
  faults: readonly FaultRecord[],
  keys: readonly string[],
): boolean {
  const own = receives.filter((r) => r.messageId === sourceId);
  const latest = own.reduce<Receive | undefined>((last, r) => (last === undefined || r.startMs > last.startMs ? r : last), undefined);
  if (latest === undefined) return false;
  const judged = own.map((r) => (r === latest ? { ...r, acknowledged: false } : r));
  return everyReceiveFaulted(sourceId, judged, faults, keys);
}

/** Pure: concurrent holders per instance over the claim rounds, and how many holders were one too many. */
export function claimsPerInstance(rounds: ReadonlyArray<ReadonlyArray<{ workflowId: string; instanceId: string }>>): {
  claims: Record<string, number>;
  duplicates: number;
} {
  const claims: Record<string, number> = {};
  let duplicates = 0;
  for (const round of rounds) {
    const holders = new Map<string, number>();
    for (const c of round) {
      holders.set(c.instanceId, (holders.get(c.instanceId) ?? 0) + 1);
      claims[c.instanceId] = (claims[c.instanceId] ?? 0) + 1;
    }
    for (const n of holders.values()) duplicates += Math.max(0, n - 1);
  }
  return { claims, duplicates };
}

export interface LockItem {
  instanceId: string;
  owner: string;
  expiresAtSeconds: number;
}

/**
 * Pure: locks held at the end with no live claim behind them. A lock is held while unexpired; it is
 * leaked when its owner is one of the run's workflows (`ours`) and that workflow does not hold that
 * instance (`live`: `owner/instance` pairs still claimed; empty once every claim was released).
 */
export function leakedLocks(locks: readonly LockItem[], nowSeconds: number, ours: (owner: string) => boolean, live: ReadonlySet<string>): LockItem[] {
  return locks.filter((l) => ours(l.owner) && l.expiresAtSeconds > nowSeconds && !live.has(`${l.owner}/${l.instanceId}`));
}

/**
 * The worker's job ledger (issue 25), as the chaos run reads it. Kept in one place: the ledger is
 * built beside this harness, and its names may still move.
 */
export const WORKER_LEDGER = {
  /** The table's logical name in the program. */
  table: "worker-jobs",
  /** Its partition key: the job id (or the message id of a job without one). */
  key: "job_key",
  /** The job id a key names (the identity today). */
  jobIdOf: (key: string): string => key,
  /** Log steps, compared with `-` and `_` alike. */
  steps: {
    started: "job_started",
    succeeded: "job_succeeded",
    leaseTaken: "job_lease_taken",
    alreadyCompleted: "job_already_completed",
    heldElsewhere: "job_held_elsewhere",
    /** With `at: "completion"`: the handler finished, but a newer holder had the lease (its completion refused). */
    leaseLost: "job_lease_lost",
  },
} as const;

/** One ledger item, as much of it as the counts need. */
export interface WorkerLedgerItem {
  jobKey: string;
  state: string;
  /** +1 each time a lease was taken to run the job (a run given back or failed is taken again). */
  runs?: number;
  holder?: string;
  /** Epoch ms; 0 once the holder released it (a failed job, a give-back). */
  leaseExpiresAt?: number;
}

export interface WorkerJobCounts {
  /** Jobs whose handler ran to its end more than once (a job interrupted, failed or given back and run again is expected). */
  jobsRunMoreThanOnce: number;
  /** Jobs whose success was logged more than once. */
  jobsCompletedMoreThanOnce: number;
  /** Ledger items still `running` once every worker message is accounted for. */
  leakedLeases: number;
  details: {
    ledgerTable: "present" | "absent";
    /** Items still `running` and not released (leaked only when every message is accounted for). */
    leasesRunning: number;
    leasesTaken: number;
    alreadyCompletedSkips: number;
    heldElsewhereSkips: number;
    /** Up to 10 jobs run more than once, with their runs. */
    runTwiceExamples: Array<{ job: string; runs: number }>;
    leakedExamples: Array<{ job: string; holder?: string }>;
  };
}

const stepIs = (line: { step?: unknown }, step: string): boolean => typeof line.step === "string" && line.step.replace(/-/g, "_") === step;

/**
 * Pure: the worker's run counts from its tasks' log lines and the ledger's items (undefined: no
 * table, so nothing can leak). A run counts when the job's handler ran to its end: a
 * `succeeded` line, or a `leaseLost` line at the completion (the handler finished, and a newer
 * holder's lease refused its completion). A job taken again after it was given back, failed or
 * lost its lease mid-run is expected, so the ledger's `runs` (every lease taken) is reported, not
 * judged. A leaked lease is an item still `running` and not released (`leaseExpiresAt` 0 is a
 * release), once every message is accounted for (`everyMessageAccounted`: no worker message
 * remains on its queue, so a lease still held has no job behind it).
 */
export function workerJobCounts(
  lines: ReadonlyArray<{ step?: unknown; job_id?: unknown; at?: unknown }>,
  ledger: readonly WorkerLedgerItem[] | undefined,
  everyMessageAccounted: boolean,
): WorkerJobCounts {
  const s = WORKER_LEDGER.steps;
  const count = (step: string, also: (l: { at?: unknown }) => boolean = () => true) => {
    const m = new Map<string, number>();
    for (const l of lines) if (stepIs(l, step) && also(l) && typeof l.job_id === "string") m.set(l.job_id, (m.get(l.job_id) ?? 0) + 1);
    return m;
  };
  const leases = count(s.leaseTaken);
  const succeeded = count(s.succeeded);
  const finished = new Map(succeeded);
  for (const [job, n] of count(s.leaseLost, (l) => l.at === "completion")) finished.set(job, (finished.get(job) ?? 0) + n);
  const runTwice = [...finished].filter(([, n]) => n > 1);
  const running = (ledger ?? []).filter((i) => i.state === "running" && i.leaseExpiresAt !== 0);
  const leaked = everyMessageAccounted ? running : [];
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return {
    jobsRunMoreThanOnce: runTwice.length,
    jobsCompletedMoreThanOnce: [...succeeded.values()].filter((n) => n > 1).length,
    leakedLeases: leaked.length,
    details: {
      ledgerTable: ledger === undefined ? "absent" : "present",
      leasesRunning: running.length,
      leasesTaken: Math.max(
        total(leases),
        (ledger ?? []).reduce((a, i) => a + (i.runs ?? 0), 0),
      ),
      alreadyCompletedSkips: lines.filter((l) => stepIs(l, s.alreadyCompleted)).length,
      heldElsewhereSkips: lines.filter((l) => stepIs(l, s.heldElsewhere)).length,
      runTwiceExamples: runTwice.slice(0, 10).map(([job, n]) => ({ job, runs: n })),
      leakedExamples: leaked.slice(0, 10).map((i) => ({ job: WORKER_LEDGER.jobIdOf(i.jobKey), ...(i.holder !== undefined ? { holder: i.holder } : {}) })),
    },
  };
}

/** What the run counts for the worker beside messages; 0 for every other consumer. */
export interface WorkerRunTotals {
  jobsRunMoreThanOnce: number;
  jobsCompletedMoreThanOnce: number;
  leakedLeases: number;
}

export interface ConsumerTotals extends MessageCounts, WorkerRunTotals {
  consumer: Consumer;
  duplicateSideEffects: number;
  leakedLocks: number;
  /** Consumer-specific counts (RunTask calls, metrics, claims…). */
  details: Record<string, unknown>;
  /** Up to 10 lost messages with the reason, to start a replay from. */
  lostExamples: Array<{ key: string; reason: string }>;
}

export type Totals = Omit<ConsumerTotals, "consumer" | "details" | "lostExamples">;

export interface ChaosSummary {
  totals: Totals;
  byConsumer: ConsumerTotals[];
  faults: { injected: number; byKind: Record<FaultKind, number> };
}

/** Pure: one consumer's row from its messages' facts, plus what is counted beside messages (claims, locks). */
export function consumerTotals(
  consumer: Consumer,
  facts: readonly MessageFacts[],
  extra: { duplicateSideEffects?: number; leakedLocks?: number; worker?: WorkerRunTotals; details?: Record<string, unknown> } = {},
): ConsumerTotals {
  const row: ConsumerTotals = {
    consumer,
    sent: facts.length,
    processed: 0,
    quarantined: 0,
    inDlq: 0,
    remaining: 0,
    lost: 0,
    duplicateSideEffects: extra.duplicateSideEffects ?? 0,
    leakedLocks: extra.leakedLocks ?? 0,
    jobsRunMoreThanOnce: extra.worker?.jobsRunMoreThanOnce ?? 0,
    jobsCompletedMoreThanOnce: extra.worker?.jobsCompletedMoreThanOnce ?? 0,
    leakedLeases: extra.worker?.leakedLeases ?? 0,
    details: extra.details ?? {},
    lostExamples: [],
  };
  for (const f of facts) {
    const v = judge(f);
    row[v.outcome] += 1;
    row.duplicateSideEffects += v.duplicates;
    if (v.outcome === "lost" && row.lostExamples.length < 10) row.lostExamples.push({ key: f.key, reason: v.reason ?? "" });
  }
  return row;
}

export function sumTotals(rows: readonly ConsumerTotals[]): Totals {
  const totals: Totals = {
    sent: 0,
    processed: 0,
    quarantined: 0,
    inDlq: 0,
    remaining: 0,
    lost: 0,
    duplicateSideEffects: 0,
    leakedLocks: 0,
    jobsRunMoreThanOnce: 0,
    jobsCompletedMoreThanOnce: 0,
    leakedLeases: 0,
  };
  for (const r of rows) for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += r[k];
  return totals;
}

/** Exit 1 when anything is lost, duplicated or leaked, or a worker job ran twice. */
export function failed(totals: Totals): boolean {
  return (
    totals.lost > 0 ||
    totals.duplicateSideEffects > 0 ||
    totals.leakedLocks > 0 ||
    totals.jobsRunMoreThanOnce > 0 ||
    totals.jobsCompletedMoreThanOnce > 0 ||
    totals.leakedLeases > 0
  );
}

/** Pure: the totals of several runs (seeds), field by field. */
export function addTotals(rows: readonly Totals[]): Totals {
  return sumTotals(rows.map((t) => ({ ...t, consumer: "worker" as const, details: {}, lostExamples: [] })));
}
