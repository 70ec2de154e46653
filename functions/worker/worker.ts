import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";
import type { WorkerConfig } from "./config";
import type { HandlerRegistry } from "./handlers";
import { heartbeatExtensionSeconds, initialVisibilitySeconds, parseJob, type Job } from "./job";
import type { TaskProtection } from "./protection";
import { asSqsRecord, queueArnFromUrl, receiveCount } from "./sqs-record";

export interface WorkerDeps {
  sqs: SQSClient;
  config: WorkerConfig;
  handlers: HandlerRegistry;
  protection: TaskProtection;
  logger: StepLogger;
  metrics: MetricsSink;
  /** How a finished job's DeleteMessage is re-sent after the SDK gave up; tests pass an instant sleep. */
  resend?: ResendPolicy;
}

/** The agent gets this long to answer the shutdown release: the stop timeout leaves no room for its usual 5 s. */
const SHUTDOWN_RELEASE_TIMEOUT_MS = 2000;
/** Pause after a failed poll (the SDK has already retried), so a broken queue can't spin the loop. */
const RECEIVE_FAILURE_PAUSE_MS = 1000;

class ShutdownAbort extends Error {
  constructor() {
    super("task is stopping: job given back to the queue");
    this.name = "ShutdownAbort";
  }
}

interface Running {
  message: Message;
  abort: AbortController;
  done: Promise<void>;
  /**
   * The give-back, once begun (by the aborted job or by shutdown, whichever comes first): the
   * message belongs to the queue again, and the job path must not touch it after.
   */
  givenBack: Promise<void> | undefined;
  /** The visibility heartbeat; kept here so a give-back can stop it even if the handler runs on. */
  heartbeat: NodeJS.Timeout | undefined;
}

export interface WorkerStats {
  received: number;
  succeeded: number;
  failed: number;
  quarantined: number;
  returned: number;
}

/**
 * The long-running queue worker: long-polls the work queue, runs up to N jobs at once, holds
 * task scale-in protection while any job runs, extends visibility by heartbeat, leaves an
 * unprotected idle window after going idle, and on stop() gives back what it cannot finish.
 */
export class Worker {
  readonly stats: WorkerStats = { received: 0, succeeded: 0, failed: 0, quarantined: 0, returned: 0 };
  private stopping = false;
  private readonly running = new Set<Running>();
  private stopRequestedAt: number | undefined;
  private wakeUp: (() => void) | undefined;
  private idleUntil = 0;
  /** A job (not just a quarantined message) ran since the task was last idle. */
  private workedSinceIdle = false;
  private metricsAdded = 0;
  private metricsPublished = 0;
  private readonly queueArn: string;
  private readonly d: WorkerDeps;

