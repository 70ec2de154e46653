import { randomUUID } from "node:crypto";
import { UpdateCommand, type DynamoDBDocumentClient, type UpdateCommandInput } from "@aws-sdk/lib-dynamodb";
import { conditionalWrite, type ConditionalOutcome } from "../shared/conditional-write";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";

/**
 * The worker's job ledger (docs/reliability.md, "The worker's job ledger"): one item per job in
 * the `worker-jobs` table, keyed by `job_key`. A task runs a job only under a lease it took with a
 * conditional write; it renews the lease every heartbeat, completes the job fenced by its lease
 * token, and only then deletes the message. A redelivered message whose job is complete is deleted
 * unrun; one whose job another task holds is left to that task.
 *
 * Every write is an UpdateItem whose condition is data (`Condition` below): the real table gets it
 * as a DynamoDB expression (`updateInput`), and the tests' in-memory table evaluates the very same
 * conditions (`evaluateCondition`, `applyWrite`), so the property test drives the conditions the
 * worker sends, not a copy of them.
 */

export const LEDGER_ATTRIBUTES = {
  key: "job_key",
  state: "state",
  holder: "holder",
  leaseToken: "lease_token",
  leaseExpiresAt: "lease_expires_at",
  receiptHandle: "receipt_handle",
  runs: "runs",
  completedAt: "completed_at",
  outcome: "outcome",
  expiresAt: "expires_at",
} as const;

export type JobState = "running" | "completed";

/** An item of the table, as the DocumentClient reads it. */
export interface LedgerItem {
  job_key: string;
  state: JobState;
  /** The task that took the current (or last) lease: its ECS task ARN, else hostname:pid. */
  holder: string;
  /** Random per lease taken: the fence of every later write by that lease's holder. */
  lease_token: string;
  /** Epoch ms; a running job whose lease is past this may be taken by another task. */
  lease_expires_at: number;
  /** The latest receipt handle any task received for this job's message. */
  receipt_handle: string;
  /** Leases taken to run the job: 1 unless a holder died, gave the job back or failed it. */
  runs: number;
  completed_at?: number;
  outcome?: string;
  /** Epoch seconds: DynamoDB's TTL removes the item after it. */
  expires_at: number;
}

/**
 * How long an item outlives its last write. A completed job must be remembered as long as any copy
 * of its message can come back. A copy can sit in the DLQ up to 14 days after it was first sent
 * (SQS's longest retention; a move to a standard DLQ keeps the enqueue time), and a redrive from
 * there starts a new message with a new enqueue time and retention (SQS Developer Guide, "Configure
 * a dead-letter queue redrive"), so it can wait up to 14 more days in the work queue. 28 days
 * covers one redrive; a second needs the copy to reach the DLQ again, which a job the ledger
 * remembers as completed never does (its redeliveries are deleted unrun).
 */
export const LEDGER_RETENTION_SECONDS = 2 * 14 * 24 * 3600;

/** A condition on the item as it is before the write; `exists: false` also holds when there is no item. */
export type Condition =
  | { op: "absent" }
  | { op: "eq"; attr: keyof LedgerItem; value: string | number }
  | { op: "lt"; attr: keyof LedgerItem; value: number }
  | { op: "and" | "or"; of: Condition[] };

/** One conditional UpdateItem: SET these attributes (and ADD these counters) if `condition` holds. */
export interface LedgerWrite {
  jobKey: string;
  condition: Condition;
  set: Partial<LedgerItem>;
  add?: Partial<Record<"runs", number>>;
}

/** Pure: whether `condition` holds for `item` (undefined: no item), as DynamoDB would judge it. */
export function evaluateCondition(condition: Condition, item: LedgerItem | undefined): boolean {
  switch (condition.op) {
    case "absent":
      return item === undefined;
    case "eq":
      return item !== undefined && item[condition.attr] === condition.value;
    case "lt": {
      const v = item?.[condition.attr];
      // DynamoDB compares only like types: a missing or non-number attribute fails `<`.
      return typeof v === "number" && v < condition.value;
    }
    case "and":
      return condition.of.every((c) => evaluateCondition(c, item));
    case "or":
      return condition.of.some((c) => evaluateCondition(c, item));
  }
}

/** Pure: the item after `write` applied to `item` (UpdateItem creates a missing item). */
export function applyWrite(item: LedgerItem | undefined, write: LedgerWrite): LedgerItem {
  const next = { ...(item ?? {}), job_key: write.jobKey, ...write.set } as LedgerItem;
  for (const [attr, n] of Object.entries(write.add ?? {}) as Array<["runs", number]>) next[attr] = (item?.[attr] ?? 0) + n;
  return next;
}

