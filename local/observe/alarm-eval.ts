/**
 * What CloudWatch would have done with the program's alarms, computed from the run's own samples:
 * moto stores alarms but evaluates none. The run samples two kinds of metric: every queue's
 * ApproximateNumberOfMessagesVisible, and a GPU fleet's GroupDesiredCapacity and
 * GroupInServiceInstances (which Auto Scaling publishes per minute once group metrics are on). An
 * alarm on one of them, or a metric-math alarm whose expression is `a`, `a + b` or `a - b` of them,
 * is evaluated; any other says why not. Pure (samples in, state changes out), so it
 * is tested without moto; ./alarm-watch.ts takes the samples and publishes the state changes.
 *
 * The model. SQS and Auto Scaling publish these metrics once a minute and the run samples each
 * once per simulated minute, so a sample stands for a datapoint. Samples fall
 * into the alarm's periods, aligned on the epoch as CloudWatch aligns them, and each period's
 * statistic is taken over its samples. The alarm is evaluated at every sample, as CloudWatch
 * re-evaluates on each new datapoint: over the latest `evaluationPeriods` periods, the current
 * one partial, it is in ALARM when at least `datapointsToAlarm` of them breach. A period without
 * samples counts as `treatMissingData` says. Only periods from the alarm's first sample on are
 * looked at: before the run the alarm did not exist.
 */
import type { LocalAlarm } from "../provision/topology-types";

/** One OK → ALARM transition an alarm would have made, in simulated ms since the run's start. */
export interface AlarmFiring {
  atMs: number;
  /** The statistic of the period that crossed the threshold, at that moment. */
  value: number;
  /** When it went back to OK; absent when it was still in ALARM at the end. */
  okAtMs?: number;
}

/** One reading of a metric (see {@link metricKey}), at simulated epoch ms. */
export interface MetricSample {
  simTimeMs: number;
  metric: string;
  value: number;
}

/** A metric's identity: namespace, name and dimensions (sorted), as CloudWatch tells metrics apart. Pure. */
export function metricKey(namespace: string, metricName: string, dimensions: Readonly<Record<string, string>>): string {
  const dims = Object.entries(dimensions)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return `${namespace}/${metricName}{${dims}}`;
}

/** A queue's ApproximateNumberOfMessagesVisible reading. */
export function queueSample(simTimeMs: number, queueName: string, visible: number): MetricSample {
  return { simTimeMs, metric: metricKey(SQS_VISIBLE.namespace, SQS_VISIBLE.metricName, { QueueName: queueName }), value: visible };
}

