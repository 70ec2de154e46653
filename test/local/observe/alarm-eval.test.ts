/** local/observe/alarm-eval.ts and alarmReport: what CloudWatch would have done with the run's queue-depth samples. */
import { expect } from "chai";
import {
  type AlarmFiring,
  alarmMessage,
  alarmSubject,
  type AlarmTransition,
  evaluateAlarms,
  firingsOf,
  groupSamples,
  type MetricSample,
  parseExpression,
  queueSample,
  stateReason,
} from "../../../local/observe/alarm-eval";
import { alarmReport } from "../../../local/observe/alarm-watch";
import type { LocalAlarm } from "../../../local/provision/topology-types";

const MINUTE = 60_000;
/** 2026-11-24 01:55 UTC: on a 5-minute boundary, as CloudWatch aligns periods. */
const T0 = Date.UTC(2026, 10, 24, 1, 55);
const TOPIC = "arn:aws:sns:us-east-1:123456789012:platform-alerts-1234567";

/** An alarm as infra/lib/queue-depth-alarm.ts declares it, with `over` applied. */
function alarm(over: Partial<LocalAlarm> = {}): LocalAlarm {
  return {
    urn: "urn:pulumi:dev::encache::aws:cloudwatch/metricAlarm:MetricAlarm::ingest-dlq-depth",
    logicalName: "ingest-dlq-depth",
    name: "ingest-dlq-depth-abc1234",
    arn: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:ingest-dlq-depth-abc1234",
    description: "ingest DLQ has messages",
    namespace: "AWS/SQS",
    metricName: "ApproximateNumberOfMessagesVisible",
    dimensions: { QueueName: "ingest-dlq-1" },
    queueName: "ingest-dlq-1",
    statistic: "Maximum",
    periodSeconds: 300,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    threshold: 1,
    comparisonOperator: "GreaterThanOrEqualToThreshold",
    treatMissingData: "notBreaching",
    alarmActions: [TOPIC],
    okActions: [TOPIC],
    ...over,
  };
}

/** One sample per minute from T0 (`null` skips that minute: a missing reading). */
function perMinute(values: Array<number | null>, queueName = "ingest-dlq-1"): MetricSample[] {
  return values.flatMap((visible, i) => (visible === null ? [] : [queueSample(T0 + i * MINUTE, queueName, visible)]));
}

function firings(a: LocalAlarm, samples: MetricSample[]): AlarmFiring[] {
  const [evaluation] = evaluateAlarms([a], samples);
  return firingsOf(evaluation?.transitions ?? [], T0);
}

const at = (minute: number) => minute * MINUTE;

