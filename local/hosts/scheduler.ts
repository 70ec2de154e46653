/**
 * Fires the program's EventBridge Scheduler schedules locally (moto stores them but never fires
 * them), on a simulated clock that runs `speed` times faster than the wall clock from start().
 *
 * Delivery plays Scheduler's templated SQS target:
 * - the context attributes `<aws.scheduler.scheduled-time>`, `<aws.scheduler.execution-id>`,
 *   `<aws.scheduler.attempt-number>` and `<aws.scheduler.schedule-arn>` are substituted in the
 *   input, which is then sent with SendMessage to the target queue;
 * - a failed send is retried with exponential backoff, up to the retry policy's
 *   maximumRetryAttempts and within its maximumEventAgeInSeconds (both on the simulated clock);
 * - then the event goes to the schedule's dead-letter queue with the message attributes
 *   Scheduler sets (ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, EXHAUSTED_RETRY_CONDITION,
 *   IS_PAYLOAD_TRUNCATED, RETRY_ATTEMPTS, SCHEDULED_TIME, SCHEDULE_ARN, TARGET_ARN), or is dropped
 *   and counted when there is none.
 *
 * Cron and at() expressions are evaluated in UTC whatever the schedule's time zone (the program's
 * schedules use UTC). A rate schedule first fires one interval after start(), then every interval.
 */
import { type MessageAttributeValue, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { randomBytes } from "node:crypto";
import { rfc3339 } from "../../functions/fleet/messages";
import type { LocalSchedule } from "../provision/topology-types";
import { sleepUnless } from "./clock";
import { parseScheduleExpression, type ScheduleExpression } from "./schedule-expression";

export interface SchedulerEvent {
  schedule: string;
  kind: "delivered" | "retry" | "dead-lettered" | "dropped";
  detail?: string;
}

export interface ScheduleStats {
  /** Invocations started (by the clock or by fire()). */
  fired: number;
  delivered: number;
  /** Retries after a failed send, over all invocations. */
  retries: number;
  deadLettered: number;
  /** Invocations lost: retries exhausted with no DLQ, the DLQ send failed, or stop() cut the retries short. */
  dropped: number;
  /** Wall-clock time (per `now`) of the next timed fire; null when none is armed. */
  nextAtMs: number | null;
}

export interface LocalSchedulerOptions {
  sqs: SQSClient;
  speed: number;
  queueUrlForArn: (arn: string) => string | undefined;
  now?: () => number;
  onEvent?: (e: SchedulerEvent) => void;
}

/** First retry after 1 simulated second, doubling up to 5 minutes. AWS documents exponential backoff without the constants. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 300_000;
/** The stat each outcome counts in. */
const COUNTED_IN = { delivered: "delivered", retry: "retries", "dead-lettered": "deadLettered", dropped: "dropped" } as const;
/** setTimeout's largest delay; longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Entry {
  key: string;
  schedule: LocalSchedule;
  expression: ScheduleExpression;
  arn: string;
  stats: ScheduleStats;
  timer?: NodeJS.Timeout;
  /** Simulated time of the next timed fire. */
  nextSimMs: number | null;
  /** Rate schedules: how many intervals after the start the last timed fire was. */
  rateIndex: number;
}

/** One invocation of a schedule: its execution id and scheduled time, and when its event is too old to send. */
interface Execution {
  id: string;
  scheduledTime: string;
  expiresSimMs: number;
}

/** An invocation whose retries ran out: its last input and error, and which limit it reached. */
interface FailedDelivery {
  input: string;
  error: TargetError;
  exhausted: "MaximumRetryAttempts" | "MaximumEventAgeInSeconds";
  retryAttempts: number;
}

/** A failed send, with the code and message that go into the DLQ attributes. */
interface TargetError {
  code: string;
  message: string;
}

export class LocalScheduler {
  private readonly entries: Entry[];
  private readonly opts: LocalSchedulerOptions;
  private readonly now: () => number;
  private phase: "idle" | "running" | "stopped" = "idle";
  private realStartMs = 0;
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborted by stop(): wakes the retry sleeps. */
  private readonly stopped = new AbortController();

  constructor(schedules: LocalSchedule[], opts: LocalSchedulerOptions) {
    if (!(opts.speed > 0) || !Number.isFinite(opts.speed)) throw new Error(`LocalScheduler: speed must be a positive number, got ${opts.speed}`);
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    const logicalCounts = new Map<string, number>();
    for (const s of schedules) logicalCounts.set(s.logicalName, (logicalCounts.get(s.logicalName) ?? 0) + 1);
    this.entries = schedules.map((schedule) => {
      if (!/^arn:[^:]+:sqs:/.test(schedule.target.arn)) {
        throw new Error(`LocalScheduler: schedule ${schedule.logicalName} targets ${schedule.target.arn}; only SQS queue targets are played locally`);
      }
      let expression: ScheduleExpression;
      try {
        expression = parseScheduleExpression(schedule.expression);
      } catch (err) {
        throw new Error(`LocalScheduler: schedule ${schedule.logicalName}: ${(err as Error).message}`, { cause: err });
      }
      return {
        // Logical names read better in the live view; physical ones break a tie.
        key: logicalCounts.get(schedule.logicalName) === 1 ? schedule.logicalName : schedule.name,
        schedule,
        expression,
        arn: scheduleArn(schedule),
        stats: { fired: 0, delivered: 0, retries: 0, deadLettered: 0, dropped: 0, nextAtMs: null },
        nextSimMs: null,
        rateIndex: 0,
      };
    });
  }

