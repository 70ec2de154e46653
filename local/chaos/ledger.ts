/**
 * The ledger's rules, pure: from what was observed of one message (its effects, where copies of it
 * sit) to its outcome, and from the outcomes to the run's totals. The observation itself is
 * observe.ts; these functions only judge, so each rule is tested on its own (test/local/chaos/ledger.test.ts).
 * The worker's job ledger is worker-ledger.ts.
 */
import type { CrashRecord, FaultKind, FaultRecord } from "./fault-proxy";
import type { Receive } from "./receives";
import type { Consumer } from "./traffic";
import type { MessageCounts } from "../show/view";

export type Outcome = "processed" | "quarantined" | "inDlq" | "remaining" | "expired" | "lost";

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
  /** SQS deleted it for age: older than its queue's MessageRetentionPeriod (moto-server.py's log). */
  expired?: boolean;
  /** Kills of processes that held this message's work when they died (`--crash-rate`). */
  crashHits?: CrashHits;
  /** An injected fault (not latency) named this message or its key: a duplicate then has a fault to explain it. */
  faultTouched?: boolean;
}

/** Kills that hit one message's work, by the kind of process. */
export interface CrashHits {
  /** Lambda invocations killed with the message in their batch. */
  invocations: number;
  /** Worker tasks killed holding the job, or GPU gateways killed holding the window's key claim. */
  processes: number;
}

/**
 * Pure: how many extra effects of one message its crashes may cause, per part, as
 * docs/reliability.md ("What a kill may cause") states:
 * - windows (ingest-window, ingest-dlq): processed ≤ 1 + gateways killed while holding its key claim
 *   (the model may have worked on it, and the claim's lease lapses); a killed Lambda adds none (the
 *   gateway's key claim answers the redelivery's POST);
 * - fleet termination: reports ≤ 1 + killed deliveries (a delivery killed between its EMF lines and
 *   its done mark leaves an unfinished claim that the redelivery takes over); a report is a
 *   completion line and a JobDuration metric, so the ledger's extras ≤ 2 × killed deliveries;
 * - retraining (intent + clientToken per origin), housekeeping and refill (idempotent effects):
 *   none; the worker: no extra completion (the fenced completion), its extra runs judged apart
 *   (workerCrashRuns).
 */
export function crashBound(consumer: Consumer, hits: CrashHits): number {
  switch (consumer) {
    case "ingest-window":
    case "ingest-dlq":
      return hits.processes;
    case "fleet-termination":
      return 2 * hits.invocations;
    default:
      return 0;
  }
}