describe("evaluateAlarms", () => {
  describe("each comparison operator (one-minute periods, threshold 3, depths 1 3 5 3 1)", () => {
    const cases: Array<{ operator: string; expected: AlarmFiring[] }> = [
      { operator: "GreaterThanOrEqualToThreshold", expected: [{ atMs: at(1), value: 3, okAtMs: at(4) }] },
      { operator: "GreaterThanThreshold", expected: [{ atMs: at(2), value: 5, okAtMs: at(3) }] },
      {
        operator: "LessThanThreshold",
        expected: [
          { atMs: at(0), value: 1, okAtMs: at(1) },
          { atMs: at(4), value: 1 },
        ],
      },
      {
        operator: "LessThanOrEqualToThreshold",
        expected: [
          { atMs: at(0), value: 1, okAtMs: at(2) },
          { atMs: at(3), value: 3 },
        ],
      },
    ];
    for (const c of cases) {
      it(c.operator, () => {
        // Prepare
        const a = alarm({ comparisonOperator: c.operator, threshold: 3, periodSeconds: 60 });
        // Act
        const result = firings(a, perMinute([1, 3, 5, 3, 1]));
        // Assess
        expect(result).to.deep.equal(c.expected);
      });
    }
  });

  describe("each statistic over a five-minute period (depths 2 8 4 0 6, then 1 in the next period)", () => {
    // The period's statistic so far crosses at the listed minute (CloudWatch re-evaluates the
    // partial period on each datapoint); the next period's single 1 ends it.
    const cases: Array<{ statistic: string; operator: string; threshold: number; expected: AlarmFiring[] }> = [
      { statistic: "Maximum", operator: "GreaterThanOrEqualToThreshold", threshold: 8, expected: [{ atMs: at(1), value: 8, okAtMs: at(5) }] },
      { statistic: "Minimum", operator: "LessThanOrEqualToThreshold", threshold: 0, expected: [{ atMs: at(3), value: 0, okAtMs: at(5) }] },
      { statistic: "Sum", operator: "GreaterThanOrEqualToThreshold", threshold: 14, expected: [{ atMs: at(2), value: 14, okAtMs: at(5) }] },
      // The running average falls back under 5 within the period: (2 + 8 + 4) / 3.
      { statistic: "Average", operator: "GreaterThanOrEqualToThreshold", threshold: 5, expected: [{ atMs: at(1), value: 5, okAtMs: at(2) }] },
      { statistic: "SampleCount", operator: "GreaterThanOrEqualToThreshold", threshold: 4, expected: [{ atMs: at(3), value: 4, okAtMs: at(5) }] },
    ];
    for (const c of cases) {
      it(`${c.statistic} ${c.operator} ${c.threshold}`, () => {
        // Prepare
        const a = alarm({ statistic: c.statistic, comparisonOperator: c.operator, threshold: c.threshold });
        // Act
        const result = firings(a, perMinute([2, 8, 4, 0, 6, 1]));
        // Assess
        expect(result).to.deep.equal(c.expected);
      });
    }
  });

  describe("several evaluation periods (one-minute periods, Maximum ≥ 1, depths 1 1 0 1 1 1 0)", () => {
    const cases: Array<{ title: string; evaluationPeriods: number; datapointsToAlarm: number; expected: AlarmFiring[] }> = [
      {
        title: "3 of 3 needs three breaching periods in a row",
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        expected: [{ atMs: at(5), value: 1, okAtMs: at(6) }],
      },
      {
        title: "2 of 3 fires on the second and holds through one quiet period",
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        expected: [{ atMs: at(1), value: 1 }],
      },
      {
        title: "1 of 1 follows every period",
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        expected: [
          { atMs: at(0), value: 1, okAtMs: at(2) },
          { atMs: at(3), value: 1, okAtMs: at(6) },
        ],
      },
    ];
    for (const c of cases) {
      it(c.title, () => {
        // Prepare
        const a = alarm({ periodSeconds: 60, evaluationPeriods: c.evaluationPeriods, datapointsToAlarm: c.datapointsToAlarm });
        // Act
        const result = firings(a, perMinute([1, 1, 0, 1, 1, 1, 0]));
        // Assess
        expect(result).to.deep.equal(c.expected);
      });
    }
  });

  describe("a period without samples (2 of 2, one-minute periods, depths 1 – 1)", () => {
    const cases: Array<{ treatMissingData: string; expected: AlarmFiring[] }> = [
      { treatMissingData: "notBreaching", expected: [] },
      { treatMissingData: "breaching", expected: [{ atMs: at(2), value: 1 }] },
      // Looks past the gap to the period before it.
      { treatMissingData: "missing", expected: [{ atMs: at(2), value: 1 }] },
      { treatMissingData: "ignore", expected: [{ atMs: at(2), value: 1 }] },
    ];
    for (const c of cases) {
      it(`treatMissingData ${c.treatMissingData}`, () => {
        // Prepare
        const a = alarm({ periodSeconds: 60, evaluationPeriods: 2, datapointsToAlarm: 2, treatMissingData: c.treatMissingData });
        // Act
        const result = firings(a, perMinute([1, null, 1]));
        // Assess
        expect(result).to.deep.equal(c.expected);
      });
    }
  });

  it("stays OK on a queue that never reaches the threshold, and reads only its own queue's samples, in time order", () => {
    // Prepare: another queue is deep; this one holds 0, then 2 (given out of order).
    const samples = [...perMinute([5, 5, 5], "other-queue"), ...perMinute([0, null, 2]).reverse()];
    // Act
    const [quiet, fired] = evaluateAlarms([alarm({ threshold: 3 }), alarm({ threshold: 2 })], samples);
    // Assess
    expect(quiet?.transitions).to.deep.equal([]);
    expect(fired?.transitions.map((t) => [t.state, t.simTimeMs - T0, t.value])).to.deep.equal([["ALARM", at(2), 2]]);
  });

  it("gives the breaching datapoints of the deciding window, oldest first, with their periods' starts", () => {
    // Prepare
    const a = alarm({ periodSeconds: 60, evaluationPeriods: 2, datapointsToAlarm: 2 });
    // Act
    const [evaluation] = evaluateAlarms([a], perMinute([2, 4]));
    // Assess
    expect(evaluation?.transitions[0]?.breaching).to.deep.equal([
      { periodStartMs: T0, value: 2 },
      { periodStartMs: T0 + MINUTE, value: 4 },
    ]);
  });

  describe("rejects what the samples cannot evaluate, naming why", () => {
    const cases: Array<{ title: string; over: Partial<LocalAlarm>; reason: RegExp }> = [
      { title: "a percentile", over: { statistic: "p99" }, reason: /statistic p99 is not supported \(Maximum, Minimum, Sum, Average, SampleCount\)/ },
      {
        title: "an anomaly band",
        over: { comparisonOperator: "LessThanLowerOrGreaterThanUpperThreshold" },
        reason: /comparison LessThanLowerOrGreaterThanUpperThreshold is not supported/,
      },
      {
        title: "another metric",
        over: { namespace: "AWS/Lambda", metricName: "Errors" },
        reason: /watches AWS\/Lambda Errors; the run samples only AWS\/SQS ApproximateNumberOfMessagesVisible/,
      },
      {
        title: "metric math with no recorded queries",
        over: { namespace: "", metricName: "", statistic: "" },
        reason: /metric-math alarm whose queries were not recorded/,
      },
      { title: "no queue", over: { queueName: undefined, dimensions: {} }, reason: /no QueueName dimension/ },
      { title: "no static threshold", over: { threshold: undefined }, reason: /no static threshold/ },
      { title: "a sub-minute period", over: { periodSeconds: 30 }, reason: /period 30 s is not a whole number of minutes/ },
      { title: "M greater than N", over: { evaluationPeriods: 1, datapointsToAlarm: 2 }, reason: /2 out of 1 datapoints is not a valid rule/ },
      { title: "an unknown treatMissingData", over: { treatMissingData: "sometimes" }, reason: /treatMissingData sometimes is not supported/ },
    ];
    for (const c of cases) {
      it(c.title, () => {
        // Prepare
        const a = alarm(c.over);
        // Act
        const [evaluation] = evaluateAlarms([a], perMinute([9, 9, 9]));
        // Assess
        expect(evaluation?.unsupported).to.match(c.reason);
        expect(evaluation?.transitions).to.deep.equal([]);
      });
    }
  });
});

