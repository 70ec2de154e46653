/**
 * Where each consumer's effects are observable locally, read once the run has settled, and the
 * facts the ledger judges (ledger.ts) built from them:
 * - windows (ingest-window, ingest-dlq): what the GPU's model processed (behind the real gateway);
 * - retraining: the RunTask calls that reached moto (the fault proxy saw them forwarded), by the
 *   model_name tag, and by clientToken (within ECS's 24-hour window one token starts one task), and
 *   the tasks the ECS simulator saw;
 * - fleet termination: `job_marked_complete` lines, the JobDuration EMF lines (each job has its own
 *   duration, so a metric names its job) and the jobs table;
 * - housekeeping and pool refill triggers: the function acknowledged the message (records deleted);
 * - malformed pool adverts: the claimers' `advert_discarded` lines;
 * - worker: `job_succeeded` lines in every worker task's log; runs (started or leased) per job from
 *   the same logs, and the worker's job ledger table when the stack has one (WORKER_LEDGER);
 * - everywhere: copies of a message's body in a quarantine (with a reason), in a DLQ nothing
 *   consumes, or still on a consumed queue.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { type AttributeValue, paginateScan } from "@aws-sdk/client-dynamodb";
import { type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { LocalPlatform } from "../platform";
import type { LocalQueue } from "../provision/topology-types";
import { QUEUE_ROLES } from "../../policy/contract";
import { type LogLine, readLogLines } from "../scenarios/logs";
import type { CrashRecord, ForwardedCall, FaultRecord } from "./fault-proxy";
import { type CrashHits, everyReceiveFaulted, everyReceiveFaultedBeforeDeadLetter, type LockItem, type MessageFacts, mentions } from "./ledger";
import { WORKER_LEDGER, type WorkerLedgerItem } from "./worker-ledger";
import { SOURCE_MESSAGE_ID_ATTRIBUTE } from "../../functions/retraining/defer";
import type { Receive } from "./receives";
import type { ChaosMessage, Consumer } from "./traffic";

export interface SentMessage extends ChaosMessage {
  messageId: string;
}

/** Where copies of the run's bodies sit at the end. */
export interface QueueCopies {
  quarantined: Set<string>;
  /** Body → the message id of its copy in a DLQ nothing consumes. */
  inDlq: Map<string, string>;
  /** A DLQ copy's id → the id of the message its consumer dead-lettered it from (stamped on the copy). */
  deadLetteredFrom: Map<string, string>;
  /** Bodies still visible on a consumed queue. */
  visible: Set<string>;
  /** Messages in flight or delayed on each consumed queue (they cannot be read without receiving them). */
  hidden: Map<string, number>;
}

/** Reads every queue of the program: dead-letter and quarantine queues, and what consumed queues still hold. */
export async function readQueues(platform: LocalPlatform): Promise<QueueCopies> {
  const consumed = new Set(platform.topology.mappings.map((m) => m.queueArn));
  const worker = platform.topology.services.length > 0 ? platform.queue("worker").arn : undefined;
  if (worker) consumed.add(worker);
  // A DLQ that a function consumes (ingest-dlq parks windows until the GPU is back) is a queue
  // like any other; a queue nobody consumes (the pool's class queues are read by the claimers) is not a DLQ unless tagged one.
  const deadEnd = (q: LocalQueue) => !consumed.has(q.arn) && (q.role === QUEUE_ROLES.dlq || q.role === QUEUE_ROLES.quarantine);
  const copies: QueueCopies = { quarantined: new Set(), inDlq: new Map(), deadLetteredFrom: new Map(), visible: new Set(), hidden: new Map() };
  for (const q of platform.topology.queues) {
    const before = await platform.depth(q);
    const messages = await receiveEverything(platform, q);
    for (const m of messages) {
      const body = m.Body ?? "";
      if (m.MessageAttributes?.["quarantine-reason"] !== undefined) copies.quarantined.add(body);
      else if (deadEnd(q)) {
        copies.inDlq.set(body, m.MessageId ?? "");
        const source = m.MessageAttributes?.[SOURCE_MESSAGE_ID_ATTRIBUTE]?.StringValue;
        if (source !== undefined) copies.deadLetteredFrom.set(m.MessageId ?? "", source);
      } else copies.visible.add(body);
    }
    if (consumed.has(q.arn)) copies.hidden.set(q.logicalName, before.inFlight + before.delayed);
  }
  return copies;
}