  constructor(deps: WorkerDeps) {
    this.queueArn = queueArnFromUrl(deps.config.workQueueUrl);
    const counted: MetricsSink = {
      addMetric: (name, unit, value) => {
        this.metricsAdded += 1;
        return deps.metrics.addMetric(name, unit, value);
      },
      publishStoredMetrics: () => deps.metrics.publishStoredMetrics(),
    };
    this.d = { ...deps, metrics: counted };
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Runs until stop() and the shutdown that follows are done. Never rejects on a job's failure. */
  async run(): Promise<void> {
    const c = this.d.config;
    await this.d.protection.reconcile();
    logStep(this.d.logger, "info", "worker_started", {
      concurrency: c.concurrency,
      idle_window_ms: c.idleWindowMs,
      task_protection: this.d.protection.enabled,
      job_types: [...this.d.handlers.keys()],
    });
    while (!this.stopping) {
      const waitMs = this.waitBeforeReceive();
      if (waitMs > 0) {
        await this.sleep(waitMs);
        continue;
      }
      const messages = await this.receive(Math.min(10, c.concurrency - this.running.size));
      if (this.stopping) {
        // The poll was in flight at SIGTERM. It is never aborted: SQS may already have handed
        // its messages to the abandoned connection (moto does), and they would then stay
        // invisible and spend a receive. Whatever it brings goes straight back.
        await this.returnUnstarted(messages, "shutdown");
        break;
      }
      // A poll that was in flight when the task went idle may still bring messages. They are
      // started, not given back: every give-back spends one of maxReceiveCount's receives, and
      // with several tasks going idle at once a valid job would bounce into the DLQ. The idle
      // window then follows those jobs instead.
      if (messages.length > 0 && this.inIdleWindow()) logStep(this.d.logger, "info", "idle_window_deferred", { messages: messages.length, message_ids: messages.map((m) => m.MessageId) });
      for (const m of messages) this.start(m);
    }
    await this.shutdown();
  }

  /** Begins shutdown: stop receiving, let jobs finish within the grace period, give back the rest. */
  stop(reason = "stop"): void {
    if (this.stopping) return;
    this.stopping = true;
    this.stopRequestedAt = Date.now();
    logStep(this.d.logger, "info", "shutdown_started", { reason, in_flight: this.running.size });
    this.wakeUp?.();
  }

  private inIdleWindow(now = Date.now()): boolean {
    return this.running.size === 0 && now < this.idleUntil;
  }

  private async returnUnstarted(messages: Message[], why: "shutdown"): Promise<void> {
    if (messages.length === 0) return;
    const results = await Promise.all(messages.map((m) => this.changeVisibility(m, 0, "give_back")));
    logStep(this.d.logger, "info", `${why}_returned`, {
      messages: messages.length,
      visible_again: results.filter(Boolean).length,
      message_ids: messages.map((m) => m.MessageId),
    });
  }

  /** 0 to receive now; otherwise how long to wait (Infinity: until a job ends or stop()). */
  private waitBeforeReceive(now = Date.now()): number {
    const c = this.d.config;
    if (this.running.size >= c.concurrency) return Infinity;
    // Under a steady backlog with N > 1 slots the task would never be idle: stop taking work
    // after holding protection this long, so deployments and scale-in get their window.
    // heldForMs is 0 while no job holds protection.
    if (this.d.protection.heldForMs(now) >= c.maxProtectedMs) return Infinity;
    if (this.inIdleWindow(now)) return this.idleUntil - now;
    return 0;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(() => done(), ms) : undefined;
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      this.wakeUp = done;
    });
  }

  /**
   * One long poll, never aborted (see the loop): stop() and going idle wait for it, at most
   * WaitTimeSeconds, and hand back what it brings.
   */
  private async receive(max: number): Promise<Message[]> {
    try {
      const out = await this.d.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.d.config.workQueueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: this.d.config.waitTimeSeconds,
          MessageSystemAttributeNames: ["ApproximateReceiveCount"],
        }),
      );
      return out.Messages ?? [];
    } catch (error) {
      if (this.stopping) return [];
      logStep(this.d.logger, "error", "receive_failed", { error: errorMessage(error) });
      await this.sleep(RECEIVE_FAILURE_PAUSE_MS);
      return [];
    }
  }

  private start(message: Message): void {
    this.stats.received += 1;
    const entry: Running = { message, abort: new AbortController(), done: Promise.resolve(), givenBack: undefined, heartbeat: undefined };
    this.running.add(entry);
    entry.done = this.process(entry)
      .catch((error: unknown) => logStep(this.d.logger, "error", "job_crashed", { message_id: message.MessageId, error: errorMessage(error) }))
      .finally(() => {
        this.running.delete(entry);
        if (this.running.size === 0 && this.workedSinceIdle) {
          this.idleUntil = Date.now() + this.d.config.idleWindowMs;
          this.workedSinceIdle = false;
          // With N > 1 a long poll may be in flight; whatever it brings is started (see the loop).
        }
        this.publishMetrics();
        this.wakeUp?.();
      });
  }

  private async process(entry: Running): Promise<void> {
    const { message } = entry;
    const parsed = parseJob(message.Body);
    if (!parsed.ok) return this.quarantine(message, parsed.reason);
    const handler = this.d.handlers.get(parsed.job.type);
    if (!handler) return this.quarantine(message, `unknown job type ${JSON.stringify(parsed.job.type)}`);
    this.workedSinceIdle = true;
    await this.d.protection.acquire();
    try {
      await this.runJob(entry, parsed.job, handler);
    } finally {
      await this.d.protection.release();
    }
  }

  private async runJob(entry: Running, job: Job, handler: NonNullable<ReturnType<HandlerRegistry["get"]>>): Promise<void> {
    const { message } = entry;
    const c = this.d.config;
    const visibility = initialVisibilitySeconds(job.estimated_seconds, c);
    await this.changeVisibility(message, visibility, "initial");
    entry.heartbeat = this.startHeartbeat(entry, job, Date.now() + visibility * 1000);
    const fields = { job_id: job.job_id, type: job.type, message_id: message.MessageId, receive_count: receiveCount(message) };
    logStep(this.d.logger, "info", "job_started", { ...fields, visibility_seconds: visibility });
    countOne(this.d.metrics, "JobsStarted");
    const startedAt = Date.now();
    let succeeded = false;
    let failure: unknown;
    try {
      await handler({ job, messageId: message.MessageId ?? "", signal: entry.abort.signal, logger: this.d.logger });
      succeeded = true;
    } catch (error) {
      failure = error;
    }
    const durationMs = Date.now() - startedAt;
    if (!succeeded || entry.givenBack) clearInterval(entry.heartbeat);
    if (entry.givenBack) return;
    if (succeeded) {
      // The heartbeat runs on until the delete is through: a slow or re-sent delete must not let
      // the message come back (and the job run again) while it is on its way.
      try {
        await this.deleteMessage(message, job);
      } finally {
        clearInterval(entry.heartbeat);
      }
      this.stats.succeeded += 1;
      logStep(this.d.logger, "info", "job_succeeded", { ...fields, duration_ms: durationMs });
      countOne(this.d.metrics, "JobsSucceeded");
      this.d.metrics.addMetric("JobDuration", MetricUnit.Milliseconds, durationMs);
    } else if (!entry.abort.signal.aborted) {
      // Left on the queue: it comes back after the retry delay and, after maxReceiveCount, lands in the DLQ.
      await this.changeVisibility(message, c.retryDelaySeconds, "retry");
      this.stats.failed += 1;
      logStep(this.d.logger, "warn", "job_failed", { ...fields, duration_ms: durationMs, error: errorMessage(failure), retry_in_seconds: c.retryDelaySeconds });
      countOne(this.d.metrics, "JobsFailed");
      this.d.metrics.addMetric("JobDuration", MetricUnit.Milliseconds, durationMs);
    } else {
      await this.giveBack(entry, job.job_id);
    }
  }

  /**
   * Extends visibility only when the current window is about to end, so a job with a good
   * estimate costs no extra calls, and one that overruns it is never handed to another task.
   */
  private startHeartbeat(entry: Running, job: Job, initialDeadline: number): NodeJS.Timeout {
    const c = this.d.config;
    let deadline = initialDeadline;
    const extension = heartbeatExtensionSeconds(c);
    const timer = setInterval(() => {
      // A job given back belongs to the queue again; the handler may still be running.
      if (entry.givenBack) return;
      if (deadline - Date.now() > 2 * c.heartbeatMs) return;
      deadline = Date.now() + extension * 1000;
      void this.changeVisibility(entry.message, extension, "heartbeat").then((ok) => {
        if (ok) logStep(this.d.logger, "debug", "visibility_extended", { job_id: job.job_id, extended_seconds: extension });
      });
    }, c.heartbeatMs);
    timer.unref();
    return timer;
  }

  private async changeVisibility(message: Message, seconds: number, purpose: "initial" | "heartbeat" | "retry" | "give_back"): Promise<boolean> {
    try {
      await this.d.sqs.send(
        new ChangeMessageVisibilityCommand({ QueueUrl: this.d.config.workQueueUrl, ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: seconds }),
      );
      return true;
    } catch (error) {
      logStep(this.d.logger, "error", "visibility_change_failed", { message_id: message.MessageId, purpose, seconds, error: errorMessage(error) });
      return false;
    }
  }

  private async deleteMessage(message: Message, job: Job): Promise<void> {
    try {
      // Deleting one receipt handle twice is harmless, and a delete that never lands runs the job
      // again, so it is re-sent after the SDK gives up.
      const send = () => this.d.sqs.send(new DeleteMessageCommand({ QueueUrl: this.d.config.workQueueUrl, ReceiptHandle: message.ReceiptHandle }));
      await withResends(send, this.d.resend ?? DEFAULT_RESEND);
    } catch (error) {
      // The job ran; the message will come back once and run again (handlers are idempotent by job_id).
      logStep(this.d.logger, "error", "delete_failed", { job_id: job.job_id, message_id: message.MessageId, error: errorMessage(error) });
    }
  }

  private async quarantine(message: Message, reason: string): Promise<void> {
    try {
      await quarantine(this.d.sqs, this.d.config.quarantineQueueUrl, asSqsRecord(message, this.queueArn), reason, this.d);
    } catch (error) {
      // Not acknowledged: it is redelivered and, at worst, reaches the DLQ through the redrive policy.
      logStep(this.d.logger, "error", "quarantine_failed", { message_id: message.MessageId, reason, error: errorMessage(error) });
      return;
    }
    this.stats.quarantined += 1;
    await this.d.sqs
      .send(new DeleteMessageCommand({ QueueUrl: this.d.config.workQueueUrl, ReceiptHandle: message.ReceiptHandle }))
      .catch((error: unknown) => logStep(this.d.logger, "error", "delete_failed", { message_id: message.MessageId, error: errorMessage(error) }));
  }

  /** Gives the message back once; a second caller waits for the first give-back to land. */
  private giveBack(entry: Running, jobId: string | undefined): Promise<void> {
    entry.givenBack ??= this.returnToQueue(entry, jobId);
    return entry.givenBack;
  }

  /** The heartbeat checks `givenBack` at every beat, and the job clears it once its handler ends. */
  private async returnToQueue(entry: Running, jobId: string | undefined): Promise<void> {
    const ok = await this.changeVisibility(entry.message, 0, "give_back");
    if (ok) this.stats.returned += 1;
    logStep(this.d.logger, "warn", "job_returned", { job_id: jobId, message_id: entry.message.MessageId, visible_again: ok });
    countOne(this.d.metrics, "JobsReturned");
  }

  private async shutdown(): Promise<void> {
    // From SIGTERM, not from here: the loop may have waited for its last poll first.
    const graceEnds = (this.stopRequestedAt ?? Date.now()) + this.d.config.shutdownGraceMs;
    await this.settleBy(graceEnds);
    const unfinished = [...this.running];
    for (const entry of unfinished) entry.abort.abort(new ShutdownAbort());
    await this.settleBy(Date.now() + this.d.config.abortSettleMs);
    // A handler that ignored its abort signal: give its message back ourselves, all at once,
    // since each call may spend the SDK's retries and the stop timeout is shared. A give-back an
    // aborted job began itself is awaited too: the process exits after this, and a call cut
    // short would leave the message hidden for the rest of its visibility.
    await Promise.all([...this.running].map((e) => this.giveBack(e, undefined)));
    await this.d.protection.releaseAll(SHUTDOWN_RELEASE_TIMEOUT_MS);
    // Unconditional: the protection's own counters are only flushed here.
    this.d.metrics.publishStoredMetrics();
    logStep(this.d.logger, "info", "shutdown_complete", { ...this.stats, unfinished: unfinished.length });
  }

  /** Until every job running now has settled, or the deadline; no job starts during shutdown. */
  private async settleBy(deadline: number): Promise<void> {
    await Promise.race([Promise.allSettled([...this.running].map((r) => r.done)), new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
  }

  /** Publishes only when something was added: an empty EMF flush only makes a warning. */
  private publishMetrics(): void {
    if (this.metricsAdded === this.metricsPublished) return;
    this.metricsPublished = this.metricsAdded;
    this.d.metrics.publishStoredMetrics();
  }
}

export function createWorker(deps: WorkerDeps): Worker {
  return new Worker(deps);
}
