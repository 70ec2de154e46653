/**
 * CloudWatch's part in the local run, which moto does not play: samples the depth of every queue
 * an alarm watches once per simulated minute (SQS publishes its metrics per minute), evaluates the
 * alarms after each round (./alarm-eval.ts), and on each state change sets the alarm's state in
 * moto and publishes CloudWatch's message to the alarm's actions that are topics in moto, so the
 * alert topic is used for real. `report()` is the end-of-run account.
 */
import { SetAlarmStateCommand, type CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { PublishCommand, type SNSClient } from "@aws-sdk/client-sns";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { alarmMessage, alarmSubject, evaluateAlarms, firingsOf, OPERATORS, stateReason, unsupportedReason, type AlarmEvaluation, type AlarmTransition, type QueueSample } from "./alarm-eval";
import type { SimClock } from "./clock";
import type { AlarmReport, LocalAlarm, LocalQueue, LocalTopic } from "./types";
import { alarmValue, runTime } from "./view";

/** Sampling faster than this only loads moto: at high speeds a round then spans several simulated minutes. */
export const MIN_SAMPLE_REAL_MS = 200;

/** Real ms between two sampling rounds: one simulated minute, but not faster than MIN_SAMPLE_REAL_MS. */
export function sampleEveryRealMs(speed: number): number {
  return Math.max(MIN_SAMPLE_REAL_MS, 60_000 / speed);
}

export interface AlarmWatcherOptions {
  alarms: LocalAlarm[];
  queues: LocalQueue[];
  topics: LocalTopic[];
  /** URNs of the resources created in moto: an alarm's state is set there only if it exists. */
  created: string[];
  clock: SimClock;
  /** Straight to moto, as the live view's gauges read depths. */
  sqs: SQSClient;
  sns: SNSClient;
  cloudwatch: CloudWatchClient;
  account: string;
  region: string;
  note: (line: string) => void;
}

export class AlarmWatcher {
  private readonly samples: QueueSample[] = [];
  /** Transitions already acted on, by alarm URN, time and state. */
  private readonly acted = new Set<string>();
  /** Topic names published to, by alarm URN. */
  private readonly notified = new Map<string, Set<string>>();
  private published = 0;
  private readonly watched: LocalQueue[];
  private readonly everyRealMs: number;
  private timer?: NodeJS.Timeout;
  private round?: Promise<void>;
  private stopped = false;
  private sampleFailureNoted = false;

  constructor(private readonly opts: AlarmWatcherOptions) {
    const names = new Set(opts.alarms.filter((a) => unsupportedReason(a) === undefined).map((a) => a.queueName));
    this.watched = opts.queues.filter((q) => names.has(q.name));
    this.everyRealMs = sampleEveryRealMs(opts.clock.speed);
  }

  /** Samples at once, then once per simulated minute until `stop()`. */
  start(): void {
    const evaluable = this.evaluate().filter((e) => e.unsupported === undefined).length;
    const everySimMs = this.everyRealMs * this.opts.clock.speed;
    const every = everySimMs === 60_000 ? "once per simulated minute" : `every ${alarmValue(everySimMs / 60_000)} simulated minutes`;
    const queues = this.watched.length === 1 ? (this.watched[0]?.logicalName ?? "") : `${this.watched.length} queues`;
    this.opts.note(`alarms: sampling the depth of ${queues} ${every} for ${evaluable} of ${this.opts.alarms.length} alarms (moto evaluates none)`);
    if (this.watched.length === 0) return;
    const tick = () => {
      const started = Date.now();
      this.round = this.sampleRound()
        // Every AWS call in a round handles its own failure; this is for a bug, which must not end the run.
        .catch((err: unknown) => this.opts.note(`alarms: a sampling round failed: ${(err as Error).stack ?? String(err)}`))
        .finally(() => {
          if (this.stopped) return;
          // Keeps the cadence: the round's own duration is not added to the interval.
          this.timer = setTimeout(tick, Math.max(0, started + this.everyRealMs - Date.now()));
          // Sampling must not keep the process alive after the run.
          this.timer.unref();
        });
    };
    tick();
  }

  /** Stops sampling after the round under way, whose state changes are still published. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.round;
  }

  report(): AlarmReport {
    return alarmReport({
      evaluations: this.evaluate(),
      startMs: this.opts.clock.t0,
      topics: this.opts.topics,
      notified: this.notified,
      samples: this.samples.length,
      sampleEverySimMs: this.everyRealMs * this.opts.clock.speed,
      published: this.published,
    });
  }

  /** The alarms over the samples so far; one on a queue outside the program has none, and says so. */
  private evaluate(): AlarmEvaluation[] {
    const sampled = new Set(this.watched.map((q) => q.name));
    return evaluateAlarms(this.opts.alarms, this.samples).map((e) =>
      e.unsupported === undefined && !sampled.has(e.alarm.queueName ?? "") ? { ...e, unsupported: `watches ${e.alarm.queueName}, a queue the program does not declare` } : e,
    );
  }

  /** One reading of every watched queue at one simulated instant, then the alarms' new state changes. */
  private async sampleRound(): Promise<void> {
    const simTimeMs = this.opts.clock.now();
    const read = await Promise.allSettled(
      this.watched.map((q) => this.opts.sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ["ApproximateNumberOfMessages"] }))),
    );
    read.forEach((r, i) => {
      const queue = this.watched[i];
      if (!queue) return;
      if (r.status === "fulfilled") this.samples.push({ simTimeMs, queueName: queue.name, visible: Number(r.value.Attributes?.ApproximateNumberOfMessages ?? 0) });
      else if (!this.sampleFailureNoted) {
        // A missed reading is a missing datapoint, which the alarm's treatMissingData covers.
        this.sampleFailureNoted = true;
        this.opts.note(`alarms: reading ${queue.logicalName}'s depth failed (${(r.reason as Error).message}); missed readings count as missing data`);
      }
    });
    for (const evaluation of this.evaluate()) {
      for (const t of evaluation.transitions) {
        const key = `${evaluation.alarm.urn}\0${t.simTimeMs}\0${t.state}`;
        if (this.acted.has(key)) continue;
        this.acted.add(key);
        await this.act(evaluation.alarm, t);
      }
    }
  }

  /** What CloudWatch does on a state change: records it on the alarm and notifies the state's actions. */
  private async act(alarm: LocalAlarm, t: AlarmTransition): Promise<void> {
    const { opts } = this;
    const actions = t.state === "ALARM" ? alarm.alarmActions : alarm.okActions;
    const topics = opts.topics.filter((topic) => actions.includes(topic.arn));
    const symbol = OPERATORS[alarm.comparisonOperator]?.symbol ?? alarm.comparisonOperator;
    const at = runTime(t.simTimeMs - opts.clock.t0);
    opts.note(
      `alarm ${alarm.logicalName}: ${t.state} at ${at} (${alarm.statistic} ${alarmValue(t.value)} ${t.state === "ALARM" ? symbol : `not ${symbol}`} ${alarm.threshold} on ${alarm.queueName})` +
        (topics.length > 0 ? `, notifying ${topics.map((x) => x.name).join(", ")}` : ""),
    );
    try {
      if (opts.created.includes(alarm.urn)) {
        await opts.cloudwatch.send(new SetAlarmStateCommand({ AlarmName: alarm.name, StateValue: t.state, StateReason: stateReason(alarm, t) }));
      }
    } catch (err) {
      opts.note(`alarm ${alarm.logicalName}: setting its state in moto failed: ${(err as Error).message}`);
    }
    const message = JSON.stringify(alarmMessage(alarm, t, opts.account));
    for (const topic of topics) {
      try {
        await opts.sns.send(new PublishCommand({ TopicArn: topic.arn, Subject: alarmSubject(alarm, t.state, opts.region), Message: message }));
        this.published += 1;
        const names = this.notified.get(alarm.urn) ?? new Set<string>();
        this.notified.set(alarm.urn, names.add(topic.name));
      } catch (err) {
        opts.note(`alarm ${alarm.logicalName}: publishing to ${topic.name} failed: ${(err as Error).message}`);
      }
    }
  }
}

