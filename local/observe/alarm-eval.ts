/**
 * What CloudWatch would have done with the program's queue-depth alarms, computed from the run's
 * own samples: moto stores alarms but evaluates none. Pure (samples in, state changes out), so it
 * is tested without moto; ./alarm-watch.ts takes the samples and publishes the state changes.
 *
 * The model. SQS publishes ApproximateNumberOfMessagesVisible once a minute and the run samples
 * every watched queue once per simulated minute, so a sample stands for a datapoint. Samples fall
 * into the alarm's periods, aligned on the epoch as CloudWatch aligns them, and each period's
 * statistic is taken over its samples. The alarm is evaluated at every sample, as CloudWatch
 * re-evaluates on each new datapoint: over the latest `evaluationPeriods` periods, the current
 * one partial, it is in ALARM when at least `datapointsToAlarm` of them breach. A period without
 * samples counts as `treatMissingData` says. Only periods from the alarm's first sample on are
 * looked at: before the run the alarm did not exist.
 */
import type { LocalAlarm } from "../provision/topology";

/** One OK → ALARM transition an alarm would have made, in simulated ms since the run's start. */
export interface AlarmFiring {
  atMs: number;
  /** The statistic of the period that crossed the threshold, at that moment. */
  value: number;
  /** When it went back to OK; absent when it was still in ALARM at the end. */
  okAtMs?: number;
}

/** One reading of a queue's ApproximateNumberOfMessagesVisible, at simulated epoch ms. */
export interface QueueSample {
  simTimeMs: number;
  queueName: string;
  visible: number;
}

export type AlarmState = "OK" | "ALARM";

/** A period's statistic, with the period's start (simulated epoch ms). */
export interface Datapoint {
  periodStartMs: number;
  value: number;
}

export interface AlarmTransition {
  state: AlarmState;
  /** The sample that changed the state. */
  simTimeMs: number;
  /** The statistic of the sample's period at that moment. */
  value: number;
  /** The breaching datapoints of the window that decided it (empty for a change to OK without any). */
  breaching: Datapoint[];
}

export interface AlarmEvaluation {
  alarm: LocalAlarm;
  /** Alternating ALARM and OK, starting with ALARM (the alarm starts OK). */
  transitions: AlarmTransition[];
  /** Why the samples cannot say anything of this alarm; it then has no transitions. */
  unsupported?: string;
}

/** The metric the run samples; an alarm on anything else cannot be evaluated. */
export const SAMPLED_METRIC = { namespace: "AWS/SQS", metricName: "ApproximateNumberOfMessagesVisible" } as const;

interface Aggregate {
  max: number;
  min: number;
  sum: number;
  count: number;
}

const STATISTICS: Record<string, (a: Aggregate) => number> = {
  Maximum: (a) => a.max,
  Minimum: (a) => a.min,
  Sum: (a) => a.sum,
  Average: (a) => a.sum / a.count,
  SampleCount: (a) => a.count,
};

interface Operator {
  symbol: string;
  /** As CloudWatch words it in a state reason. */
  words: string;
  breaches: (value: number, threshold: number) => boolean;
}

export const OPERATORS: Record<string, Operator> = {
  GreaterThanOrEqualToThreshold: { symbol: "≥", words: "greater than or equal to", breaches: (v, t) => v >= t },
  GreaterThanThreshold: { symbol: ">", words: "greater than", breaches: (v, t) => v > t },
  LessThanThreshold: { symbol: "<", words: "less than", breaches: (v, t) => v < t },
  LessThanOrEqualToThreshold: { symbol: "≤", words: "less than or equal to", breaches: (v, t) => v <= t },
};

/** `missing` and `ignore` both look further back for data; evaluated at samples only, they do not differ. */
const MISSING_DATA = ["notBreaching", "breaching", "missing", "ignore"];

