import { randomUUID } from "node:crypto";
import { DeleteCommand, type DeleteCommandInput, type DynamoDBDocumentClient, UpdateCommand, type UpdateCommandInput } from "@aws-sdk/lib-dynamodb";
import { type ConditionalOutcome, conditionalWrite } from "../shared/conditional-write";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";
import { LEDGER_RETENTION_SECONDS } from "../worker/ledger";

/**
 * The gateway's key claims (docs/parts/gpu.md): one item per window `Idempotency-Key` in the key
 * table every GPU instance of the stack shares, so a window is sent to a model once across the whole
 * fleet however often SQS delivers it. Every write is one conditional UpdateItem or DeleteItem with
 * ALL_OLD, re-sent after a lost answer and resolved by the claim's own token, as the worker's job
 * ledger does (`functions/worker/ledger.ts`). Conditions are data (`Condition`): the table gets them
 * as expressions (`writeInput`), and `evaluateCondition` judges the very same data in the tests.
 */

export const KEY_ATTRIBUTES = {
  key: "window_key",
  state: "state",
  holder: "holder",
  claimToken: "claim_token",
  leaseExpiresAt: "lease_expires_at",
  response: "response",
  responseStatus: "response_status",
  doneAt: "done_at",
  expiresAt: "expires_at",
} as const;

export type KeyState = "claimed" | "done";

/** An item of the key table, as the DocumentClient reads it. */
export interface KeyItem {
  window_key: string;
  state: KeyState;
  /** The instance that took the current (or last) claim: its EC2 instance id. */
  holder: string;
  /** Random per claim: the fence of every later write of that claim. */
  claim_token: string;
  /** Epoch ms; a claim past this may be taken by another instance (its holder died mid-window). */
  lease_expires_at: number;
  /** The model's answer, when it fits `MAX_STORED_RESPONSE_BYTES`: the repeat answer of a done key. */
  response?: string;
  response_status?: number;
  /** Epoch ms. */
  done_at?: number;
  /** Epoch seconds: the table's TTL attribute. */
  expires_at: number;
}

/**
 * How long an item outlives its last write: as long as any copy of its window can come back through
 * SQS (DLQ retention plus one redrive), the argument of the worker ledger's retention.
 */
export const KEY_RETENTION_SECONDS = LEDGER_RETENTION_SECONDS;

/** A DynamoDB item holds at most 400 KB; a window's answer larger than this is not kept (the repeat answer is then empty). */
export const MAX_STORED_RESPONSE_BYTES = 32 * 1024;

/** A condition on the item before the write; `absent` holds when there is no item. */
export type Condition =
  | { op: "absent" }
  | { op: "eq"; attr: keyof KeyItem; value: string | number }
  | { op: "lt"; attr: keyof KeyItem; value: number }
  | { op: "and" | "or"; of: Condition[] };

/** One conditional write: an UpdateItem (SET, REMOVE) or a DeleteItem. */
export type KeyWrite =
  | { kind: "update"; key: string; condition: Condition; set: Partial<KeyItem>; remove?: (keyof KeyItem)[] }
  | { kind: "delete"; key: string; condition: Condition };