/** The end-of-run account of every alarm, from its evaluation and what was published. Pure. */
export function alarmReport(args: {
  evaluations: AlarmEvaluation[];
  startMs: number;
  topics: LocalTopic[];
  notified: Map<string, Set<string>>;
  samples: number;
  sampleEverySimMs: number;
  published: number;
}): AlarmReport {
  const topicArns = new Set(args.topics.map((t) => t.arn));
  return {
    samples: args.samples,
    sampleEverySimMs: args.sampleEverySimMs,
    published: args.published,
    alarms: args.evaluations.map(({ alarm, transitions, unsupported }) => ({
      alarm: alarm.name,
      logicalName: alarm.logicalName,
      ...(alarm.queueName !== undefined ? { queue: alarm.queueName } : {}),
      statistic: alarm.statistic,
      comparisonOperator: alarm.comparisonOperator,
      ...(alarm.threshold !== undefined ? { threshold: alarm.threshold } : {}),
      periodSeconds: alarm.periodSeconds,
      evaluationPeriods: alarm.evaluationPeriods,
      firings: firingsOf(transitions, args.startMs),
      notified: [...(args.notified.get(alarm.urn) ?? [])],
      unreachableActions: alarm.alarmActions.filter((a) => !topicArns.has(a)),
      ...(unsupported !== undefined ? { unsupported } : {}),
    })),
  };
}