/** Pure: the UpdateItem a write sends. Names and values are placeholders, so no attribute name can clash with a reserved word (`state` is one). */
export function updateInput(tableName: string, write: LedgerWrite): UpdateCommandInput {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (attr: string) => {
    const placeholder = `#${attr}`;
    names[placeholder] = attr;
    return placeholder;
  };
  let n = 0;
  const value = (v: unknown) => {
    const placeholder = `:v${n++}`;
    values[placeholder] = v;
    return placeholder;
  };
  const expr = (c: Condition): string => {
    switch (c.op) {
      case "absent":
        return `attribute_not_exists(${name(LEDGER_ATTRIBUTES.key)})`;
      case "eq":
        return `${name(c.attr)} = ${value(c.value)}`;
      case "lt":
        return `${name(c.attr)} < ${value(c.value)}`;
      case "and":
      case "or":
        return `(${c.of.map(expr).join(` ${c.op.toUpperCase()} `)})`;
    }
  };
  const sets = Object.entries(write.set).map(([attr, v]) => `${name(attr)} = ${value(v)}`);
  const adds = Object.entries(write.add ?? {}).map(([attr, v]) => `${name(attr)} ${value(v)}`);
  const condition = expr(write.condition);
  return {
    TableName: tableName,
    Key: { [LEDGER_ATTRIBUTES.key]: write.jobKey },
    UpdateExpression: [sets.length > 0 ? `SET ${sets.join(", ")}` : "", adds.length > 0 ? `ADD ${adds.join(", ")}` : ""].filter(Boolean).join(" "),
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    // The item after the write: the renewal and the completion read the current receipt handle from it.
    ReturnValues: "ALL_NEW",
  };
}

/**
 * Where the ledger's writes go. Answers like `conditionalWrite`: applied with the item after the
 * write, or not applied with the item the condition failed against; any other error is thrown.
 */
export interface LedgerStore {
  write(write: LedgerWrite): Promise<ConditionalOutcome>;
}

/**
 * The DynamoDB table, through the DocumentClient (ReturnValuesOnConditionCheckFailure: ALL_OLD).
 * Every write asks ALL_NEW, and an UpdateItem that applied always has an item to return: the
 * ledger reads an applied write's `attributes` as present.
 */
export function dynamoLedgerStore(db: DynamoDBDocumentClient, tableName: string): LedgerStore {
  return { write: (w) => conditionalWrite(db, new UpdateCommand(updateInput(tableName, w))) };
}

/** A lease this task holds on a job. `receiptHandle` follows the ledger: the latest any receive recorded. */
export interface Lease {
  jobKey: string;
  token: string;
  holder: string;
  receiptHandle: string;
  runs: number;
}

export type Acquired =
  | { kind: "taken"; lease: Lease; recovered: boolean }
  /** The job completed earlier: the message is deleted with `receiptHandle` (this receive's). */
  | { kind: "completed"; holder: string; completedAt: number | undefined; outcome: string | undefined }
  /** Another lease is live: this receive's handle is recorded in it (when `recorded`), the message left to its holder. */
  | { kind: "held"; holder: string; leaseExpiresAt: number; recorded: boolean };

export type Renewed =
  | { kind: "renewed"; receiptHandle: string; leaseExpiresAt: number }
  /** This lease's own completion landed first (a beat racing the completing write): nothing is lost. */
  | { kind: "completed"; receiptHandle: string }
  | { kind: "lost"; holder: string | undefined; state: JobState | undefined };

export type Completed =
  | { kind: "completed"; receiptHandle: string; recovered: boolean }
  | { kind: "refused"; holder: string | undefined; state: JobState | undefined };

export interface JobLedgerOptions {
  store: LedgerStore;
  /** This task's identity, resolved once (the ECS metadata endpoint answers asynchronously). */
  holder: () => Promise<string>;
  /** How long a lease lasts past its last renewal. */
  leaseMs: number;
  now?: () => number;
  newToken?: () => string;
  /** Re-sends of a write the SDK gave up on: every write is resolvable by its lease token. */
  resend?: ResendPolicy;
}

/** Rounds of take-or-record on one receive before it is left to the queue. */
const ACQUIRE_ROUNDS = 3;

const asItem = (x: Record<string, unknown> | undefined): LedgerItem | undefined => x as LedgerItem | undefined;

export class JobLedger {
  private readonly now: () => number;
  private readonly newToken: () => string;
  private readonly resend: ResendPolicy;

  constructor(private readonly o: JobLedgerOptions) {
    this.now = o.now ?? Date.now;
    this.newToken = o.newToken ?? randomUUID;
    this.resend = o.resend ?? DEFAULT_RESEND;
  }

