/**
 * Lambda's SQS event source mapping, played locally (moto's mappings never invoke without
 * Docker). What AWS documents, kept here:
 * - batch size: receive repeatedly (at most 10 per ReceiveMessage) until the batch is full or
 *   the batching window has elapsed; with a window of 0, one receive makes one batch;
 * - maximum concurrency: at most N batches are being invoked at once (5 pollers by default);
 * - ReportBatchItemFailures: delete every record the response does not list; a malformed
 *   response fails the whole batch (settleBatch);
 * - an error or a timeout deletes nothing: the messages come back after the queue's visibility
 *   timeout, and SQS itself moves them to the DLQ after maxReceiveCount receives.
 *
 * One gatherer fills batches in turn and hands each to a free invocation slot. A gatherer per
 * slot would split a batching window's messages between slots, where the window exists to
 * make batches fuller; it also keeps one long poll per queue instead of N.
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import type { InvokeResult } from "./lambda-host";
import { RECEIVE_ALL_ATTRIBUTES, toSqsEvent } from "../../functions/shared/sqs-record";
import type { LocalMapping } from "../provision/topology-types";
import { sleepUnless } from "./clock";

export interface MappingStats {
  /** Batches handed to the function. */
  invocations: number;
  /** Records received and invoked (a redelivered message counts each time). */
  received: number;
  /** Records settled as processed (deleted, or attempted: see deleteFailures). */
  succeeded: number;
  /** Records left on the queue for redelivery. */
  failed: number;
  running: number;
  peakRunning: number;
  /** Sizes of the most recent batches, oldest first (at most BATCH_HISTORY). */
  lastBatchSizes: number[];
  /** Records whose DeleteMessageBatch entry failed: they will come back. */
  deleteFailures: number;
  receiveErrors: number;
  /** The latest receive/delete error or whole-batch failure reason, for the log. */
  lastError?: string;
}

export interface SqsEventSourceOptions {
  sqs: SQSClient;
  /** Long-poll wait of an idle queue; stop() waits at most this long for the poll in flight. Default 1. */
  pollWaitSeconds?: number;
  /** Concurrent batches when the mapping sets no maximum concurrency. Default 5, Lambda's initial pollers. */
  defaultConcurrency?: number;
}

const BATCH_HISTORY = 100;
const RECEIVE_ERROR_BACKOFF_MS = 1000;
/** Between short polls while a batching window still has under a second to run. */
const WINDOW_TAIL_POLL_MS = 100;
/** Pollers Lambda starts an SQS event source with: how many gatherers a backlog may have at once. */
const INITIAL_POLLERS = 5;

/** Which records of a batch to delete, and why the others stay (when the whole batch failed). */
export interface Settlement {
  delete: string[];
  keep: string[];
  reason?: string;
}

/**
 * Lambda's rule for settling a batch. Without ReportBatchItemFailures any success deletes all.
 * With it (AWS, "Implementing partial batch responses"): a null or empty response, or a null or
 * empty `batchItemFailures`, is a complete success; a response that is not an object, a
 * `batchItemFailures` that is not a list, or an entry whose `itemIdentifier` is missing, empty
 * or not a message of this batch makes the whole batch a failure.
 */
export function settleBatch(result: InvokeResult, messageIds: readonly string[], reportBatchItemFailures: boolean): Settlement {
  const all = [...messageIds];
  if (result.kind === "timeout") return { delete: [], keep: all, reason: "function timed out" };
  if (result.kind === "error") return { delete: [], keep: all, reason: `${result.error.name}: ${result.error.message}` };
  if (!reportBatchItemFailures) return { delete: all, keep: [] };

  const response = result.response;
  if (response === null || response === undefined) return { delete: all, keep: [] };
  if (typeof response !== "object" || Array.isArray(response)) return { delete: [], keep: all, reason: "invalid batch response: not an object" };
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === null || failures === undefined) return { delete: all, keep: [] };
  if (!Array.isArray(failures)) return { delete: [], keep: all, reason: "invalid batch response: batchItemFailures is not a list" };

  const inBatch = new Set(all);
  const failed = new Set<string>();
  for (const entry of failures as unknown[]) {
    const id = typeof entry === "object" && entry !== null ? (entry as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    if (typeof id !== "string" || id === "") return { delete: [], keep: all, reason: "invalid batch response: missing or empty itemIdentifier" };
    if (!inBatch.has(id)) return { delete: [], keep: all, reason: `invalid batch response: itemIdentifier ${id} is not in the batch` };
    failed.add(id);
  }
  return { delete: all.filter((id) => !failed.has(id)), keep: all.filter((id) => failed.has(id)) };
}