const GROUP = "encache-gpu-fleet-prod";

/** The fleet's launch alarm as infra/parts/ingest.ts declares it (desired − in service ≥ 1, 20 of 20 minutes), with `over` applied. */
function launchAlarm(over: Partial<LocalAlarm> = {}, expression = "desired - inservice"): LocalAlarm {
  const metric = (metricName: string) => ({
    namespace: "AWS/AutoScaling",
    metricName,
    dimensions: { AutoScalingGroupName: GROUP },
    stat: "Minimum",
    periodSeconds: 60,
  });
  return alarm({
    urn: "urn:pulumi:prod::encache::aws:cloudwatch/metricAlarm:MetricAlarm::ingest-gpu-fleet-launch",
    logicalName: "ingest-gpu-fleet-launch",
    name: "ingest-gpu-fleet-launch-abc1234",
    namespace: "",
    metricName: "",
    dimensions: {},
    queueName: undefined,
    statistic: "",
    periodSeconds: 60,
    evaluationPeriods: 20,
    datapointsToAlarm: 20,
    threshold: 1,
    queries: [
      { id: "desired", returnData: false, metric: metric("GroupDesiredCapacity") },
      { id: "inservice", returnData: false, metric: metric("GroupInServiceInstances") },
      { id: "shortfall", expression, label: "Instances wanted and not in service", returnData: true },
    ],
    ...over,
  });
}

/** The group's two metrics once per minute from T0: `[desired, inService]` per minute. */
function groupPerMinute(values: Array<[number, number]>): MetricSample[] {
  return values.flatMap(([desired, inService], i) => groupSamples(T0 + i * MINUTE, GROUP, desired, inService));
}