  private ttl(now: number): number {
    return Math.floor(now / 1000) + LEDGER_RETENTION_SECONDS;
  }

  private write(w: LedgerWrite): Promise<ConditionalOutcome> {
    return withResends(() => this.o.store.write(w), this.resend);
  }

  /**
   * Takes the job's lease for this receive, or says why not. The take applies when there is no
   * item, or the job is running under a lease that has expired (its holder died, gave it back or
   * failed it). Its failed condition is resolved by the item it met: our own token is our own take
   * whose response was lost; `completed` means delete unrun; a live lease elsewhere gets this
   * receive's handle recorded in it, so its holder extends and deletes with the handle that is
   * current.
   *
   * A live lease that names this very task, for a job this task is not running (`runningHere`
   * false), is our own take whose every answer was lost, abandoned when the take failed: it is
   * taken over, fenced by its token, rather than left to expire while every receive reads it as
   * someone else's. And a take that fails (an error after the SDK's retries and the re-sends)
   * releases whatever it may have taken, fenced by its own token, before the error goes up.
   */
  async acquire(jobKey: string, receiptHandle: string, runningHere = false): Promise<Acquired> {
    const holder = await this.o.holder();
    const token = this.newToken();
    try {
      return await this.takeOrRecord(jobKey, receiptHandle, holder, token, runningHere);
    } catch (error) {
      await this.abandon(jobKey, token);
      throw error;
    }
  }

  /** Releases a take that may have applied unseen (lease_expires_at 0, as a give-back does); a failure is left to the self-takeover. */
  private async abandon(jobKey: string, token: string): Promise<void> {
    try {
      await this.o.store.write({
        jobKey,
        condition: {
          op: "and",
          of: [
            { op: "eq", attr: "state", value: "running" },
            { op: "eq", attr: "lease_token", value: token },
          ],
        },
        set: { lease_expires_at: 0 },
      });
    } catch {
      // The take's own error is the one to report; an unreleased lease of ours is taken over by our next receive.
    }
  }

  private async takeOrRecord(jobKey: string, receiptHandle: string, holder: string, token: string, runningHere: boolean): Promise<Acquired> {
    let last: LedgerItem | undefined;
    for (let round = 0; round < ACQUIRE_ROUNDS; round++) {
      const now = this.now();
      const take = await this.write({
        jobKey,
        condition: {
          op: "or",
          of: [
            { op: "absent" },
            {
              op: "and",
              of: [
                { op: "eq", attr: "state", value: "running" },
                { op: "lt", attr: "lease_expires_at", value: now },
              ],
            },
          ],
        },
        set: { state: "running", holder, lease_token: token, lease_expires_at: now + this.o.leaseMs, receipt_handle: receiptHandle, expires_at: this.ttl(now) },
        add: { runs: 1 },
      });
      if (take.applied) return { kind: "taken", lease: this.leaseFrom(asItem(take.attributes)!, { jobKey, token, holder }), recovered: false };
      const old = asItem(take.old);
      last = old;
      if (old === undefined) continue; // no item, yet the condition failed: it was just deleted (TTL); take again
      // Our own take, applied with its response lost (the SDK or a re-send met it). Only this call
      // holds its token, so the job is still running under it.
      if (old.lease_token === token) return { kind: "taken", lease: this.leaseFrom(old, { jobKey, token, holder }), recovered: true };
      if (old.state === "completed") return { kind: "completed", holder: old.holder, completedAt: old.completed_at, outcome: old.outcome };
      // Running under a live lease: the take's condition failed against this very `now`.
      if (old.holder === holder && !runningHere) {
        // Our own lease, of a take we gave up on (every answer lost): take it over, fenced by its token.
        const over = await this.write({
          jobKey,
          condition: {
            op: "and",
            of: [
              { op: "eq", attr: "state", value: "running" },
              { op: "eq", attr: "lease_token", value: old.lease_token },
            ],
          },
          set: { holder, lease_token: token, lease_expires_at: now + this.o.leaseMs, receipt_handle: receiptHandle, expires_at: this.ttl(now) },
          add: { runs: 1 },
        });
        if (over.applied) return { kind: "taken", lease: this.leaseFrom(asItem(over.attributes)!, { jobKey, token, holder }), recovered: true };
        const met = asItem(over.old);
        last = met;
        if (met?.lease_token === token) return { kind: "taken", lease: this.leaseFrom(met, { jobKey, token, holder }), recovered: true };
        continue;
      }
      // A live lease elsewhere: record this receive's handle in it, fenced by that lease's token.
      const record = await this.write({
        jobKey,
        condition: {
          op: "and",
          of: [
            { op: "eq", attr: "state", value: "running" },
            { op: "eq", attr: "lease_token", value: old.lease_token },
          ],
        },
        set: { receipt_handle: receiptHandle, expires_at: this.ttl(now) },
      });
      if (record.applied) return { kind: "held", holder: old.holder, leaseExpiresAt: old.lease_expires_at, recorded: true };
      // The lease changed under us: completed (delete unrun), or another take: judge again.
      const now2 = asItem(record.old);
      last = now2;
      if (now2?.state === "completed") return { kind: "completed", holder: now2.holder, completedAt: now2.completed_at, outcome: now2.outcome };
    }
    // Still contended after every round: leave the message; it shows again after the queue's visibility.
    return { kind: "held", holder: last?.holder ?? "unknown", leaseExpiresAt: last?.lease_expires_at ?? 0, recorded: false };
  }