/** What crashes caused in one part, against its bound. */
export interface CrashTotals {
  /** Extra effects of messages whose work a killed process held. */
  crashExtras: number;
  /** What the part's bound allows those messages. */
  crashBound: number;
  /** Extras beyond the bound, message by message: fails the run. */
  crashOverBound: number;
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
  // A kill left the effect incomplete and every receive since failed (by a fault or the kill): the
  // message sits in its DLQ, and its redrive completes it (the fleet's report: a redrive takes an
  // unfinished claim over). Without a kill, an incomplete effect is lost as before.
  const killed = (f.crashHits?.invocations ?? 0) + (f.crashHits?.processes ?? 0) > 0;
  if (f.wellFormed && f.incomplete !== undefined && !(killed && f.inDlq && f.everyReceiveFaulted)) return lost(f.incomplete);
  if (f.wellFormed && f.incomplete !== undefined) return { outcome: "inDlq", duplicates };
  if (f.wellFormed && f.effects > 0) return { outcome: "processed", duplicates };
  if (!f.wellFormed && f.quarantined) return { outcome: "quarantined", duplicates };
  if (!f.wellFormed && f.effects > 0) return lost("a malformed message had an effect");
  // A pool advert outlives its retention by design (a stale advert must leave the pool: docs/parts/pool.md); any other message SQS deleted for age is lost.
  if (f.expired === true) return f.consumer === "pool-claim" ? { outcome: "expired", duplicates } : lost("SQS deleted it for age (its queue's retention)");
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
export function receiveFaulted(r: Receive, faults: readonly FaultRecord[], keys: readonly string[], kills: readonly CrashRecord[] = []): boolean {
  if (r.acknowledged) return false;
  if (receiveKilled(r, kills)) return true;
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

/** Slack on a killed invocation's deadline: the fleet's takeover grace (10 s simulated) and clocks. */
const DEADLINE_SLACK_MS = 1000;

/**
 * Pure: did a kill (`--crash-rate`) fail this receive? Its own invocation was killed with the message
 * in its batch; or it came while an earlier delivery of the message, killed, would still have been
 * running (before that invocation's deadline, `untilMs`): what the killed delivery left naming its
 * deadline (the fleet's report claim) looks alive until then, and the receive defers to it. On AWS
 * (visibility ≥ 6 × timeout) the redelivery comes after that deadline; the local run keeps Lambda's
 * timeout in real time while its SQS timers run sped up, so it comes sooner.
 */
export function receiveKilled(r: Receive, kills: readonly CrashRecord[]): boolean {
  if (r.acknowledged) return false;
  return kills.some(
    (k) =>
      k.caller === r.fn &&
      k.work.includes(r.messageId) &&
      k.atMs <= r.endMs + RECEIVE_SLACK_MS &&
      (k.atMs >= r.startMs - RECEIVE_SLACK_MS || (k.untilMs !== undefined && r.startMs <= k.untilMs + DEADLINE_SLACK_MS)),
  );
}

/**
 * Pure: the DLQ rule's test. Every receive of the message (`messageId`, the copy in the DLQ) was
 * failed by a fault: each delivery to a function (receiveFaulted) and each ReceiveMessage whose
 * response the proxy lost (those count as receives no consumer ever saw). No receive at all proves nothing.
 */
export function everyReceiveFaulted(
  messageId: string,
  receives: readonly Receive[],
  faults: readonly FaultRecord[],
  keys: readonly string[],
  kills: readonly CrashRecord[] = [],
): boolean {
  const delivered = receives.filter((r) => r.messageId === messageId);
  const lostReceives = faults.filter((f) => f.kind === "response-lost" && f.operation === "ReceiveMessage" && f.messageIds.includes(messageId));
  if (delivered.length + lostReceives.length === 0) return false;
  return delivered.every((r) => receiveFaulted(r, faults, keys, kills));
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
  kills: readonly CrashRecord[] = [],
): boolean {
  const own = receives.filter((r) => r.messageId === sourceId);
  const latest = own.reduce<Receive | undefined>((last, r) => (last === undefined || r.startMs > last.startMs ? r : last), undefined);
  if (latest === undefined) return false;
  const judged = own.map((r) => (r === latest ? { ...r, acknowledged: false } : r));
  return everyReceiveFaulted(sourceId, judged, faults, keys, kills);
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

/** What the run counts for the worker beside messages; 0 for every other consumer. */
export interface WorkerRunTotals {
  jobsRunMoreThanOnce: number;
  jobsCompletedMoreThanOnce: number;
  leakedLeases: number;
}

export interface ConsumerTotals extends MessageCounts, WorkerRunTotals, CrashTotals {
  consumer: Consumer;
  /** Pool adverts SQS deleted for age before a claimer took them (an advert's designed end); any other consumer's expired message is lost. */
  expired: number;
  /** Extra effects no crash explains: caused by an injected fault, or by neither (both fail the run). */
  duplicateSideEffects: number;
  /** Of those, the ones an injected fault touched. */
  duplicatesFromFaults: number;
  /** Processes killed while working on this part's messages. */
  kills: number;
  /** GPU key claims still held at the end (the windows' parts). */
  leakedKeyClaims: number;
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
  /** Injected AWS faults by kind, and (`--crash-rate`) processes killed by caller. */
  faults: { injected: number; byKind: Record<FaultKind, number>; kills?: Record<string, number> };
}

/** Pure: one consumer's row from its messages' facts, plus what is counted beside messages (claims, locks). */
export function consumerTotals(
  consumer: Consumer,
  facts: readonly MessageFacts[],
  extra: {
    duplicateSideEffects?: number;
    leakedLocks?: number;
    worker?: WorkerRunTotals;
    details?: Record<string, unknown>;
    crash?: CrashTotals;
    kills?: number;
    leakedKeyClaims?: number;
  } = {},
): ConsumerTotals {
  const { worker, crash, details = {}, ...counts } = extra;
  const row: ConsumerTotals = { consumer, ...zeroTotals(), ...counts, sent: facts.length, details, lostExamples: [] };
  if (crash) Object.assign(row, { crashExtras: crash.crashExtras, crashBound: crash.crashBound, crashOverBound: crash.crashOverBound });
  if (worker)
    Object.assign(row, {
      jobsRunMoreThanOnce: worker.jobsRunMoreThanOnce,
      jobsCompletedMoreThanOnce: worker.jobsCompletedMoreThanOnce,
      leakedLeases: worker.leakedLeases,
    });
  for (const f of facts) {
    const v = judge(f);
    row[v.outcome] += 1;
    const hits = f.crashHits ?? { invocations: 0, processes: 0 };
    if (hits.invocations + hits.processes > 0) {
      // A message whose work a killed process held: its extras are the crash's, within its bound.
      const bound = crashBound(consumer, hits);
      row.crashExtras += v.duplicates;
      row.crashBound += bound;
      row.crashOverBound += Math.max(0, v.duplicates - bound);
      if (v.duplicates > bound) {
        const examples = (row.details.crashOverExamples ??= []) as Array<{ key: string; extras: number; bound: number }>;
        if (examples.length < 10) examples.push({ key: f.key, extras: v.duplicates, bound });
      }
    } else {
      row.duplicateSideEffects += v.duplicates;
      if (f.faultTouched) row.duplicatesFromFaults += v.duplicates;
    }
    if (v.outcome === "lost" && row.lostExamples.length < 10) row.lostExamples.push({ key: f.key, reason: v.reason ?? "" });
  }
  return row;
}

/** Pure: the totals of rows (a run's consumers, or several runs' totals), field by field. */
export function sumTotals(rows: readonly Totals[]): Totals {
  const totals = zeroTotals();
  for (const r of rows) for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += r[k];
  return totals;
}

/** Every count at 0, in the order the summary document lists them. */
function zeroTotals(): Totals {
  return {
    sent: 0,
    processed: 0,
    quarantined: 0,
    inDlq: 0,
    remaining: 0,
    expired: 0,
    lost: 0,
    duplicateSideEffects: 0,
    duplicatesFromFaults: 0,
    crashExtras: 0,
    crashBound: 0,
    crashOverBound: 0,
    kills: 0,
    leakedKeyClaims: 0,
    leakedLocks: 0,
    jobsRunMoreThanOnce: 0,
    jobsCompletedMoreThanOnce: 0,
    leakedLeases: 0,
  };
}

/** Exit 1 when anything is lost, duplicated (beyond a crash's bound) or leaked, or a worker job ran to its end twice. */
export function failed(totals: Totals): boolean {
  return (
    totals.lost > 0 ||
    totals.duplicateSideEffects > 0 ||
    totals.crashOverBound > 0 ||
    totals.leakedKeyClaims > 0 ||
    totals.leakedLocks > 0 ||
    totals.jobsRunMoreThanOnce > 0 ||
    totals.jobsCompletedMoreThanOnce > 0 ||
    totals.leakedLeases > 0
  );
}