describe("evaluateAlarms: the GPU fleet's launch alarm (metric math over the group's metrics)", () => {
  const cases: Array<{ title: string; minutes: Array<[number, number]>; expected: AlarmFiring[] }> = [
    { title: "a launch that never succeeds fires at the 20th minute", minutes: Array(25).fill([1, 0]), expected: [{ atMs: at(19), value: 1 }] },
    {
      title: "and goes back to OK at the first minute the instance is in service",
      minutes: [...Array(22).fill([2, 0]), [2, 2]],
      expected: [{ atMs: at(19), value: 2, okAtMs: at(22) }],
    },
    { title: "a scale-out that boots within minutes never fires", minutes: [...Array(6).fill([3, 0]), ...Array(30).fill([3, 3])], expected: [] },
    { title: "19 minutes short, then in service: never fires", minutes: [...Array(19).fill([1, 0]), [1, 1], ...Array(19).fill([1, 0])], expected: [] },
  ];
  for (const c of cases)
    it(c.title, () => {
      // Act
      const got = firings(launchAlarm(), groupPerMinute(c.minutes));
      // Assess
      expect(got).to.deep.equal(c.expected);
    });

  it("a sum (a + b) is evaluated too", () => {
    const got = firings(
      launchAlarm({ threshold: 3, evaluationPeriods: 1, datapointsToAlarm: 1 }, "desired + inservice"),
      groupPerMinute([
        [1, 1],
        [2, 1],
      ]),
    );
    expect(got).to.deep.equal([{ atMs: at(1), value: 3 }]);
  });

  const unsupported: Array<{ title: string; alarm: LocalAlarm; reason: RegExp }> = [
    {
      title: "an expression other than a, a + b, a - b",
      alarm: launchAlarm({}, "desired * inservice"),
      reason: /expression "desired \* inservice" is not supported/,
    },
    { title: "an expression naming no query", alarm: launchAlarm({}, "desired - pending"), reason: /names pending, not a metric query/ },
    {
      title: "a query on a metric the run does not sample",
      alarm: launchAlarm({
        queries: [
          {
            id: "m",
            returnData: true,
            metric: {
              namespace: "AWS/AutoScaling",
              metricName: "GroupPendingInstances",
              dimensions: { AutoScalingGroupName: GROUP },
              stat: "Minimum",
              periodSeconds: 60,
            },
          },
        ],
      }),
      reason: /query m watches AWS\/AutoScaling GroupPendingInstances/,
    },
    {
      title: "two series returned",
      alarm: launchAlarm({ queries: [...(launchAlarm().queries ?? []).map((q) => ({ ...q, returnData: true }))] }),
      reason: /returns 3 series/,
    },
  ];
  for (const c of unsupported)
    it(`cannot evaluate ${c.title}`, () => {
      const [evaluation] = evaluateAlarms([c.alarm], groupPerMinute(Array(25).fill([1, 0])));
      expect(evaluation?.unsupported).to.match(c.reason);
      expect(evaluation?.transitions).to.deep.equal([]);
    });

  it("parseExpression reads a, a + b and a - b", () => {
    const values = new Map([
      ["a", 5],
      ["b", 2],
    ]);
    const results = ["a", "a + b", "a-b"].map((e) => {
      const p = parseExpression(e);
      return typeof p === "string" ? p : p.value(values);
    });
    expect(results).to.deep.equal([5, 7, 3]);
  });

  it("its message's Trigger lists the queries as Metrics, as CloudWatch sends a metric-math alarm", () => {
    const message = alarmMessage(launchAlarm(), { state: "ALARM", simTimeMs: T0 + at(19), value: 1, breaching: [] }, "123456789012");
    const trigger = message.Trigger as { Metrics: Array<Record<string, unknown>>; MetricName?: string };
    expect(trigger.MetricName).to.equal(undefined);
    expect(trigger.Metrics.map((m) => m.Id)).to.deep.equal(["desired", "inservice", "shortfall"]);
    expect(trigger.Metrics[2]).to.deep.include({ Expression: "desired - inservice", ReturnData: true });
    expect(trigger.Metrics[0]).to.deep.nested.include({ "MetricStat.Metric.MetricName": "GroupDesiredCapacity", "MetricStat.Stat": "Minimum" });
  });
});