  /** Arms a timer per enabled schedule; the simulated clock starts now. */
  start(): void {
    if (this.phase !== "idle") throw new Error(`LocalScheduler: start() when ${this.phase}`);
    this.phase = "running";
    this.realStartMs = this.now();
    for (const entry of this.entries) {
      if (!entry.schedule.enabled) continue;
      entry.nextSimMs = this.following(entry, this.realStartMs);
      this.arm(entry);
    }
  }

  /** Clears the timers, cuts retry backoffs short (those invocations count as dropped) and waits for sends in flight. */
  async stop(): Promise<void> {
    if (this.phase === "stopped") return;
    this.phase = "stopped";
    for (const entry of this.entries) {
      clearTimeout(entry.timer);
      entry.stats.nextAtMs = null;
    }
    this.stopped.abort();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Delivers one invocation now, scheduled at the current simulated time, and resolves when it
   * has been delivered, dead-lettered or dropped. `name` is the logical or physical name. Works
   * on disabled schedules too: it is an explicit request, like a manual trigger.
   */
  fire(name: string): Promise<void> {
    if (this.phase === "stopped") return Promise.reject(new Error("LocalScheduler: fire() after stop()"));
    const entry = this.entries.find((e) => e.schedule.logicalName === name || e.schedule.name === name);
    if (!entry) {
      const known = this.entries.map((e) => e.schedule.logicalName).join(", ");
      return Promise.reject(new Error(`LocalScheduler: no schedule named ${name} (known: ${known || "none"})`));
    }
    return this.invoke(entry, this.simNow());
  }

  stats(): Record<string, ScheduleStats> {
    return Object.fromEntries(this.entries.map((e) => [e.key, { ...e.stats }]));
  }

  // ---- the simulated clock ----

  private simNow(): number {
    if (this.phase !== "running") return this.now();
    return this.realStartMs + (this.now() - this.realStartMs) * this.opts.speed;
  }

  private realAt(simMs: number): number {
    return this.realStartMs + (simMs - this.realStartMs) / this.opts.speed;
  }

  /** The next timed fire after `afterSimMs` (the last fire, or the start), or null when none is left. */
  private following(entry: Entry, afterSimMs: number): number | null {
    const e = entry.expression;
    if (e.kind === "rate") return this.realStartMs + ++entry.rateIndex * e.everyMs;
    if (e.kind === "at") return e.at.getTime() > afterSimMs ? e.at.getTime() : null;
    return e.next(new Date(afterSimMs))?.getTime() ?? null;
  }

  private arm(entry: Entry): void {
    if (this.phase !== "running" || entry.nextSimMs === null) {
      entry.stats.nextAtMs = null;
      return;
    }
    const dueRealMs = this.realAt(entry.nextSimMs);
    entry.stats.nextAtMs = dueRealMs;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, dueRealMs - this.now()));
    // The scheduler alone should not keep a finished run alive.
    entry.timer = setTimeout(() => this.onTimer(entry), delay).unref();
  }

  private onTimer(entry: Entry): void {
    const sim = this.simNow();
    // Every slot that has come due fires, each with its own scheduled time, as Scheduler does.
    while (this.phase === "running" && entry.nextSimMs !== null && entry.nextSimMs <= sim) {
      const scheduledMs = entry.nextSimMs;
      entry.nextSimMs = this.following(entry, scheduledMs);
      void this.invoke(entry, scheduledMs);
    }
    this.arm(entry);
  }

  // ---- delivery ----

  /** One invocation: sent with retries, then dead-lettered when they ran out. */
  private invoke(entry: Entry, scheduledSimMs: number): Promise<void> {
    entry.stats.fired++;
    const execution: Execution = {
      id: randomBytes(8).toString("hex"),
      // Scheduler's timestamps have second precision: 2022-03-22T18:59:43Z.
      scheduledTime: rfc3339(new Date(scheduledSimMs)),
      expiresSimMs: scheduledSimMs + entry.schedule.target.maximumEventAgeInSeconds * 1000,
    };
    const delivery = this.sendWithRetries(entry, execution)
      .then((failed) => failed && this.deadLetter(entry, execution, failed))
      .catch((err: unknown) => {
        // Delivery handles every AWS failure itself; this is a bug or a throwing onEvent.
        entry.stats.dropped++;
        console.error(`LocalScheduler: schedule ${entry.key}: ${(err as Error).stack ?? String(err)}`);
      });
    this.inFlight.add(delivery);
    void delivery.finally(() => this.inFlight.delete(delivery));
    return delivery;
  }

  /** Sends to the target, retried with backoff within the retry policy; what failed last when the retries ran out (undefined: delivered, or stopped). */
  private async sendWithRetries(entry: Entry, execution: Execution): Promise<FailedDelivery | undefined> {
    const { target } = entry.schedule;
    for (let attempt = 1; ; attempt++) {
      const input = substitute(target.input ?? "{}", {
        "scheduled-time": execution.scheduledTime,
        "execution-id": execution.id,
        "attempt-number": String(attempt),
        "schedule-arn": entry.arn,
      });
      let error: TargetError;
      try {
        await this.send(target.arn, input);
        this.record(entry, "delivered", `scheduled ${execution.scheduledTime}, attempt ${attempt}`);
        return undefined;
      } catch (err) {
        error = asTargetError(err);
      }
      if (attempt - 1 >= target.maximumRetryAttempts) return { input, error, exhausted: "MaximumRetryAttempts", retryAttempts: attempt - 1 };
      const waitSimMs = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
      if (this.simNow() + waitSimMs > execution.expiresSimMs) return { input, error, exhausted: "MaximumEventAgeInSeconds", retryAttempts: attempt - 1 };
      this.record(entry, "retry", `attempt ${attempt} failed (${error.code}: ${error.message}); retrying in ${waitSimMs / 1000} s`);
      if (!(await sleepUnless(waitSimMs / this.opts.speed, this.stopped.signal))) {
        this.record(entry, "dropped", `stopped during retries (last error ${error.code})`);
        return undefined;
      }
    }
  }

  /** The event to the schedule's DLQ with the attributes Scheduler sets; dropped without one, or when that send fails too. */
  private async deadLetter(entry: Entry, execution: Execution, failed: FailedDelivery): Promise<void> {
    const { target } = entry.schedule;
    const { error, exhausted, retryAttempts } = failed;
    const why = `${exhausted} exhausted after ${retryAttempts} retries (${error.code}: ${error.message})`;
    if (!target.deadLetterArn) return this.record(entry, "dropped", `${why}; no dead-letter queue`);
    const attributes: Record<string, string> = {
      ERROR_CODE: error.code,
      ERROR_MESSAGE: error.message,
      EXECUTION_ID: execution.id,
      EXHAUSTED_RETRY_CONDITION: exhausted,
      IS_PAYLOAD_TRUNCATED: "false",
      RETRY_ATTEMPTS: String(retryAttempts),
      SCHEDULED_TIME: execution.scheduledTime,
      SCHEDULE_ARN: entry.arn,
      TARGET_ARN: target.arn,
    };
    try {
      await this.send(target.deadLetterArn, failed.input, attributes);
    } catch (err) {
      const dlqError = asTargetError(err);
      return this.record(entry, "dropped", `${why}; the dead-letter send failed too (${dlqError.code}: ${dlqError.message})`);
    }
    this.record(entry, "dead-lettered", why);
  }

  /** Counts an outcome in the schedule's stats and tells onEvent. */
  private record(entry: Entry, kind: SchedulerEvent["kind"], detail: string): void {
    entry.stats[COUNTED_IN[kind]]++;
    this.opts.onEvent?.({ schedule: entry.key, kind, detail });
  }

  private async send(queueArn: string, body: string, attributes?: Record<string, string>): Promise<void> {
    const queueUrl = this.opts.queueUrlForArn(queueArn);
    if (!queueUrl) throw Object.assign(new Error(`no queue is known for ${queueArn}`), { name: "AWS.SimpleQueueService.NonExistentQueue" });
    const messageAttributes: Record<string, MessageAttributeValue> | undefined = attributes
      ? Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { DataType: "String", StringValue: v }]))
      : undefined;
    await this.opts.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageAttributes: messageAttributes }));
  }
}

/** `arn:aws:scheduler:<region>:<account>:schedule/default/<name>`, from the target queue's region and account. */
function scheduleArn(schedule: LocalSchedule): string {
  const [, partition = "aws", , region = "us-east-1", account = "123456789012"] = schedule.target.arn.split(":");
  return `arn:${partition}:scheduler:${region}:${account}:schedule/default/${schedule.name}`;
}

function substitute(input: string, values: Record<string, string>): string {
  return input.replace(/<aws\.scheduler\.([a-z-]+)>/g, (whole, name: string) => values[name] ?? whole);
}

function asTargetError(err: unknown): TargetError {
  const e = err as { name?: string; message?: string };
  return { code: e.name ?? "Error", message: e.message ?? String(err) };
}