export class SqsEventSource {
  private readonly concurrency: number;
  private readonly inflight = new Set<Promise<void>>();
  /** Gatherers beyond the first, while a backlog fills batches at once (run). */
  private readonly extraGatherers = new Set<Promise<void>>();
  private readonly counters: MappingStats = {
    invocations: 0,
    received: 0,
    succeeded: 0,
    failed: 0,
    running: 0,
    peakRunning: 0,
    lastBatchSizes: [],
    deleteFailures: 0,
    receiveErrors: 0,
  };
  private loop?: Promise<void>;
  /** Aborted by stop(): cuts pauses short. */
  private stopped = new AbortController();

  constructor(
    private readonly mapping: LocalMapping,
    private readonly invoke: (event: SQSEvent) => Promise<InvokeResult>,
    private readonly opts: SqsEventSourceOptions,
  ) {
    this.concurrency = mapping.maximumConcurrency ?? opts.defaultConcurrency ?? 5;
  }

  /** Starts polling (a disabled mapping never polls, as on AWS). */
  start(): void {
    if (!this.mapping.enabled || this.loop) return;
    this.stopped = new AbortController();
    this.loop = this.run();
  }

  /** Stops polling, lets in-flight batches finish and settle (delete or keep) as usual. */
  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
    await Promise.all([...this.inflight]);
    this.loop = undefined;
  }

  stats(): MappingStats {
    return { ...this.counters, lastBatchSizes: [...this.counters.lastBatchSizes] };
  }

  /**
   * Without a batching window, `concurrency` pollers each receive their own batch and invoke it, as
   * Lambda's pollers do: one receive at a time for the whole mapping would drain a batch-size-1
   * queue at the pace of ReceiveMessage round trips, whatever its maximum concurrency. With a
   * window, one gatherer fills each batch for the window's length and hands it off, so a window
   * gathers what arrives during it into one batch.
   *
   * One gatherer while batches need the window to fill; while they fill at once (a backlog), more
   * gatherers join, up to Lambda's initial five pollers (and the maximum concurrency), as Lambda adds
   * pollers to a queue with a backlog. A joined gatherer leaves at its first batch that needed the
   * window, so sparse traffic is gathered by one, into batches as full as the window makes them.
   */
  private async run(): Promise<void> {
    if (this.mapping.batchingWindowSeconds <= 0) {
      await Promise.all(Array.from({ length: this.concurrency }, () => this.poller()));
      return;
    }
    await this.gatherer(true);
    await Promise.all([...this.extraGatherers]);
  }

  private async gatherer(primary: boolean): Promise<void> {
    while (!this.stopped.signal.aborted) {
      if (this.inflight.size >= this.concurrency) {
        await Promise.race(this.inflight);
        continue;
      }
      const batch = await this.gather();
      // An empty poll: a joined gatherer leaves, the primary one polls on.
      if (batch.length === 0 && !primary) return;
      if (batch.length === 0) continue;
      void this.dispatch(batch);
      const full = batch.length >= this.mapping.batchSize;
      if (!full && !primary) return;
      if (full && this.extraGatherers.size + 1 < Math.min(this.concurrency, INITIAL_POLLERS)) {
        const extra: Promise<void> = this.gatherer(false).finally(() => this.extraGatherers.delete(extra));
        this.extraGatherers.add(extra);
      }
    }
  }

  /** Invokes and settles a batch, tracked in `inflight` so stop() waits for it. */
  private dispatch(batch: Message[]): Promise<void> {
    const done: Promise<void> = this.invokeAndSettle(batch)
      .catch((err: Error) => {
        // Nothing here should throw; if it does, the batch simply comes back after its visibility timeout.
        this.counters.lastError = `settle: ${err.message}`;
      })
      .finally(() => this.inflight.delete(done));
    this.inflight.add(done);
    return done;
  }

  private async poller(): Promise<void> {
    while (!this.stopped.signal.aborted) {
      const batch = await this.gather();
      if (batch.length === 0) continue;
      await this.dispatch(batch);
    }
  }

  /** One batch: up to batchSize records, gathered for at most the batching window after the first arrives. */
  private async gather(): Promise<Message[]> {
    const { batchSize } = this.mapping;
    const windowMs = this.mapping.batchingWindowSeconds * 1000;
    const messages: Message[] = [];
    let windowEnds: number | undefined;
    while (messages.length < batchSize && !this.stopped.signal.aborted) {
      const remaining = windowEnds === undefined ? Infinity : windowEnds - Date.now();
      if (remaining <= 0) break;
      const wait = windowEnds === undefined ? (this.opts.pollWaitSeconds ?? 1) : Math.min(20, Math.floor(remaining / 1000));
      const got = await this.receive(Math.min(10, batchSize - messages.length), wait);
      messages.push(...got);
      if (windowEnds === undefined) {
        // An idle poll came back empty: return, so the run loop can notice stop().
        if (got.length === 0) return [];
        windowEnds = Date.now() + windowMs;
      } else if (got.length === 0 && wait === 0) {
        await sleepUnless(Math.min(WINDOW_TAIL_POLL_MS, remaining), this.stopped.signal);
      }
    }
    return messages;
  }

  private async receive(max: number, waitSeconds: number): Promise<Message[]> {
    try {
      const out = await this.opts.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: this.mapping.queueUrl, MaxNumberOfMessages: max, WaitTimeSeconds: waitSeconds, ...RECEIVE_ALL_ATTRIBUTES }),
      );
      return out.Messages ?? [];
    } catch (err) {
      this.counters.receiveErrors++;
      this.counters.lastError = `receive: ${(err as Error).message}`;
      await sleepUnless(RECEIVE_ERROR_BACKOFF_MS, this.stopped.signal);
      return [];
    }
  }

  private async invokeAndSettle(messages: Message[]): Promise<void> {
    const c = this.counters;
    c.invocations++;
    c.received += messages.length;
    c.lastBatchSizes.push(messages.length);
    if (c.lastBatchSizes.length > BATCH_HISTORY) c.lastBatchSizes.shift();
    c.running++;
    c.peakRunning = Math.max(c.peakRunning, c.running);
    const started = Date.now();
    let result: InvokeResult;
    try {
      result = await this.invoke(toSqsEvent(messages, this.mapping.queueArn));
    } catch (err) {
      // The invoke itself failed (unknown function, host closed): Lambda would retry later too.
      const e = err as Error;
      result = { kind: "error", error: { name: e.name || "Error", message: e.message }, durationMs: Date.now() - started };
    } finally {
      c.running--;
    }
    const ids = messages.map((m) => m.MessageId ?? "");
    const settlement = settleBatch(result, ids, this.mapping.reportBatchItemFailures);
    c.succeeded += settlement.delete.length;
    c.failed += settlement.keep.length;
    if (settlement.reason) c.lastError = settlement.reason;
    const toDelete = new Set(settlement.delete);
    await this.deleteMessages(messages.filter((m) => toDelete.has(m.MessageId ?? "")));
  }

  /** DeleteMessageBatch in chunks of 10; a failure is counted, not thrown (the message just comes back). */
  private async deleteMessages(messages: Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      try {
        const entries = chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle }));
        const out = await this.opts.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: this.mapping.queueUrl, Entries: entries }));
        if (out.Failed?.length) {
          this.counters.deleteFailures += out.Failed.length;
          this.counters.lastError = `delete: ${out.Failed.map((f) => f.Code ?? f.Message).join(", ")}`;
        }
      } catch (err) {
        this.counters.deleteFailures += chunk.length;
        this.counters.lastError = `delete: ${(err as Error).message}`;
      }
    }
  }
}