describe("the message CloudWatch publishes to an alarm's topic", () => {
  const fired: AlarmTransition = { state: "ALARM", simTimeMs: T0 + 90_000, value: 3, breaching: [{ periodStartMs: T0, value: 3 }] };

  it("carries the alarm, the new state with CloudWatch's reason, and the trigger", () => {
    // Prepare
    const a = alarm();
    // Act
    const message = alarmMessage(a, fired, "123456789012");
    // Assess
    expect(message).to.deep.include({
      AlarmName: "ingest-dlq-depth-abc1234",
      AlarmDescription: "ingest DLQ has messages",
      AWSAccountId: "123456789012",
      NewStateValue: "ALARM",
      OldStateValue: "OK",
      StateChangeTime: "2026-11-24T01:56:30.000+0000",
      NewStateReason:
        "Threshold Crossed: 1 out of the last 1 datapoints [3.0 (24/11/26 01:55:00)] was greater than or equal to the threshold (1.0) (minimum 1 datapoint for OK -> ALARM transition).",
      AlarmActions: [TOPIC],
    });
    expect(message.Trigger).to.deep.equal({
      MetricName: "ApproximateNumberOfMessagesVisible",
      Namespace: "AWS/SQS",
      StatisticType: "Statistic",
      Statistic: "MAXIMUM",
      Unit: null,
      Dimensions: [{ value: "ingest-dlq-1", name: "QueueName" }],
      Period: 300,
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      TreatMissingData: "notBreaching",
      EvaluateLowSampleCountPercentile: "",
    });
  });

  it("words a return to OK with the current period's value", () => {
    // Prepare
    const ok: AlarmTransition = { state: "OK", simTimeMs: T0 + 6 * MINUTE, value: 0, breaching: [] };
    // Act
    const reason = stateReason(alarm(), ok);
    // Assess
    expect(reason).to.equal(
      "Threshold Crossed: 1 datapoint [0.0 (24/11/26 02:00:00)] was not greater than or equal to the threshold (1.0) (minimum 1 datapoint for ALARM -> OK transition).",
    );
  });

  it("upper-cases a two-word statistic as CloudWatch does", () => {
    expect((alarmMessage(alarm({ statistic: "SampleCount" }), fired, "1").Trigger as { Statistic: string }).Statistic).to.equal("SAMPLE_COUNT");
  });

  it("keeps the subject within SNS's 100 ASCII characters", () => {
    // Prepare
    const long = alarm({ name: "x".repeat(200) });
    // Act
    const subject = alarmSubject(long, "ALARM", "us-east-1");
    // Assess
    expect(alarmSubject(alarm(), "ALARM", "us-east-1")).to.equal('ALARM: "ingest-dlq-depth-abc1234" in us-east-1');
    expect(subject).to.have.length(100);
    expect(subject).to.match(/^[\x20-\x7e]+$/);
  });
});

describe("alarmReport", () => {
  it("gives each alarm its firings since the run's start, the topics told and the actions outside moto", () => {
    // Prepare
    const outside = "arn:aws:sns:us-east-1:999999999999:elsewhere";
    const fires = alarm({ alarmActions: [TOPIC, outside] });
    const quiet = alarm({ urn: "urn:quiet", name: "quiet-1", threshold: 100 });
    const odd = alarm({ urn: "urn:odd", name: "odd-1", statistic: "p99" });
    const evaluations = evaluateAlarms([fires, quiet, odd], perMinute([0, 2, 0, 0, 0, 0]));
    // Act
    const report = alarmReport({
      evaluations,
      startMs: T0 - MINUTE,
      topics: [{ urn: "urn:topic", logicalName: "platform-alerts", name: "platform-alerts-1234567", arn: TOPIC, subscriptions: [] }],
      notified: new Map([[fires.urn, new Set(["platform-alerts-1234567"])]]),
      samples: 6,
      sampleEverySimMs: MINUTE,
      published: 2,
    });
    // Assess
    expect(report).to.deep.include({ samples: 6, sampleEverySimMs: MINUTE, published: 2 });
    expect(report.alarms[0]).to.deep.include({
      alarm: "ingest-dlq-depth-abc1234",
      queue: "ingest-dlq-1",
      threshold: 1,
      firings: [{ atMs: at(2), value: 2, okAtMs: at(6) }],
      notified: ["platform-alerts-1234567"],
      unreachableActions: [outside],
    });
    expect(report.alarms[0]).not.to.have.property("unsupported");
    expect(report.alarms[1]).to.deep.include({ alarm: "quiet-1", firings: [], notified: [], unreachableActions: [] });
    expect(report.alarms[2]?.unsupported).to.match(/statistic p99/);
  });
});
