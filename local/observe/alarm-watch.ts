/**
 * CloudWatch's part in the local run, which moto does not play: takes the depth of every queue
 * an alarm watches once per simulated minute (SQS publishes its metrics per minute) from the run's
 * depth sampler (./depth-sampler.ts), evaluates the alarms after each such round (./alarm-eval.ts),
 * and on each state change sets the alarm's state in moto and publishes CloudWatch's message to
 * the alarm's actions that are topics in moto, so the alert topic is used for real. `report()` is
 * the end-of-run account.
 */
import { SetAlarmStateCommand, type CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { PublishCommand, type SNSClient } from "@aws-sdk/client-sns";
import {
  alarmMessage,
  alarmSubject,
  alarmValue,
  evaluateAlarms,
  firingsOf,
  OPERATORS,
  runTime,
  stateReason,
  unsupportedReason,
  type AlarmEvaluation,
  type AlarmFiring,
  type AlarmTransition,
  groupSamples,
  type MetricSample,
  metricsOf,
  queueSample,
  watchedWords,
} from "./alarm-eval";
import type { SimClock } from "../hosts/clock";
import type { DepthRound, DepthSource } from "./depth-sampler";
import type { LocalAlarm, LocalQueue, LocalTopic } from "../provision/topology-types";

/** What the run's queue-depth samples say of one alarm. */
export interface AlarmOutcome {
  alarm: string;
  logicalName: string;
  queue?: string;
  statistic: string;
  comparisonOperator: string;
  threshold?: number;
  periodSeconds: number;
  evaluationPeriods: number;
  firings: AlarmFiring[];
  /** Names of the topics in moto the state changes were published to. */
  notified: string[];
  /** Action ARNs that are no topic in moto: nothing was published there. */
  unreachableActions: string[];
  /** Why the alarm could not be evaluated from queue depths; absent when it was. */
  unsupported?: string;
}

/** The end-of-run alarm block, and `--json`'s `alarms`. */
export interface AlarmReport {
  /** Queue-depth samples taken, and the simulated time between two rounds of them. */
  samples: number;
  sampleEverySimMs: number;
  /** SNS messages published to topics in moto (ALARM and OK state changes). */
  published: number;
  alarms: AlarmOutcome[];
}

/** Sampling faster than this only loads moto: at high speeds a round then spans several simulated minutes. */
export const MIN_SAMPLE_REAL_MS = 200;

/** Real ms between two of the alarms' samples: one simulated minute, but not faster than MIN_SAMPLE_REAL_MS. */
export function sampleEveryRealMs(speed: number): number {
  return Math.max(MIN_SAMPLE_REAL_MS, 60_000 / speed);
}

export interface AlarmWatcherOptions {
  alarms: LocalAlarm[];
  queues: LocalQueue[];
  topics: LocalTopic[];
  /** URNs of the resources created in moto: an alarm's state is set there only if it exists. */
  created: string[];
  /**
   * The GPU fleet's group as Auto Scaling's metrics would report it (GroupDesiredCapacity,
   * GroupInServiceInstances), read at each alarm sample; absent without a fleet.
   */
  group?: () => { groupName: string; desired: number; inService: number };
  clock: SimClock;
  /** The run's depth sampler; its rounds must come every sampleEveryRealMs(speed), or a whole fraction of it. */
  depths: DepthSource;
  sns: SNSClient;
  cloudwatch: CloudWatchClient;
  account: string;
  region: string;
  note: (line: string) => void;
}

export class AlarmWatcher {
  private readonly samples: MetricSample[] = [];
  /** Transitions already acted on, by alarm URN, time and state. */
  private readonly acted = new Set<string>();
  /** Topic names published to, by alarm URN. */
  private readonly notified = new Map<string, Set<string>>();
  private published = 0;
  private readonly watched: LocalQueue[];
  /** An alarm reads the fleet group's metrics: each alarm sample reads them too. */
  private readonly groupWatched: boolean;
  private readonly everyRealMs: number;
  /** The sampler's rounds per alarm sample. */
  private readonly roundsPerSample: number;
  private unsubscribe?: () => void;
  private round?: Promise<void>;
  private stopped = false;

  constructor(private readonly opts: AlarmWatcherOptions) {
    const names = new Set(opts.alarms.filter((a) => unsupportedReason(a) === undefined).map((a) => a.queueName));
    this.watched = opts.queues.filter((q) => names.has(q.name));
    const groupName = opts.group?.().groupName;
    this.groupWatched = groupName !== undefined && opts.alarms.some((a) => metricsOf(a).some((k) => k.includes(`{AutoScalingGroupName=${groupName}}`)));
    this.everyRealMs = sampleEveryRealMs(opts.clock.speed);
    this.roundsPerSample = Math.max(1, Math.round(this.everyRealMs / opts.depths.everyRealMs));
  }

  /** Takes the sampler's round at start, then one per simulated minute until `stop()`. */
  start(): void {
    const evaluable = this.evaluate().filter((e) => e.unsupported === undefined).length;
    const everySimMs = this.everyRealMs * this.opts.clock.speed;
    const every = everySimMs === 60_000 ? "once per simulated minute" : `every ${alarmValue(everySimMs / 60_000)} simulated minutes`;
    const queues = this.watched.length === 1 ? (this.watched[0]?.logicalName ?? "") : `${this.watched.length} queues`;
    const group = this.groupWatched ? ` and the GPU fleet's group metrics` : "";
    this.opts.note(`alarms: sampling the depth of ${queues}${group} ${every} for ${evaluable} of ${this.opts.alarms.length} alarms (moto evaluates none)`);
    if (this.watched.length === 0 && !this.groupWatched) return;
    this.unsubscribe = this.opts.depths.subscribe((round) => {
      // Rounds are evenly spaced slots (see roundEveryRealMs): every n-th one is a simulated minute.
      if (this.stopped || round.index % this.roundsPerSample !== 0) return;
      this.round = this.sampleRound(round).catch((err: unknown) =>
        // Every AWS call in a round handles its own failure; this is for a bug, which must not end the run.
        this.opts.note(`alarms: a sampling round failed: ${(err as Error).stack ?? String(err)}`),
      );
      return this.round;
    });
  }

  /** Takes no more samples; the round under way still publishes its state changes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
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
    return evaluateAlarms(this.opts.alarms, this.samples).map((e) => {
      if (e.unsupported !== undefined) return e;
      if (e.alarm.queueName !== undefined && !sampled.has(e.alarm.queueName))
        return { ...e, unsupported: `watches ${e.alarm.queueName}, a queue the program does not declare` };
      if (e.alarm.queueName === undefined && !this.groupWatched && metricsOf(e.alarm).some((k) => k.startsWith("AWS/AutoScaling/")))
        return { ...e, unsupported: "watches an Auto Scaling group the run does not play (no GPU fleet)" };
      return e;
    });
  }

  /** The round's reading of every watched queue, then the alarms' new state changes. */
  private async sampleRound(round: DepthRound): Promise<void> {
    for (const queue of this.watched) {
      const depth = round.depths.get(queue.name);
      // A missed reading (the sampler notes it) is a missing datapoint, which the alarm's treatMissingData covers.
      if (depth !== undefined) this.samples.push(queueSample(round.simTimeMs, queue.name, depth.visible));
    }
    if (this.groupWatched && this.opts.group) {
      const g = this.opts.group();
      this.samples.push(...groupSamples(round.simTimeMs, g.groupName, g.desired, g.inService));
    }
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
    const { what, on } = watchedWords(alarm);
    opts.note(
      `alarm ${alarm.logicalName}: ${t.state} at ${at} (${what} ${alarmValue(t.value)} ${t.state === "ALARM" ? symbol : `not ${symbol}`} ${alarm.threshold} on ${on})` +
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
      // A metric-math alarm has no statistic of its own: its returned query's label stands in the tables.
      statistic: alarm.queries !== undefined ? watchedWords(alarm).what : alarm.statistic,
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
