/**
 * The ledger's rules, pure: from what was observed of one message (its effects, where copies of it
 * sit) to its outcome, and from the outcomes to the run's totals. The observation itself is
 * observe.ts; these functions only judge, so each rule is tested on its own (test/local/chaos-ledger.test.ts).
 */
import type { FaultKind, FaultRecord } from "./fault-proxy";
import type { Receive } from "./receives";
import type { Consumer } from "./traffic";
import type { MessageCounts } from "../types";

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
    (f) => f.caller === r.fn && f.kind !== "latency" && f.atMs >= r.startMs - RECEIVE_SLACK_MS && f.atMs <= r.endMs + RECEIVE_SLACK_MS && (mentions(f, own) || !mentions(f, r.batchmates)),
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

/** Pure: concurrent holders per instance over the claim rounds, and how many holders were one too many. */
export function claimsPerInstance(rounds: ReadonlyArray<ReadonlyArray<{ workflowId: string; instanceId: string }>>): { claims: Record<string, number>; duplicates: number } {
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

export interface ConsumerTotals extends MessageCounts {
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
  extra: { duplicateSideEffects?: number; leakedLocks?: number; details?: Record<string, unknown> } = {},
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
  const totals: Totals = { sent: 0, processed: 0, quarantined: 0, inDlq: 0, remaining: 0, lost: 0, duplicateSideEffects: 0, leakedLocks: 0 };
  for (const r of rows) for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += r[k];
  return totals;
}

/** Exit 1 when anything is lost, duplicated or leaked. */
export function failed(totals: Totals): boolean {
  return totals.lost > 0 || totals.duplicateSideEffects > 0 || totals.leakedLocks > 0;
}