/** Why the samples cannot evaluate this alarm, or undefined when they can. */
export function unsupportedReason(alarm: LocalAlarm): string | undefined {
  if (alarm.namespace !== SAMPLED_METRIC.namespace || alarm.metricName !== SAMPLED_METRIC.metricName) {
    return `watches ${alarm.namespace || "a metric-math expression"} ${alarm.metricName}; the run samples only ${SAMPLED_METRIC.namespace} ${SAMPLED_METRIC.metricName}`;
  }
  if (alarm.queueName === undefined) return "has no QueueName dimension";
  if (!(alarm.statistic in STATISTICS)) return `statistic ${alarm.statistic || "(none)"} is not supported (${Object.keys(STATISTICS).join(", ")})`;
  if (!(alarm.comparisonOperator in OPERATORS)) return `comparison ${alarm.comparisonOperator} is not supported (${Object.keys(OPERATORS).join(", ")})`;
  if (alarm.threshold === undefined) return "has no static threshold";
  if (!Number.isInteger(alarm.periodSeconds) || alarm.periodSeconds < 60 || alarm.periodSeconds % 60 !== 0) {
    return `period ${alarm.periodSeconds} s is not a whole number of minutes (SQS publishes once a minute)`;
  }
  if (!(alarm.evaluationPeriods >= 1) || !(alarm.datapointsToAlarm >= 1) || alarm.datapointsToAlarm > alarm.evaluationPeriods) {
    return `${alarm.datapointsToAlarm} out of ${alarm.evaluationPeriods} datapoints is not a valid rule`;
  }
  if (!MISSING_DATA.includes(alarm.treatMissingData)) return `treatMissingData ${alarm.treatMissingData} is not supported (${MISSING_DATA.join(", ")})`;
  return undefined;
}

/** Every alarm's state changes over the samples (any order; each alarm reads its queue's). */
export function evaluateAlarms(alarms: LocalAlarm[], samples: QueueSample[]): AlarmEvaluation[] {
  const byQueue = new Map<string, QueueSample[]>();
  for (const sample of [...samples].sort((a, b) => a.simTimeMs - b.simTimeMs)) {
    const list = byQueue.get(sample.queueName) ?? [];
    list.push(sample);
    byQueue.set(sample.queueName, list);
  }
  return alarms.map((alarm) => {
    const unsupported = unsupportedReason(alarm);
    if (unsupported !== undefined) return { alarm, transitions: [], unsupported };
    return { alarm, transitions: transitionsOf(alarm, byQueue.get(alarm.queueName ?? "") ?? []) };
  });
}

function transitionsOf(alarm: LocalAlarm, samples: QueueSample[]): AlarmTransition[] {
  const periodMs = alarm.periodSeconds * 1000;
  const statistic = STATISTICS[alarm.statistic];
  const operator = OPERATORS[alarm.comparisonOperator];
  const threshold = alarm.threshold;
  // unsupportedReason has ruled these out; the checks narrow the types.
  if (!statistic || !operator || threshold === undefined) return [];
  const periods = new Map<number, Aggregate>();
  const transitions: AlarmTransition[] = [];
  let firstPeriod: number | undefined;
  let state: AlarmState = "OK";
  for (const sample of samples) {
    const period = Math.floor(sample.simTimeMs / periodMs);
    firstPeriod ??= period;
    const agg = periods.get(period) ?? { max: -Infinity, min: Infinity, sum: 0, count: 0 };
    agg.max = Math.max(agg.max, sample.visible);
    agg.min = Math.min(agg.min, sample.visible);
    agg.sum += sample.visible;
    agg.count += 1;
    periods.set(period, agg);

    // The window: the latest evaluationPeriods periods, back to the first sampled one.
    const breaching: Datapoint[] = [];
    let breachingCount = 0;
    let considered = 0;
    for (let p = period; p >= firstPeriod && considered < alarm.evaluationPeriods; p--) {
      const inPeriod = periods.get(p);
      if (inPeriod === undefined) {
        if (alarm.treatMissingData === "missing" || alarm.treatMissingData === "ignore") continue;
        considered += 1;
        if (alarm.treatMissingData === "breaching") breachingCount += 1;
        continue;
      }
      considered += 1;
      const value = statistic(inPeriod);
      if (operator.breaches(value, threshold)) {
        breachingCount += 1;
        breaching.push({ periodStartMs: p * periodMs, value });
      }
    }
    const next: AlarmState = breachingCount >= alarm.datapointsToAlarm ? "ALARM" : "OK";
    if (next !== state) {
      transitions.push({ state: next, simTimeMs: sample.simTimeMs, value: statistic(agg), breaching: breaching.reverse() });
      state = next;
    }
  }
  return transitions;
}

/** The ALARM transitions, each with its return to OK, in ms since the run's start. */
export function firingsOf(transitions: AlarmTransition[], startMs: number): AlarmFiring[] {
  const firings: AlarmFiring[] = [];
  for (const t of transitions) {
    if (t.state === "ALARM") firings.push({ atMs: t.simTimeMs - startMs, value: t.value });
    else {
      const open = firings.at(-1);
      if (open && open.okAtMs === undefined) open.okAtMs = t.simTimeMs - startMs;
    }
  }
  return firings;
}