/**
 * Every visible message of a queue, once each. The scenarios' peekAll receives with a zero
 * visibility timeout, which on a queue of more than ten messages hands back the same ten every
 * time; here each is hidden for a while once read, so the next receive brings the next ones. Only
 * for the end of the run, with every consumer stopped.
 */
async function receiveEverything(platform: LocalPlatform, queue: LocalQueue): Promise<Message[]> {
  const seen = new Map<string, Message>();
  for (let empty = 0; empty < 2; ) {
    const out = await platform.aws.sqsDirect.send(
      new ReceiveMessageCommand({
        QueueUrl: queue.url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 600,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    const fresh = (out.Messages ?? []).filter((m) => !seen.has(m.MessageId ?? ""));
    for (const m of fresh) seen.set(m.MessageId ?? "", m);
    empty = fresh.length === 0 ? empty + 1 : 0;
  }
  return [...seen.values()];
}

/** What was observed of each consumer's effects, by message key. */
export interface Effects {
  /** Key → count. */
  effects: Map<string, number>;
  duplicates: Map<string, number>;
  incomplete: Map<string, string>;
  /** Keys counted as quarantined without a queue copy (discarded pool adverts). */
  discarded: Set<string>;
  details: Record<string, unknown>;
}

const emptyEffects = (): Effects => ({ effects: new Map(), duplicates: new Map(), incomplete: new Map(), discarded: new Set(), details: {} });
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const total = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/**
 * Windows processed by the GPU's model (behind the real gateway, which answers a repeated key
 * without reaching the model), per window: any processed more than once is a duplicate.
 */
export function windowEffects(received: unknown[]): Effects {
  const e = emptyEffects();
  for (const body of received) {
    const w = body as { sessionId?: unknown; windowIndex?: unknown };
    if (typeof w.sessionId !== "string" || typeof w.windowIndex !== "number") continue;
    bump(e.effects, `${w.sessionId}/${w.windowIndex}`);
  }
  for (const [k, n] of e.effects) if (n > 1) e.duplicates.set(k, n - 1);
  e.details = { deliveries: received.length };
  return e;
}

/** RunTask per model: calls that reached moto, distinct client tokens among them, tasks seen. */
export function retrainingEffects(runTasks: readonly ForwardedCall[], taskModels: readonly string[]): Effects {
  const e = emptyEffects();
  const calls = new Map<string, number>();
  const tokens = new Map<string, Set<string>>();
  for (const call of runTasks) {
    let input: { tags?: Array<{ key?: string; value?: string }>; clientToken?: string };
    try {
      input = JSON.parse(call.request) as typeof input;
    } catch {
      continue;
    }
    const model = input.tags?.find((t) => t.key === "model_name")?.value;
    if (model === undefined || call.status >= 300) continue;
    bump(calls, model);
    tokens.set(model, (tokens.get(model) ?? new Set()).add(input.clientToken ?? `(none: call ${calls.get(model)})`));
  }
  const tasks = new Map<string, number>();
  for (const m of taskModels) bump(tasks, m);
  for (const model of new Set([...calls.keys(), ...tasks.keys()])) {
    const distinct = tokens.get(model)?.size ?? 0;
    e.effects.set(model, Math.max(distinct, tasks.get(model) ?? 0));
    // ECS starts one task per client token within 24 hours; moto ignores the token, so extra
    // tasks from a repeated token are moto's, not the launcher's (reported in details).
    if (distinct > 1) e.duplicates.set(model, distinct - 1);
  }
  e.details = {
    runTaskCallsReachingEcs: total(calls),
    distinctClientTokens: [...tokens.values()].reduce((n, s) => n + s.size, 0),
    tasksSeen: total(tasks),
    jobsWithSeveralCalls: [...calls.values()].filter((n) => n > 1).length,
  };
  return e;
}

/** Completions (log) and JobDuration metrics (EMF) per job; the table says whether it completed at all. */
export function fleetEffects(lines: readonly LogLine[], durationToJob: ReadonlyMap<number, string>, doneInTable: ReadonlySet<string>): Effects {
  const e = emptyEffects();
  const completions = new Map<string, number>();
  const metrics = new Map<string, number>();
  for (const l of lines) {
    if (l.step === "job_marked_complete" && typeof l.job_id === "string") bump(completions, l.job_id);
    const duration = l.JobDuration;
    if (l._aws !== undefined && typeof duration === "number") {
      const job = durationToJob.get(duration);
      if (job !== undefined) bump(metrics, job);
    }
  }
  for (const job of new Set([...completions.keys(), ...metrics.keys(), ...doneInTable])) {
    const c = completions.get(job) ?? 0;
    const m = metrics.get(job) ?? 0;
    e.effects.set(job, Math.max(1, c));
    const extra = Math.max(0, c - 1) + Math.max(0, m - 1);
    if (extra > 0) e.duplicates.set(job, extra);
    if (m === 0)
      e.incomplete.set(
        job,
        c === 0 ? "completed in the jobs table, but no delivery logged the completion or emitted its metrics" : "completed without its JobDuration metric",
      );
  }
  e.details = {
    completionsLogged: total(completions),
    jobDurationMetrics: total(metrics),
    completedInTable: doneInTable.size,
  };
  return e;
}

/** Acknowledged by the consumer at least once (its effects are sweeps and refills, idempotent by design). */
export function acknowledgedEffects(receives: readonly Receive[], fn: string, keyOfBody: ReadonlyMap<string, string>): Effects {
  const e = emptyEffects();
  for (const r of receives) {
    if (r.fn !== fn || !r.acknowledged) continue;
    const key = keyOfBody.get(r.body);
    if (key !== undefined && !e.effects.has(key)) e.effects.set(key, 1);
  }
  return e;
}

/**
 * Completions per worker job: a job run again after an interruption is fine, completing it twice is
 * a duplicate. A job the ledger table shows `completed` with no `job_succeeded` line is completed
 * once: its task was killed between the completion write and the line (`--crash-rate`), and the
 * redelivery found it completed (`job_already_completed`) and deleted it unrun.
 */
export function workerEffects(lines: readonly LogLine[], ledger: readonly WorkerLedgerItem[] = []): Effects {
  const e = emptyEffects();
  for (const l of lines) if (l.step === WORKER_LEDGER.steps.succeeded && typeof l.job_id === "string") bump(e.effects, l.job_id);
  for (const [k, n] of e.effects) if (n > 1) e.duplicates.set(k, n - 1);
  let silent = 0;
  for (const item of ledger) {
    const job = WORKER_LEDGER.jobIdOf(item.jobKey);
    if (item.state !== "completed" || e.effects.has(job)) continue;
    e.effects.set(job, 1);
    silent += 1;
  }
  e.details = {
    completions: total(e.effects),
    completedWithoutSuccessLine: silent,
    jobsStarted: lines.filter((l) => l.step === WORKER_LEDGER.steps.started).length,
  };
  return e;
}

/** Every item of the worker's job ledger, or undefined when the stack has no such table. */
export async function workerLedger(platform: LocalPlatform): Promise<WorkerLedgerItem[] | undefined> {
  const table = platform.topology.tables.find((t) => t.logicalName === WORKER_LEDGER.table);
  if (!table) return undefined;
  const items = (await scanItems(platform, table.name)).filter((item) => item[WORKER_LEDGER.key]?.S !== undefined);
  return items.map((item) => ({
    jobKey: item[WORKER_LEDGER.key]?.S ?? "",
    state: item.state?.S ?? "",
    ...(item.runs?.N !== undefined ? { runs: Number(item.runs.N) } : {}),
    ...(item.holder?.S !== undefined ? { holder: item.holder.S } : {}),
    ...(item.lease_expires_at?.N !== undefined ? { leaseExpiresAt: Number(item.lease_expires_at.N) } : {}),
  }));
}

/** Every item of a table, read consistently. */
export async function scanItems(platform: LocalPlatform, tableName: string): Promise<Array<Record<string, AttributeValue>>> {
  const items: Array<Record<string, AttributeValue>> = [];
  for await (const page of paginateScan({ client: platform.aws.dynamodb }, { TableName: tableName, ConsistentRead: true })) items.push(...(page.Items ?? []));
  return items;
}

/** Every worker task's log lines (the service's tasks write `logs/worker-<n>.log`). */
export function workerLogLines(workDir: string): LogLine[] {
  const dir = path.join(workDir, "logs");
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => /^worker-\d+\.log$/.test(f))
    .flatMap((f) => readLogLines(path.join(dir, f)));
}

/** Jobs whose status in the table is no longer `running` (completed, failed…), among `jobs`. */
export async function jobsDoneInTable(platform: LocalPlatform, jobs: ReadonlySet<string>): Promise<Set<string>> {
  const table = platform.topology.tables.find((t) => t.logicalName === "fleet-jobs");
  const items = table ? await scanItems(platform, table.name) : [];
  const done = items.filter((item) => item.status?.S !== undefined && item.status.S !== "running").map((item) => item.job_id?.S ?? "");
  return new Set(done.filter((id) => jobs.has(id)));
}

/** Every lock in the claim table. */
export async function claimLocks(platform: LocalPlatform, tableName: string): Promise<LockItem[]> {
  return (await scanItems(platform, tableName)).flatMap((item) => {
    const instanceId = item.instance_id?.S;
    const owner = item.owner?.S;
    return instanceId === undefined || owner === undefined ? [] : [{ instanceId, owner, expiresAtSeconds: Number(item.expires_at?.N ?? 0) }];
  });
}

/**
 * The facts of one consumer's messages. Messages with no outcome otherwise are counted as
 * remaining while the consumer's queues still hide that many in flight or delayed (they cannot be
 * read by body without receiving them).
 */
export function factsFor(
  consumer: Consumer,
  sent: readonly SentMessage[],
  effects: Effects,
  copies: QueueCopies,
  receives: readonly Receive[],
  faults: readonly FaultRecord[],
  hiddenSlots: number,
  crash: { kills: readonly CrashRecord[]; hits: ReadonlyMap<string, CrashHits>; dlqExplained?: ReadonlySet<string> } = { kills: [], hits: new Map() },
  /** Message ids SQS deleted for age (MotoServer.expired()). */
  expiredIds: ReadonlySet<string> = new Set(),
): MessageFacts[] {
  let slots = hiddenSlots;
  // The DLQ rule for one copy: its own receives, or, for a copy its consumer dead-lettered, its source's.
  const dlqCopyFaulted = (copyId: string, key: string) => {
    const source = copies.deadLetteredFrom.get(copyId);
    return source === undefined
      ? everyReceiveFaulted(copyId, receives, faults, [key], crash.kills)
      : everyReceiveFaultedBeforeDeadLetter(source, receives, faults, [key], crash.kills);
  };
  return sent
    .filter((m) => m.consumer === consumer)
    .map((m) => {
      const dlqId = copies.inDlq.get(m.body);
      const quarantined = copies.quarantined.has(m.body) || effects.discarded.has(m.key);
      const effectCount = m.wellFormed || !quarantined ? (effects.effects.get(m.key) ?? 0) : 0;
      const facts: MessageFacts = {
        consumer,
        key: m.key,
        wellFormed: m.wellFormed,
        effects: effectCount,
        duplicates: effects.duplicates.get(m.key) ?? 0,
        ...(effects.incomplete.has(m.key) ? { incomplete: effects.incomplete.get(m.key) } : {}),
        quarantined,
        inDlq: dlqId !== undefined,
        everyReceiveFaulted: dlqId !== undefined && (crash.dlqExplained?.has(m.key) === true || dlqCopyFaulted(dlqId, m.key)),
        remaining: copies.visible.has(m.body),
        ...(expiredIds.has(m.messageId) ? { expired: true } : {}),
      };
      const hits = crash.hits.get(m.key);
      if (hits !== undefined) facts.crashHits = hits;
      // Only for a message with extras (a scan of every fault's request per message would be slow).
      if (facts.duplicates > 0) facts.faultTouched = faults.some((f) => f.kind !== "latency" && mentions(f, [m.key, m.messageId]));
      const settled =
        (facts.wellFormed && facts.effects > 0) || (!facts.wellFormed && facts.quarantined) || facts.inDlq || facts.remaining || facts.expired === true;
      if (!settled && slots > 0) {
        slots -= 1;
        facts.remaining = true;
      }
      return facts;
    });
}
