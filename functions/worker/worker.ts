import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, type Message, type SQSClient } from "@aws-sdk/client-sqs";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { errorMessage, logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { DEFAULT_RESEND, type ResendPolicy, withResends } from "../shared/resend";
import type { WorkerConfig } from "./config";
import type { HandlerRegistry } from "./handlers";
import { heartbeatExtensionSeconds, initialVisibilitySeconds, parseJob, type Job } from "./job";
import type { JobLedger, Lease } from "./ledger";
import type { TaskProtection } from "./protection";
import { queueArnFromUrl, receiveCount, toSqsRecord } from "../shared/sqs-record";

export interface WorkerDeps {
  sqs: SQSClient;
  config: WorkerConfig;
  handlers: HandlerRegistry;
  protection: TaskProtection;
  /** The job ledger (`worker-jobs`): a job runs only under a lease taken there, and is completed there before its delete. */
  ledger: JobLedger;
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

class LeaseLost extends Error {
  constructor() {
    super("the job's lease was taken over by another task");
    this.name = "LeaseLost";
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
  /** The job's lease; its receiptHandle is the latest any receive recorded, the one every SQS call uses. */
  lease: Lease | undefined;
  /** The outcome is in the ledger: the heartbeat only keeps the message hidden until its delete lands. */
  completed: boolean;
  /** Another task took the lease over: this task must not touch the job's message again. */
  leaseLost: boolean;
  /** The beat in flight, if any: awaited before a retry or give-back sets the visibility, so a late extension cannot undo it. */
  beat: Promise<unknown> | undefined;
  /** The job's ledger key, once parsed: set before the take, so a second receive of the job on this task sees it is in hand. */
  jobKey?: string;
}

export interface WorkerStats {
  received: number;
  succeeded: number;
  failed: number;
  quarantined: number;
  returned: number;
  /** Redelivered messages of completed jobs, deleted unrun. */
  alreadyCompleted: number;
  /** Messages whose job another task held: left to it, unrun. */
  heldElsewhere: number;
  /** Jobs whose lease another task took over while this one ran them (or whose completion was refused). */
  leasesLost: number;
}

/**
 * The long-running queue worker: long-polls the work queue, runs up to N jobs at once, holds
 * task scale-in protection while any job runs, extends visibility by heartbeat, leaves an
 * unprotected idle window after going idle, and on stop() gives back what it cannot finish.
 */
export class Worker {
  readonly stats: WorkerStats = { received: 0, succeeded: 0, failed: 0, quarantined: 0, returned: 0, alreadyCompleted: 0, heldElsewhere: 0, leasesLost: 0 };
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
      if (messages.length > 0 && this.inIdleWindow())
        logStep(this.d.logger, "info", "idle_window_deferred", { messages: messages.length, message_ids: messages.map((m) => m.MessageId) });
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
    const results = await Promise.all(messages.map((m) => this.changeVisibility(target(m), 0, "give_back")));
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
    const entry: Running = {
      message,
      abort: new AbortController(),
      done: Promise.resolve(),
      givenBack: undefined,
      heartbeat: undefined,
      lease: undefined,
      completed: false,
      leaseLost: false,
      beat: undefined,
    };
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
    // The job's identity in the ledger: its job id (the schema requires one).
    entry.jobKey = parsed.job.job_id;
    entry.lease = await this.takeLease(entry, parsed.job);
    if (!entry.lease) return;
    this.workedSinceIdle = true;
    await this.d.protection.acquire();
    try {
      await this.runJob(entry, parsed.job, handler);
    } finally {
      await this.d.protection.release();
    }
  }

  /**
   * Whether another receive of `jobKey` on this task is taking or running it: two copies of one
   * message can arrive in one batch, and the first's take is still on its way when the second
   * meets the lease it wrote, naming this task.
   */
  private runsHere(jobKey: string, entry: Running): boolean {
    return [...this.running].some((r) => r !== entry && r.jobKey === jobKey);
  }

  /**
   * A job runs only under its lease. A message whose job is complete is deleted unrun (this
   * receive's handle is the current one); one whose job another task holds is left alone: its
   * handle is recorded in that lease, the holder's next beat hides the message again with it and
   * deletes with it, and this task spends no visibility change on it.
   */
  private async takeLease(entry: Running, job: Job): Promise<Lease | undefined> {
    const { message } = entry;
    const jobKey = job.job_id;
    const fields = { job_key: jobKey, job_id: job.job_id, message_id: message.MessageId, receive_count: receiveCount(message) };
    let acquired: Awaited<ReturnType<JobLedger["acquire"]>>;
    try {
      acquired = await this.d.ledger.acquire(jobKey, message.ReceiptHandle ?? "", this.runsHere(jobKey, entry));
    } catch (error) {
      // Nothing proves the job is free to run: the message shows again after the queue's visibility.
      logStep(this.d.logger, "error", "job_lease_failed", { ...fields, error: errorMessage(error) });
      return undefined;
    }
    switch (acquired.kind) {
      case "taken":
        logStep(this.d.logger, "info", "job_lease_taken", {
          ...fields,
          holder: acquired.lease.holder,
          runs: acquired.lease.runs,
          recovered: acquired.recovered,
        });
        return acquired.lease;
      case "completed":
        this.stats.alreadyCompleted += 1;
        logStep(this.d.logger, "info", "job_already_completed", {
          ...fields,
          holder: acquired.holder,
          completed_at: acquired.completedAt,
          outcome: acquired.outcome,
        });
        countOne(this.d.metrics, "JobsAlreadyCompleted");
        await this.deleteMessage(target(message), jobKey);
        return undefined;
      case "held":
        this.stats.heldElsewhere += 1;
        logStep(this.d.logger, "info", "job_held_elsewhere", {
          ...fields,
          holder: acquired.holder,
          lease_expires_at: acquired.leaseExpiresAt,
          receipt_handle_recorded: acquired.recorded,
        });
        countOne(this.d.metrics, "JobsHeldElsewhere");
        return undefined;
    }
  }

  private async runJob(entry: Running, job: Job, handler: NonNullable<ReturnType<HandlerRegistry["get"]>>): Promise<void> {
    const { message } = entry;
    const lease = entry.lease!;
    const c = this.d.config;
    const visibility = initialVisibilitySeconds(job.estimated_seconds, c);
    const sentAt = Date.now();
    const hidden = await this.changeVisibility(this.targetOf(entry), visibility, "initial");
    // A failed first window is not assumed: the heartbeat extends at its first beat.
    entry.heartbeat = this.startHeartbeat(entry, job, hidden ? sentAt + visibility * 1000 : sentAt);
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
    if (!succeeded || entry.givenBack || entry.leaseLost) await this.stopHeartbeat(entry);
    // Logged at the beat that found it; the message and the outcome are the new holder's.
    if (entry.leaseLost) return;
    if (entry.givenBack) return;
    if (succeeded) {
      // The heartbeat runs on until the delete is through: a slow or re-sent delete must not let
      // the message come back (and the job run again) while it is on its way.
      try {
        const completion = await this.complete(entry, lease);
        // Given up (shutdown, or a beat found the lease lost): the outcome is not in the ledger and
        // the job runs again under another lease, so this run is not counted as a success.
        if (completion === undefined) return;
        if (completion.kind === "refused") return this.leaseLost(entry, lease, "completion", completion.holder);
        entry.completed = true;
        if (completion.recovered) logStep(this.d.logger, "info", "job_completion_recovered", { job_key: lease.jobKey, holder: lease.holder });
        await this.deleteMessage(this.targetOf(entry), lease.jobKey);
      } finally {
        clearInterval(entry.heartbeat);
      }
      this.stats.succeeded += 1;
      logStep(this.d.logger, "info", "job_succeeded", { ...fields, duration_ms: durationMs });
      countOne(this.d.metrics, "JobsSucceeded");
      this.d.metrics.addMetric("JobDuration", MetricUnit.Milliseconds, durationMs);
    } else if (!entry.abort.signal.aborted) {
      // Left on the queue: it comes back after the retry delay and, after maxReceiveCount, lands in
      // the DLQ. The lease ends now, so that receive takes the job instead of finding it held.
      await this.releaseLease(entry, lease);
      await this.changeVisibility(this.targetOf(entry), c.retryDelaySeconds, "retry");
      this.stats.failed += 1;
      logStep(this.d.logger, "warn", "job_failed", { ...fields, duration_ms: durationMs, error: errorMessage(failure), retry_in_seconds: c.retryDelaySeconds });
      countOne(this.d.metrics, "JobsFailed");
      this.d.metrics.addMetric("JobDuration", MetricUnit.Milliseconds, durationMs);
    } else {
      await this.giveBack(entry, job.job_id);
    }
  }

  /**
   * Writes the outcome, fenced by the lease token. A write that keeps failing is tried again every
   * heartbeat while the heartbeat keeps the lease and the message alive: a job that ran is not
   * left to run again for a passing DynamoDB fault. Only shutdown (or a lost lease) ends the tries;
   * the job then runs again once its lease expires (docs/reliability.md, the residual case).
   */
  private async complete(entry: Running, lease: Lease): Promise<Awaited<ReturnType<JobLedger["complete"]>> | undefined> {
    for (;;) {
      try {
        return await this.d.ledger.complete(lease, "succeeded");
      } catch (error) {
        logStep(this.d.logger, "error", "job_completion_failed", {
          job_key: lease.jobKey,
          holder: lease.holder,
          error: errorMessage(error),
          retrying: !this.stopping && !entry.leaseLost,
        });
        if (this.stopping || entry.leaseLost) return undefined;
        await new Promise((resolve) => setTimeout(resolve, this.d.config.heartbeatMs));
      }
    }
  }

  /**
   * Another task holds the job now: its message and its outcome are that task's. Once per job: a
   * renewal on its way when the completion was refused finds the lease lost too.
   */
  private leaseLost(entry: Running, lease: Lease, at: "renewal" | "completion", holder?: string): void {
    if (entry.leaseLost) return;
    entry.leaseLost = true;
    this.stats.leasesLost += 1;
    logStep(this.d.logger, "warn", "job_lease_lost", {
      job_key: lease.jobKey,
      message_id: entry.message.MessageId,
      at,
      holder: lease.holder,
      new_holder: holder,
    });
    countOne(this.d.metrics, "JobLeasesLost");
  }

  private async releaseLease(entry: Running, lease: Lease): Promise<void> {
    try {
      await this.d.ledger.release(lease);
    } catch (error) {
      // The lease then expires by itself, one lease length later.
      logStep(this.d.logger, "error", "job_lease_release_failed", { job_key: lease.jobKey, message_id: entry.message.MessageId, error: errorMessage(error) });
    }
  }

  /** The message as every call about a running job addresses it: with the latest recorded handle. */
  private targetOf(entry: Running): VisibilityTarget {
    return { messageId: entry.message.MessageId, receiptHandle: entry.lease?.receiptHandle ?? entry.message.ReceiptHandle };
  }

  /**
   * Every beat renews the lease (which reads back the latest receipt handle). Visibility is
   * extended only when the current window is about to end, so a job with a good estimate costs no
   * extra SQS calls, and at once when another receive recorded a new handle (the message showed,
   * and that receive left it to us). A failed renewal or extension is re-sent, and never assumed:
   * the window's end moves only when an extension landed, so the next beat tries again.
   */
  private startHeartbeat(entry: Running, job: Job, initialDeadline: number): NodeJS.Timeout {
    let deadline = initialDeadline;
    let beating = false;
    const timer = setInterval(() => {
      // One beat at a time. A give-back or a lost lease clears this timer at once; a give-back
      // that finds the job completed (its delete on its way) leaves it, and the beat then only
      // checks `givenBack` (below).
      if (beating) return;
      beating = true;
      entry.beat = this.beat(entry, job, deadline)
        .then((next) => (deadline = next))
        .finally(() => (beating = false));
    }, this.d.config.heartbeatMs);
    timer.unref();
    return timer;
  }

  private async stopHeartbeat(entry: Running): Promise<void> {
    clearInterval(entry.heartbeat);
    await entry.beat;
  }

  /** One beat; answers with the window's end as it now stands. */
  private async beat(entry: Running, job: Job, deadline: number): Promise<number> {
    const c = this.d.config;
    const lease = entry.lease!;
    let handleChanged = false;
    if (!entry.completed) {
      const before = lease.receiptHandle;
      try {
        const renewed = await this.d.ledger.renew(lease);
        if (renewed.kind === "lost") {
          // Expired and taken by another task: stop the handler, leave the message to the new holder.
          clearInterval(entry.heartbeat);
          this.leaseLost(entry, lease, "renewal", renewed.holder);
          entry.abort.abort(new LeaseLost());
          return deadline;
        }
        // "completed": the completing write landed while this beat was on its way; the beat goes on
        // keeping the message hidden until the delete lands.
        handleChanged = renewed.receiptHandle !== before;
      } catch (error) {
        logStep(this.d.logger, "error", "job_lease_renewal_failed", { job_key: lease.jobKey, holder: lease.holder, error: errorMessage(error) });
      }
    }
    if (entry.givenBack || entry.leaseLost) return deadline;
    if (!handleChanged && deadline - Date.now() > 2 * c.heartbeatMs) return deadline;
    const extension = heartbeatExtensionSeconds(c);
    const sentAt = Date.now();
    const ok = await this.changeVisibility(this.targetOf(entry), extension, "heartbeat", true);
    if (!ok) return deadline;
    logStep(this.d.logger, "debug", "visibility_extended", {
      job_id: job.job_id,
      extended_seconds: extension,
      ...(handleChanged ? { receipt_handle_changed: true } : {}),
    });
    return sentAt + extension * 1000;
  }

  /** `resend`: re-send what the SDK gave up on (a heartbeat's extension must land, not be assumed). */
  private async changeVisibility(
    message: VisibilityTarget,
    seconds: number,
    purpose: "initial" | "heartbeat" | "retry" | "give_back",
    resend = false,
  ): Promise<boolean> {
    try {
      const send = () =>
        this.d.sqs.send(
          new ChangeMessageVisibilityCommand({ QueueUrl: this.d.config.workQueueUrl, ReceiptHandle: message.receiptHandle, VisibilityTimeout: seconds }),
        );
      await (resend ? withResends(send, this.d.resend ?? DEFAULT_RESEND) : send());
      return true;
    } catch (error) {
      logStep(this.d.logger, "error", "visibility_change_failed", { message_id: message.messageId, purpose, seconds, error: errorMessage(error) });
      return false;
    }
  }

  private async deleteMessage(message: VisibilityTarget, jobKey: string): Promise<void> {
    try {
      // Deleting one receipt handle twice is harmless, and a message whose delete never lands
      // comes back, so it is re-sent after the SDK gives up.
      const send = () => this.d.sqs.send(new DeleteMessageCommand({ QueueUrl: this.d.config.workQueueUrl, ReceiptHandle: message.receiptHandle }));
      await withResends(send, this.d.resend ?? DEFAULT_RESEND);
    } catch (error) {
      // The job is complete in the ledger: the message comes back, and that receive deletes it unrun.
      logStep(this.d.logger, "error", "delete_failed", { job_id: jobKey, message_id: message.messageId, error: errorMessage(error) });
    }
  }

  private async quarantine(message: Message, reason: string): Promise<void> {
    try {
      await quarantine(this.d.sqs, this.d.config.quarantineQueueUrl, toSqsRecord(message, this.queueArn), reason, this.d);
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

  /**
   * The heartbeat checks `givenBack` at every beat, and the job clears it once its handler ends.
   * The lease ends with it, so the next receive takes the job instead of finding it held.
   */
  private async returnToQueue(entry: Running, jobId: string | undefined): Promise<void> {
    // The message is another task's once the lease is lost, and a completed job's is being deleted.
    if (entry.leaseLost || entry.completed) return;
    await this.stopHeartbeat(entry);
    const [ok] = await Promise.all([
      this.changeVisibility(this.targetOf(entry), 0, "give_back"),
      entry.lease ? this.releaseLease(entry, entry.lease) : undefined,
    ]);
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

/** What a visibility change or delete addresses: the message, by its latest receipt handle. */
interface VisibilityTarget {
  messageId: string | undefined;
  receiptHandle: string | undefined;
}

const target = (m: Message): VisibilityTarget => ({ messageId: m.MessageId, receiptHandle: m.ReceiptHandle });

export function createWorker(deps: WorkerDeps): Worker {
  return new Worker(deps);
}