// ---------------------------------------------------------------------------------------------
// The message CloudWatch publishes to an alarm's SNS actions

/** CloudWatch's number format in state reasons: always one decimal at least (`3.0`). */
function reasonNumber(n: number): string {
  return Number.isInteger(n) ? n.toFixed(1) : String(n);
}

/** CloudWatch's datapoint timestamp in state reasons: `24/11/26 01:55:00` (UTC). */
function reasonTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getUTCDate())}/${two(d.getUTCMonth() + 1)}/${two(d.getUTCFullYear() % 100)} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
}

/** The state reason, worded as CloudWatch words it. */
export function stateReason(alarm: LocalAlarm, t: AlarmTransition): string {
  const words = OPERATORS[alarm.comparisonOperator]?.words ?? alarm.comparisonOperator;
  const threshold = reasonNumber(alarm.threshold ?? Number.NaN);
  if (t.state === "ALARM") {
    const points = t.breaching.map((d) => `${reasonNumber(d.value)} (${reasonTime(d.periodStartMs)})`).join(", ");
    const n = t.breaching.length;
    return (
      `Threshold Crossed: ${n} out of the last ${alarm.evaluationPeriods} datapoints [${points}] ${n === 1 ? "was" : "were"} ${words} the threshold (${threshold}) ` +
      `(minimum ${alarm.datapointsToAlarm} datapoint${alarm.datapointsToAlarm === 1 ? "" : "s"} for OK -> ALARM transition).`
    );
  }
  const period = Math.floor(t.simTimeMs / (alarm.periodSeconds * 1000)) * alarm.periodSeconds * 1000;
  return `Threshold Crossed: 1 datapoint [${reasonNumber(t.value)} (${reasonTime(period)})] was not ${words} the threshold (${threshold}) (minimum 1 datapoint for ALARM -> OK transition).`;
}

/**
 * The JSON CloudWatch publishes to an alarm's SNS actions on a state change, with its field names
 * and casing (the Trigger's statistic upper-case, its dimensions `{ value, name }`), so whatever
 * reads the topic reads what AWS would send.
 */
export function alarmMessage(alarm: LocalAlarm, t: AlarmTransition, account: string): Record<string, unknown> {
  return {
    AlarmName: alarm.name,
    AlarmDescription: alarm.description ?? null,
    AWSAccountId: account,
    NewStateValue: t.state,
    NewStateReason: stateReason(alarm, t),
    StateChangeTime: new Date(t.simTimeMs).toISOString().replace("Z", "+0000"),
    AlarmArn: alarm.arn,
    OldStateValue: t.state === "ALARM" ? "OK" : "ALARM",
    AlarmActions: alarm.alarmActions,
    OKActions: alarm.okActions,
    InsufficientDataActions: [],
    Trigger: {
      MetricName: alarm.metricName,
      Namespace: alarm.namespace,
      StatisticType: "Statistic",
      Statistic: alarm.statistic.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase(),
      Unit: null,
      Dimensions: Object.entries(alarm.dimensions).map(([name, value]) => ({ value, name })),
      Period: alarm.periodSeconds,
      EvaluationPeriods: alarm.evaluationPeriods,
      DatapointsToAlarm: alarm.datapointsToAlarm,
      ComparisonOperator: alarm.comparisonOperator,
      Threshold: alarm.threshold ?? null,
      TreatMissingData: alarm.treatMissingData,
      EvaluateLowSampleCountPercentile: "",
    },
  };
}

/** The SNS subject CloudWatch uses, `ALARM: "name" in <region>`, cut to SNS's 100 ASCII characters. */
export function alarmSubject(alarm: LocalAlarm, state: AlarmState, region: string): string {
  const subject = `${state}: "${alarm.name}" in ${region}`;
  return subject.length <= 100 ? subject : `${subject.slice(0, 97)}...`;
}

/** Simulated time since the run's start, `+hh:mm:ss` (hours keep counting past 99). */
export function runTime(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const two = (n: number) => String(n).padStart(2, "0");
  return `+${two(Math.floor(total / 3600))}:${two(Math.floor(total / 60) % 60)}:${two(total % 60)}`;
}

/** A statistic's value: whole numbers as they are, others to two decimals (an Average). */
export function alarmValue(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}