/** Pure: whether `condition` holds for `item` (undefined: no item), as DynamoDB judges it. */
export function evaluateCondition(condition: Condition, item: KeyItem | undefined): boolean {
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

/** Pure: the item after an applied write (undefined: deleted). UpdateItem creates a missing item. */
export function applyWrite(item: KeyItem | undefined, write: KeyWrite): KeyItem | undefined {
  if (write.kind === "delete") return undefined;
  const next: Record<string, unknown> = { ...(item ?? {}), window_key: write.key, ...write.set };
  for (const attr of write.remove ?? []) delete next[attr];
  return next as unknown as KeyItem;
}

/** Pure: the request a write sends. Names and values are placeholders (`state` is a reserved word). */
export function writeInput(tableName: string, write: KeyWrite): UpdateCommandInput | DeleteCommandInput {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (attr: string) => {
    names[`#${attr}`] = attr;
    return `#${attr}`;
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
        return `attribute_not_exists(${name(KEY_ATTRIBUTES.key)})`;
      case "eq":
        return `${name(c.attr)} = ${value(c.value)}`;
      case "lt":
        return `${name(c.attr)} < ${value(c.value)}`;
      case "and":
      case "or":
        return `(${c.of.map(expr).join(` ${c.op.toUpperCase()} `)})`;
    }
  };
  const Key = { [KEY_ATTRIBUTES.key]: write.key };
  if (write.kind === "delete") {
    const ConditionExpression = expr(write.condition);
    return { TableName: tableName, Key, ConditionExpression, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
  }
  // An attribute set to undefined is left out (the DocumentClient would reject it).
  const sets = Object.entries(write.set)
    .filter(([, v]) => v !== undefined)
    .map(([attr, v]) => `${name(attr)} = ${value(v)}`);
  const removes = (write.remove ?? []).map((attr) => name(attr));
  const ConditionExpression = expr(write.condition);
  return {
    TableName: tableName,
    Key,
    UpdateExpression: [sets.length > 0 ? `SET ${sets.join(", ")}` : "", removes.length > 0 ? `REMOVE ${removes.join(", ")}` : ""].filter(Boolean).join(" "),
    ConditionExpression,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** Where the claims' writes go; answers like `conditionalWrite` (any error but a failed condition is thrown). */
export interface KeyStore {
  write(write: KeyWrite): Promise<ConditionalOutcome>;
}

/** The DynamoDB table through the DocumentClient, ALL_OLD on a failed condition. */
export function dynamoKeyStore(db: DynamoDBDocumentClient, tableName: string): KeyStore {
  return {
    write: (w) => {
      const input = writeInput(tableName, w);
      return conditionalWrite(db, w.kind === "delete" ? new DeleteCommand(input as DeleteCommandInput) : new UpdateCommand(input as UpdateCommandInput));
    },
  };
}

/** The claim condition: no item, or a claim whose lease has run out at `now` (its holder died mid-window). */
export function claimCondition(now: number): Condition {
  return {
    op: "or",
    of: [
      { op: "absent" },
      {
        op: "and",
        of: [
          { op: "eq", attr: "state", value: "claimed" },
          { op: "lt", attr: "lease_expires_at", value: now },
        ],
      },
    ],
  };
}

/** The fence of a claim's later writes: the item still carries its token. */
export function fencedBy(token: string): Condition {
  return { op: "eq", attr: "claim_token", value: token };
}

/** What the item a failed claim met says. */
export type ClaimDecision =
  /** Our own claim, applied with its answer lost (a re-send met it): the claim is ours. */
  | { kind: "ours" }
  /** The window was answered earlier: the repeat answer, the model not reached. */
  | { kind: "done"; item: KeyItem }
  /** A live claim; `mine` when its holder is this instance (a claim of ours abandoned after its every answer was lost, or a gateway restarted mid-window). */
  | { kind: "held"; item: KeyItem; mine: boolean }
  /** No item, yet the condition failed: it was deleted in between (a release); claim again. */
  | { kind: "again" };

/** Pure: the decision on a claim whose condition failed against `old`. */
export function judgeClaim(old: KeyItem | undefined, token: string, holder: string): ClaimDecision {
  if (old === undefined) return { kind: "again" };
  if (old.claim_token === token) return { kind: "ours" };
  if (old.state === "done") return { kind: "done", item: old };
  if (old.state === "claimed") return { kind: "held", item: old, mine: old.holder === holder };
  // An item of no state we write: never ours to overwrite.
  return { kind: "held", item: old, mine: false };
}

/** A claim this gateway holds. */
export interface Claim {
  key: string;
  token: string;
}

export type ClaimResult =
  | { kind: "claimed"; claim: Claim; recovered: boolean }
  | { kind: "done"; response: string | undefined; responseStatus: number | undefined; holder: string }
  | { kind: "held"; holder: string; leaseExpiresAt: number };

export type DoneResult = { kind: "done"; recovered: boolean; stored: boolean } | { kind: "refused"; holder: string | undefined; state: KeyState | undefined };
export type ReleaseResult = { kind: "released" } | { kind: "lost"; holder: string | undefined; state: KeyState | undefined };

export interface KeyClaimsOptions {
  store: KeyStore;
  /** This instance's id: the `holder` of its claims. */
  holder: string;
  leaseMs: number;
  now?: () => number;
  newToken?: () => string;
  resend?: ResendPolicy;
}

/** Rounds of claim-or-judge on one request before it is answered as held elsewhere. */
const CLAIM_ROUNDS = 3;

const asItem = (x: Record<string, unknown> | undefined): KeyItem | undefined => x as KeyItem | undefined;

export class KeyClaims {
  private readonly now: () => number;
  private readonly newToken: () => string;
  private readonly resend: ResendPolicy;

  constructor(private readonly o: KeyClaimsOptions) {
    this.now = o.now ?? Date.now;
    this.newToken = o.newToken ?? randomUUID;
    this.resend = o.resend ?? DEFAULT_RESEND;
  }

  private ttl(now: number): number {
    return Math.floor(now / 1000) + KEY_RETENTION_SECONDS;
  }

  private write(w: KeyWrite): Promise<ConditionalOutcome> {
    return withResends(() => this.o.store.write(w), this.resend);
  }

  /**
   * Claims `key` for one window, or says why not. The caller answers only one request per key at a
   * time on this instance, so a live claim naming this instance is one it abandoned (every answer of
   * its write lost, or the gateway restarted mid-window): it is taken over, fenced by its token,
   * instead of answering 409 to every delivery until the lease runs out.
   */
  async claim(key: string): Promise<ClaimResult> {
    const holder = this.o.holder;
    const token = this.newToken();
    let last: KeyItem | undefined;
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const now = this.now();
      const set = { state: "claimed", holder, claim_token: token, lease_expires_at: now + this.o.leaseMs, expires_at: this.ttl(now) } as const;
      const take = await this.write({ kind: "update", key, condition: claimCondition(now), set });
      if (take.applied) return { kind: "claimed", claim: { key, token }, recovered: false };
      const old = asItem(take.old);
      last = old ?? last;
      const decision = judgeClaim(old, token, holder);
      if (decision.kind === "ours") return { kind: "claimed", claim: { key, token }, recovered: true };
      if (decision.kind === "done") return doneResult(decision.item);
      if (decision.kind === "again") continue;
      if (!decision.mine) return { kind: "held", holder: decision.item.holder, leaseExpiresAt: decision.item.lease_expires_at };
      const over = await this.write({
        kind: "update",
        key,
        condition: { op: "and", of: [{ op: "eq", attr: "state", value: "claimed" }, fencedBy(decision.item.claim_token)] },
        set,
      });
      if (over.applied) return { kind: "claimed", claim: { key, token }, recovered: true };
      const met = asItem(over.old);
      last = met ?? last;
      const again = judgeClaim(met, token, holder);
      if (again.kind === "ours") return { kind: "claimed", claim: { key, token }, recovered: true };
      if (again.kind === "done") return doneResult(again.item);
    }
    return { kind: "held", holder: last?.holder ?? "unknown", leaseExpiresAt: last?.lease_expires_at ?? 0 };
  }

  /** Moves the claim's lease on (a window that waited for a model slot), fenced by its token; false: the claim was taken over. */
  async extend(claim: Claim): Promise<boolean> {
    const now = this.now();
    const out = await this.write({
      kind: "update",
      key: claim.key,
      condition: { op: "and", of: [{ op: "eq", attr: "state", value: "claimed" }, fencedBy(claim.token)] },
      set: { lease_expires_at: now + this.o.leaseMs, expires_at: this.ttl(now) },
    });
    return out.applied;
  }

  /**
   * Records the model's answer, fenced by the claim's token. The same write applied twice (a lost
   * answer) writes the same values; an item of another token refuses it (the lease ran out and
   * another instance took the key over).
   */
  async markDone(claim: Claim, responseStatus: number, response: string): Promise<DoneResult> {
    const now = this.now();
    const stored = Buffer.byteLength(response, "utf8") <= MAX_STORED_RESPONSE_BYTES;
    const out = await this.write({
      kind: "update",
      key: claim.key,
      condition: fencedBy(claim.token),
      set: { state: "done", response_status: responseStatus, done_at: now, expires_at: this.ttl(now), ...(stored ? { response } : {}) },
      // A previous done write of this claim cannot have stored another answer; the attribute goes when this one is too large.
      remove: stored ? [] : ["response"],
    });
    if (out.applied) return { kind: "done", recovered: false, stored };
    const old = asItem(out.old);
    if (old?.state === "done" && old.claim_token === claim.token) return { kind: "done", recovered: true, stored };
    return { kind: "refused", holder: old?.holder, state: old?.state };
  }

  /**
   * Gives the key back after a model failure, so the window's next delivery (on any instance) can
   * run it at once: DeleteItem fenced by the token. No item is a release already done (our own
   * delete whose answer was lost).
   */
  async release(claim: Claim): Promise<ReleaseResult> {
    const out = await this.write({ kind: "delete", key: claim.key, condition: fencedBy(claim.token) });
    if (out.applied) return { kind: "released" };
    const old = asItem(out.old);
    if (old === undefined) return { kind: "released" };
    return { kind: "lost", holder: old.holder, state: old.state };
  }
}

function doneResult(item: KeyItem): ClaimResult {
  return { kind: "done", response: item.response, responseStatus: item.response_status, holder: item.holder };
}

/** An in-memory KeyStore judging the same conditions the table does (tests). */
export class MemoryKeyStore implements KeyStore {
  readonly items = new Map<string, KeyItem>();

  write(w: KeyWrite): Promise<ConditionalOutcome> {
    const item = this.items.get(w.key);
    if (!evaluateCondition(w.condition, item)) return Promise.resolve({ applied: false, old: item ? { ...item } : undefined });
    const next = applyWrite(item, w);
    if (next === undefined) this.items.delete(w.key);
    else this.items.set(w.key, next);
    return Promise.resolve({ applied: true, attributes: next ? { ...next } : undefined });
  }
}