  /** The lease as the item holds it: its latest receipt handle and its run count. */
  private leaseFrom(item: LedgerItem, lease: { jobKey: string; token: string; holder: string }): Lease {
    return { ...lease, receiptHandle: item.receipt_handle, runs: item.runs };
  }

  /** The lease's condition: the job still running under this lease token. */
  private fenced(lease: Lease): Condition {
    return {
      op: "and",
      of: [
        { op: "eq", attr: "state", value: "running" },
        { op: "eq", attr: "lease_token", value: lease.token },
      ],
    };
  }

  /**
   * Moves the lease's expiry on, fenced by its token, and reads back the current receipt handle.
   * A token of another means the lease was taken over after it expired: this holder must stop.
   * Its own token on a completed job means the beat raced this holder's own completion.
   * A renewal that applies twice (a lost response) is the same renewal.
   */
  async renew(lease: Lease): Promise<Renewed> {
    const now = this.now();
    const out = await this.write({
      jobKey: lease.jobKey,
      condition: this.fenced(lease),
      set: { lease_expires_at: now + this.o.leaseMs, expires_at: this.ttl(now) },
    });
    if (out.applied) {
      // ALL_NEW: the item as this renewal left it, with the latest handle any receive recorded.
      const item = asItem(out.attributes)!;
      lease.receiptHandle = item.receipt_handle;
      return { kind: "renewed", receiptHandle: item.receipt_handle, leaseExpiresAt: item.lease_expires_at };
    }
    const old = asItem(out.old);
    if (old?.state === "completed" && old.lease_token === lease.token) {
      lease.receiptHandle = old.receipt_handle;
      return { kind: "completed", receiptHandle: old.receipt_handle };
    }
    return { kind: "lost", holder: old?.holder, state: old?.state };
  }

  /**
   * Ends the lease without completing the job (it failed, or the task gives it back): expired at
   * once, so the next receive takes it instead of waiting out the lease. Fenced by the token; a
   * lease already gone is released.
   */
  async release(lease: Lease): Promise<boolean> {
    const now = this.now();
    const out = await this.write({ jobKey: lease.jobKey, condition: this.fenced(lease), set: { lease_expires_at: 0, expires_at: this.ttl(now) } });
    return out.applied;
  }

  /**
   * Records the outcome, fenced by the lease token, and answers with the receipt handle the
   * message is to be deleted with (the latest recorded). Our own completion whose response was
   * lost is found by its token; any other item refuses it: a superseded holder never completes.
   */
  async complete(lease: Lease, outcome: string): Promise<Completed> {
    const now = this.now();
    const out = await this.write({
      jobKey: lease.jobKey,
      condition: this.fenced(lease),
      set: { state: "completed", completed_at: now, outcome, expires_at: this.ttl(now) },
    });
    if (out.applied) {
      const handle = asItem(out.attributes)!.receipt_handle;
      lease.receiptHandle = handle;
      return { kind: "completed", receiptHandle: handle, recovered: false };
    }
    const old = asItem(out.old);
    if (old?.state === "completed" && old.lease_token === lease.token) {
      lease.receiptHandle = old.receipt_handle;
      return { kind: "completed", receiptHandle: old.receipt_handle, recovered: true };
    }
    return { kind: "refused", holder: old?.holder, state: old?.state };
  }
}

/** An in-memory LedgerStore judging the same conditions the table does: the unit and property tests' table. */
export class MemoryLedgerStore implements LedgerStore {
  readonly items = new Map<string, LedgerItem>();

  write(w: LedgerWrite): Promise<ConditionalOutcome> {
    const item = this.items.get(w.jobKey);
    if (!evaluateCondition(w.condition, item)) return Promise.resolve({ applied: false, old: item ? { ...item } : undefined });
    const next = applyWrite(item, w);
    this.items.set(w.jobKey, next);
    return Promise.resolve({ applied: true, attributes: { ...next } });
  }
}