/** An Auto Scaling group's two sampled metrics at one instant. */
export function groupSamples(simTimeMs: number, groupName: string, desired: number, inService: number): MetricSample[] {
  const dims = { AutoScalingGroupName: groupName };
  return [
    { simTimeMs, metric: metricKey("AWS/AutoScaling", "GroupDesiredCapacity", dims), value: desired },
    { simTimeMs, metric: metricKey("AWS/AutoScaling", "GroupInServiceInstances", dims), value: inService },
  ];
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

const SQS_VISIBLE = { namespace: "AWS/SQS", metricName: "ApproximateNumberOfMessagesVisible", dimension: "QueueName" } as const;

/** The metrics the run samples, and the dimension that names what each is of; an alarm on anything else cannot be evaluated. */
export const SAMPLED_METRICS = [
  SQS_VISIBLE,
  { namespace: "AWS/AutoScaling", metricName: "GroupDesiredCapacity", dimension: "AutoScalingGroupName" },
  { namespace: "AWS/AutoScaling", metricName: "GroupInServiceInstances", dimension: "AutoScalingGroupName" },
] as const;

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

/** One metric an alarm reads, with the statistic it takes of it per period. */
interface SeriesInput {
  id: string;
  key: string;
  statistic: (a: Aggregate) => number;
}

/** What an alarm evaluates: its metrics, and how a period's value is made of their statistics. */
interface Series {
  inputs: SeriesInput[];
  value: (byId: ReadonlyMap<string, number>) => number;
}

/** One metric the alarm (or one of its queries, `id`) reads with a statistic, or why the samples cannot give it. */
function seriesInput(id: string, namespace: string, metricName: string, dimensions: Record<string, string>, stat: string): SeriesInput | string {
  const sampled = SAMPLED_METRICS.find((m) => m.namespace === namespace && m.metricName === metricName);
  const list = SAMPLED_METRICS.map((m) => `${m.namespace} ${m.metricName}`).join(", ");
  if (!sampled) return `watches ${namespace} ${metricName}; the run samples only ${list}`;
  if (dimensions[sampled.dimension] === undefined) return `has no ${sampled.dimension} dimension`;
  const statistic = STATISTICS[stat];
  if (!statistic) return `statistic ${stat || "(none)"} is not supported (${Object.keys(STATISTICS).join(", ")})`;
  return { id, key: metricKey(namespace, metricName, dimensions), statistic };
}

/** The alarm's series, or why the samples cannot evaluate it. */
function seriesOf(alarm: LocalAlarm): Series | string {
  if (alarm.queries === undefined) {
    if (!alarm.namespace) return "is a metric-math alarm whose queries were not recorded";
    const input = seriesInput("m", alarm.namespace, alarm.metricName, alarm.dimensions, alarm.statistic);
    return typeof input === "string" ? input : { inputs: [input], value: (v) => v.get("m") ?? Number.NaN };
  }
  const returned = alarm.queries.filter((q) => q.returnData);
  if (returned.length !== 1) return `returns ${returned.length} series; an alarm needs exactly one`;
  const inputs: SeriesInput[] = [];
  for (const q of alarm.queries) {
    if (q.metric === undefined) continue;
    const input = seriesInput(q.id, q.metric.namespace, q.metric.metricName, q.metric.dimensions, q.metric.stat);
    if (typeof input === "string") return `query ${q.id} ${input}`;
    if (q.metric.periodSeconds !== alarm.periodSeconds)
      return `query ${q.id}'s period ${q.metric.periodSeconds} s differs from the alarm's ${alarm.periodSeconds} s`;
    inputs.push(input);
  }
  const out = returned[0]!;
  if (out.metric !== undefined) return { inputs, value: (v) => v.get(out.id) ?? Number.NaN };
  const expression = parseExpression(out.expression ?? "");
  if (typeof expression === "string") return `query ${out.id} ${expression}`;
  const unknown = expression.ids.filter((id) => !inputs.some((i) => i.id === id));
  if (unknown.length > 0) return `query ${out.id}'s expression names ${unknown.join(", ")}, not a metric query of the alarm`;
  return { inputs, value: expression.value };
}

/** The metric math the evaluator knows: `a`, `a + b`, `a - b` (ids of metric queries). Pure. */
export function parseExpression(expression: string): { ids: string[]; value: (byId: ReadonlyMap<string, number>) => number } | string {
  const m = /^\s*([a-z]\w*)\s*(?:([+-])\s*([a-z]\w*)\s*)?$/.exec(expression);
  if (!m) return `expression "${expression}" is not supported (only a, a + b, a - b)`;
  const [, a, op, b] = m as unknown as [string, string, string | undefined, string | undefined];
  const get = (v: ReadonlyMap<string, number>, id: string) => v.get(id) ?? Number.NaN;
  if (op === undefined || b === undefined) return { ids: [a], value: (v) => get(v, a) };
  return { ids: [a, b], value: op === "+" ? (v) => get(v, a) + get(v, b) : (v) => get(v, a) - get(v, b) };
}

/** Why the samples cannot evaluate this alarm, or undefined when they can. */
export function unsupportedReason(alarm: LocalAlarm): string | undefined {
  const series = seriesOf(alarm);
  if (typeof series === "string") return series;
  if (!(alarm.comparisonOperator in OPERATORS)) return `comparison ${alarm.comparisonOperator} is not supported (${Object.keys(OPERATORS).join(", ")})`;
  if (alarm.threshold === undefined) return "has no static threshold";
  if (!Number.isInteger(alarm.periodSeconds) || alarm.periodSeconds < 60 || alarm.periodSeconds % 60 !== 0) {
    return `period ${alarm.periodSeconds} s is not a whole number of minutes (the sampled metrics are published once a minute)`;
  }
  if (!(alarm.evaluationPeriods >= 1) || !(alarm.datapointsToAlarm >= 1) || alarm.datapointsToAlarm > alarm.evaluationPeriods) {
    return `${alarm.datapointsToAlarm} out of ${alarm.evaluationPeriods} datapoints is not a valid rule`;
  }
  if (!MISSING_DATA.includes(alarm.treatMissingData)) return `treatMissingData ${alarm.treatMissingData} is not supported (${MISSING_DATA.join(", ")})`;
  return undefined;
}

/** The metric keys an alarm reads (none when it cannot be evaluated). */
export function metricsOf(alarm: LocalAlarm): string[] {
  const series = seriesOf(alarm);
  return typeof series === "string" ? [] : series.inputs.map((i) => i.key);
}

/** Every alarm's state changes over the samples (any order; each alarm reads its own metrics). */
export function evaluateAlarms(alarms: LocalAlarm[], samples: MetricSample[]): AlarmEvaluation[] {
  const sorted = [...samples].sort((a, b) => a.simTimeMs - b.simTimeMs);
  return alarms.map((alarm) => {
    const unsupported = unsupportedReason(alarm);
    const series = seriesOf(alarm);
    if (unsupported !== undefined || typeof series === "string") return { alarm, transitions: [], unsupported: unsupported ?? String(series) };
    const keys = new Set(series.inputs.map((i) => i.key));
    const own = sorted.filter((x) => keys.has(x.metric));
    return { alarm, transitions: transitionsOf(alarm, series, own) };
  });
}

/** A period's value: the series over its inputs' statistics, or undefined while an input has no sample in it. */
function periodValue(series: Series, period: ReadonlyMap<string, Aggregate> | undefined): number | undefined {
  if (period === undefined) return undefined;
  const byId = new Map<string, number>();
  for (const input of series.inputs) {
    const agg = period.get(input.key);
    if (agg === undefined) return undefined;
    byId.set(input.id, input.statistic(agg));
  }
  return series.value(byId);
}

function transitionsOf(alarm: LocalAlarm, series: Series, samples: MetricSample[]): AlarmTransition[] {
  const periodMs = alarm.periodSeconds * 1000;
  const operator = OPERATORS[alarm.comparisonOperator];
  const threshold = alarm.threshold;
  // unsupportedReason has ruled these out; the checks narrow the types.
  if (!operator || threshold === undefined) return [];
  /** By period index, by metric key. */
  const periods = new Map<number, Map<string, Aggregate>>();
  const transitions: AlarmTransition[] = [];
  let firstPeriod: number | undefined;
  let state: AlarmState = "OK";
  for (let i = 0; i < samples.length; i++) {
    const sample = samples[i]!;
    const period = Math.floor(sample.simTimeMs / periodMs);
    firstPeriod ??= period;
    const byKey = periods.get(period) ?? new Map<string, Aggregate>();
    const agg = byKey.get(sample.metric) ?? { max: -Infinity, min: Infinity, sum: 0, count: 0 };
    agg.max = Math.max(agg.max, sample.value);
    agg.min = Math.min(agg.min, sample.value);
    agg.sum += sample.value;
    agg.count += 1;
    byKey.set(sample.metric, agg);
    periods.set(period, byKey);
    // Evaluated once per instant, after all of that instant's samples (a round reads every metric at once).
    if (samples[i + 1]?.simTimeMs === sample.simTimeMs) continue;

    // The window: the latest evaluationPeriods periods, back to the first sampled one.
    const breaching: Datapoint[] = [];
    let breachingCount = 0;
    let considered = 0;
    for (let p = period; p >= firstPeriod && considered < alarm.evaluationPeriods; p--) {
      const value = periodValue(series, periods.get(p));
      if (value === undefined) {
        if (alarm.treatMissingData === "missing" || alarm.treatMissingData === "ignore") continue;
        considered += 1;
        if (alarm.treatMissingData === "breaching") breachingCount += 1;
        continue;
      }
      considered += 1;
      if (operator.breaches(value, threshold)) {
        breachingCount += 1;
        breaching.push({ periodStartMs: p * periodMs, value });
      }
    }
    const next: AlarmState = breachingCount >= alarm.datapointsToAlarm ? "ALARM" : "OK";
    const now = periodValue(series, byKey);
    if (next !== state && now !== undefined) {
      transitions.push({ state: next, simTimeMs: sample.simTimeMs, value: now, breaching: breaching.reverse() });
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
      ...(alarm.queries !== undefined
        ? { Metrics: mathMetrics(alarm) }
        : {
            MetricName: alarm.metricName,
            Namespace: alarm.namespace,
            StatisticType: "Statistic",
            Statistic: alarm.statistic.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase(),
            Unit: null,
            Dimensions: Object.entries(alarm.dimensions).map(([name, value]) => ({ value, name })),
          }),
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

/** A metric-math alarm's queries as its Trigger's `Metrics`, in place of one metric, as CloudWatch sends them. */
function mathMetrics(alarm: LocalAlarm): Array<Record<string, unknown>> {
  return (alarm.queries ?? []).map((q) => ({
    Id: q.id,
    ...(q.expression !== undefined ? { Expression: q.expression } : {}),
    ...(q.label !== undefined ? { Label: q.label } : {}),
    ReturnData: q.returnData,
    ...(q.metric !== undefined
      ? {
          MetricStat: {
            Metric: {
              Dimensions: Object.entries(q.metric.dimensions).map(([name, value]) => ({ value, name })),
              MetricName: q.metric.metricName,
              Namespace: q.metric.namespace,
            },
            Period: q.metric.periodSeconds,
            Stat: q.metric.stat,
          },
        }
      : {}),
  }));
}

/** What an alarm watches, in a few words for the run's notes: its statistic (or its math's label) and what it is of. */
export function watchedWords(alarm: LocalAlarm): { what: string; on: string } {
  if (alarm.queries === undefined) return { what: alarm.statistic, on: alarm.queueName ?? Object.values(alarm.dimensions).join(", ") };
  const out = alarm.queries.find((q) => q.returnData);
  const dims = [...new Set(alarm.queries.flatMap((q) => Object.values(q.metric?.dimensions ?? {})))];
  return { what: out?.label ?? out?.expression ?? out?.id ?? "", on: dims.join(", ") };
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
