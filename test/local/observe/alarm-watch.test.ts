/**
 * local/observe/alarm-watch.ts against moto: the watcher takes a real queue's depth from the run's depth
 * sampler, and on each state change sets the alarm's state in moto and publishes CloudWatch's
 * message to the real topic, which an SQS subscription lets the test read.
 */
import { CloudWatchClient, DescribeAlarmsCommand, PutMetricAlarmCommand } from "@aws-sdk/client-cloudwatch";
import { CreateTopicCommand, SNSClient, SubscribeCommand } from "@aws-sdk/client-sns";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { AlarmWatcher, MIN_SAMPLE_REAL_MS, sampleEveryRealMs } from "../../../local/observe/alarm-watch";
import { SimClock } from "../../../local/hosts/clock";
import { DepthSampler, type DepthListener, type DepthRound, roundEveryRealMs } from "../../../local/observe/depth-sampler";
import type { LocalAlarm, LocalQueue, LocalTopic } from "../../../local/provision/topology-types";
import { resetMoto } from "../../integration/helpers/moto";

const sqs = new SQSClient({});
const sns = new SNSClient({});
const cloudwatch = new CloudWatchClient({});

async function queue(name: string): Promise<LocalQueue> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? "";
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn ?? "";
  return { urn: `urn:${name}`, logicalName: name, name, url, arn, visibilityTimeoutSeconds: 30 };
}

/** Every message on the queue until `count` have arrived or `ms` passed. */
async function drain(url: string, count: number, ms: number): Promise<Message[]> {
  const got: Message[] = [];
  const deadline = Date.now() + ms;
  while (got.length < count && Date.now() < deadline) {
    got.push(...((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))).Messages ?? []));
  }
  return got;
}

async function until(done: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await done()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

describe("sampleEveryRealMs", () => {
  for (const [speed, ms] of [
    [1, 60_000],
    [60, 1_000],
    [300, MIN_SAMPLE_REAL_MS],
    [3600, MIN_SAMPLE_REAL_MS],
  ] as const) {
    it(`at speed ${speed} samples every ${ms} ms of real time`, () => expect(sampleEveryRealMs(speed)).to.equal(ms));
  }
});

describe("AlarmWatcher against moto", () => {
  let watcher: AlarmWatcher | undefined;
  let sampler: DepthSampler | undefined;
  let watched: LocalQueue;
  let inbox: LocalQueue;
  let topic: LocalTopic;
  let alarm: LocalAlarm;
  const notes: string[] = [];

  beforeEach(async () => {
    await resetMoto();
    notes.length = 0;
    watched = await queue("work-dlq");
    inbox = await queue("alert-inbox");
    const topicArn = (await sns.send(new CreateTopicCommand({ Name: "alerts" }))).TopicArn ?? "";
    await sns.send(new SubscribeCommand({ TopicArn: topicArn, Protocol: "sqs", Endpoint: inbox.arn }));
    topic = { urn: "urn:alerts", logicalName: "alerts", name: "alerts", arn: topicArn, subscriptions: [{ protocol: "sqs", endpoint: inbox.arn }] };
    await cloudwatch.send(
      new PutMetricAlarmCommand({
        AlarmName: "work-dlq-depth",
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Dimensions: [{ Name: "QueueName", Value: watched.name }],
        Statistic: "Maximum",
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 2,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
        AlarmActions: [topicArn],
        OKActions: [topicArn],
      }),
    );
    const arn = (await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: ["work-dlq-depth"] }))).MetricAlarms?.[0]?.AlarmArn ?? "";
    alarm = {
      urn: "urn:work-dlq-depth",
      logicalName: "work-dlq-depth",
      name: "work-dlq-depth",
      arn,
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: watched.name },
      queueName: watched.name,
      statistic: "Maximum",
      periodSeconds: 60,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      threshold: 2,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      treatMissingData: "notBreaching",
      alarmActions: [topicArn],
      okActions: [topicArn],
    };
  });

  afterEach(async () => {
    await watcher?.stop();
    await sampler?.stop();
    watcher = undefined;
    sampler = undefined;
  });

  function start(alarms: LocalAlarm[]): AlarmWatcher {
    // Speed 300: one simulated minute, one sampling round and one period every 200 ms.
    const clock = new SimClock(300);
    sampler = new DepthSampler({ queues: [watched, inbox], clock, sqs, everyRealMs: sampleEveryRealMs(300), note: (line) => notes.push(line) });
    watcher = new AlarmWatcher({
      alarms,
      queues: [watched, inbox],
      topics: [topic],
      created: alarms.map((a) => a.urn),
      clock,
      depths: sampler,
      sns,
      cloudwatch,
      account: "123456789012",
      region: "us-east-1",
      note: (line) => notes.push(line),
    });
    watcher.start();
    sampler.start();
    return watcher;
  }

  it("publishes ALARM when the queue reaches the threshold and OK when it empties, and sets the state in moto", async function () {
    this.timeout(30_000);
    // Prepare
    const w = start([alarm]);
    await sqs.send(new SendMessageCommand({ QueueUrl: watched.url, MessageBody: "a" }));
    await sqs.send(new SendMessageCommand({ QueueUrl: watched.url, MessageBody: "b" }));

    // Act
    const fired = await drain(inbox.url, 1, 10_000);
    const stateAfterFiring = (await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarm.name] }))).MetricAlarms?.[0]?.StateValue;
    await sqs.send(new PurgeQueueCommand({ QueueUrl: watched.url }));
    const cleared = await drain(inbox.url, 1, 10_000);
    await w.stop();
    const report = w.report();

    // Assess
    const envelope = JSON.parse(fired[0]?.Body ?? "{}") as { Subject?: string; Message?: string; TopicArn?: string };
    const message = JSON.parse(envelope.Message ?? "{}") as Record<string, unknown>;
    expect(envelope).to.include({ TopicArn: topic.arn, Subject: 'ALARM: "work-dlq-depth" in us-east-1' });
    expect(message).to.deep.include({ AlarmName: "work-dlq-depth", NewStateValue: "ALARM", OldStateValue: "OK", AlarmArn: alarm.arn });
    expect(message.NewStateReason).to.match(
      /^Threshold Crossed: 1 out of the last 1 datapoints \[2\.0 \(.+\)\] was greater than or equal to the threshold \(2\.0\)/,
    );
    expect(message.Trigger).to.deep.include({
      MetricName: "ApproximateNumberOfMessagesVisible",
      Namespace: "AWS/SQS",
      Statistic: "MAXIMUM",
      Threshold: 2,
      Period: 60,
    });
    expect(stateAfterFiring).to.equal("ALARM");
    const ok = JSON.parse((JSON.parse(cleared[0]?.Body ?? "{}") as { Message?: string }).Message ?? "{}") as Record<string, unknown>;
    expect(ok).to.include({ NewStateValue: "OK", OldStateValue: "ALARM" });
    expect((await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarm.name] }))).MetricAlarms?.[0]?.StateValue).to.equal("OK");
    expect(report.published).to.equal(2);
    expect(report.alarms[0]).to.deep.include({ alarm: "work-dlq-depth", queue: watched.name, notified: ["alerts"], unreachableActions: [] });
    expect(report.alarms[0]?.firings).to.have.length(1);
    expect(report.alarms[0]?.firings[0]?.value).to.equal(2);
    expect(report.alarms[0]?.firings[0]?.okAtMs).to.be.greaterThan(report.alarms[0]?.firings[0]?.atMs ?? Infinity);
    expect(
      notes.some((n) => /^alarm work-dlq-depth: ALARM at \+\d\d:\d\d:\d\d \(Maximum 2 ≥ 2 on work-dlq\), notifying alerts$/.test(n)),
      notes.join("\n"),
    ).to.equal(true);
  });

  it("samples only the program's queues an evaluable alarm watches, once per simulated minute, and stops sampling on stop()", async function () {
    this.timeout(10_000);
    // Prepare
    const w = start([
      alarm,
      { ...alarm, urn: "urn:odd", name: "odd", queueName: inbox.name, statistic: "p99" },
      { ...alarm, urn: "urn:far", name: "far", queueName: "elsewhere" },
    ]);

    // Act
    await until(() => w.report().samples >= 3, 5_000);
    await w.stop();
    const atStop = w.report();
    await new Promise((r) => setTimeout(r, 3 * MIN_SAMPLE_REAL_MS));

    // Assess: the inbox is watched only by the p99 alarm, which the samples cannot evaluate, and
    // "elsewhere" is no queue of the program.
    expect(atStop.samples).to.be.at.least(3);
    expect(w.report().samples).to.equal(atStop.samples);
    expect(atStop.sampleEverySimMs).to.equal(60_000);
    expect(atStop.alarms[0]?.firings).to.deep.equal([]);
    expect(atStop.alarms[1]?.unsupported).to.match(/statistic p99/);
    expect(atStop.alarms[2]?.unsupported).to.equal("watches elsewhere, a queue the program does not declare");
    expect(atStop.published).to.equal(0);
    expect(notes[0]).to.equal("alarms: sampling the depth of work-dlq once per simulated minute for 1 of 3 alarms (moto evaluates none)");
  });
});

describe("AlarmWatcher on a finer depth sampler", () => {
  it("keeps one round per simulated minute: the first of each slot", async () => {
    // Prepare: speed 60 (a simulated minute is 1 s real) and rounds every 250 ms, four per minute.
    const listeners: DepthListener[] = [];
    const source = {
      everyRealMs: roundEveryRealMs(sampleEveryRealMs(60), 250),
      subscribe(l: DepthListener) {
        listeners.push(l);
        return () => listeners.splice(listeners.indexOf(l), 1);
      },
    };
    const q: LocalQueue = {
      urn: "urn:q",
      logicalName: "q",
      name: "q-123",
      url: "http://moto/q-123",
      arn: "arn:aws:sqs:us-east-1:123456789012:q-123",
      visibilityTimeoutSeconds: 30,
    };
    const alarm: LocalAlarm = {
      urn: "urn:q-depth",
      logicalName: "q-depth",
      name: "q-depth",
      arn: "arn:alarm",
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: q.name },
      queueName: q.name,
      statistic: "Maximum",
      periodSeconds: 60,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      threshold: 100,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      treatMissingData: "notBreaching",
      alarmActions: [],
      okActions: [],
    };
    const w = new AlarmWatcher({
      alarms: [alarm],
      queues: [q],
      topics: [],
      created: [],
      clock: new SimClock(60),
      depths: source,
      sns,
      cloudwatch,
      account: "123456789012",
      region: "us-east-1",
      note: () => undefined,
    });
    w.start();
    const round = (index: number): DepthRound => ({
      index,
      realTimeMs: index * 250,
      simTimeMs: index * 15_000,
      depths: new Map([[q.name, { visible: index, inFlight: 0, delayed: 0 }]]),
    });

    // Act: ten rounds, 2.5 simulated minutes.
    for (let i = 0; i < 10; i++) for (const l of [...listeners]) await l(round(i));
    await w.stop();

    // Assess: rounds 0, 4 and 8; none after stop().
    expect(source.everyRealMs).to.equal(250);
    expect(w.report().samples).to.equal(3);
    expect(w.report().sampleEverySimMs).to.equal(60_000);
    expect(listeners).to.have.length(0);
  });
});

describe("AlarmWatcher on the GPU fleet's group metrics", () => {
  const GROUP = "encache-gpu-fleet-prod";
  const metric = (metricName: string) => ({
    namespace: "AWS/AutoScaling",
    metricName,
    dimensions: { AutoScalingGroupName: GROUP },
    stat: "Minimum",
    periodSeconds: 60,
  });
  const launch: LocalAlarm = {
    urn: "urn:launch",
    logicalName: "ingest-gpu-fleet-launch",
    name: "ingest-gpu-fleet-launch",
    arn: "arn:alarm:launch",
    namespace: "",
    metricName: "",
    dimensions: {},
    statistic: "",
    periodSeconds: 60,
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    threshold: 1,
    comparisonOperator: "GreaterThanOrEqualToThreshold",
    treatMissingData: "notBreaching",
    alarmActions: [],
    okActions: [],
    queries: [
      { id: "desired", returnData: false, metric: metric("GroupDesiredCapacity") },
      { id: "inservice", returnData: false, metric: metric("GroupInServiceInstances") },
      { id: "shortfall", expression: "desired - inservice", label: "Instances wanted and not in service", returnData: true },
    ],
  };

  function watcher(group: (() => { groupName: string; desired: number; inService: number }) | undefined, notes: string[]) {
    const listeners: DepthListener[] = [];
    const source = {
      everyRealMs: sampleEveryRealMs(60),
      subscribe(l: DepthListener) {
        listeners.push(l);
        return () => listeners.splice(listeners.indexOf(l), 1);
      },
    };
    const w = new AlarmWatcher({
      alarms: [launch],
      queues: [],
      topics: [],
      created: [],
      clock: new SimClock(60),
      depths: source,
      ...(group ? { group } : {}),
      sns,
      cloudwatch,
      account: "123456789012",
      region: "us-east-1",
      note: (line) => notes.push(line),
    });
    w.start();
    const rounds = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++)
        for (const l of [...listeners]) await l({ index: i, realTimeMs: i * 1000, simTimeMs: i * 60_000, depths: new Map() });
    };
    return { w, rounds };
  }

  it("samples the group each simulated minute and fires when desired stays above in service for the alarm's window, then clears", async () => {
    // Prepare: the group wants 2 and has none in service
    const notes: string[] = [];
    let inService = 0;
    const { w, rounds } = watcher(() => ({ groupName: GROUP, desired: 2, inService }), notes);
    // Act: five minutes with none in service, then two with both
    await rounds(0, 5);
    const firing = w.report().alarms[0]?.firings[0];
    inService = 2;
    await rounds(5, 2);
    await w.stop();
    // Assess
    expect(notes[0]).to.equal(
      "alarms: sampling the depth of 0 queues and the GPU fleet's group metrics once per simulated minute for 1 of 1 alarms (moto evaluates none)",
    );
    expect(firing).to.deep.include({ value: 2 });
    expect(w.report().alarms[0]?.firings[0]?.okAtMs).to.be.a("number");
    expect(
      notes.some((n) =>
        /^alarm ingest-gpu-fleet-launch: ALARM at \+\d\d:\d\d:\d\d \(Instances wanted and not in service 2 ≥ 1 on encache-gpu-fleet-prod\)$/.test(n),
      ),
      notes.join("\n"),
    ).to.equal(true);
  });

  it("without a fleet, says the group is not played rather than staying silently OK", async () => {
    const notes: string[] = [];
    const { w, rounds } = watcher(undefined, notes);
    await rounds(0, 5);
    await w.stop();
    expect(w.report().alarms[0]?.unsupported).to.equal("watches an Auto Scaling group the run does not play (no GPU fleet)");
    expect(w.report().samples).to.equal(0);
  });
});

describe("roundEveryRealMs", () => {
  for (const [slot, target, every] of [
    [1_000, 500, 500],
    [1_000, 1_000, 1_000],
    [60_000, 500, 500],
    [6_000, 500, 500],
    [8_000, 3_000, 8_000 / 3],
    [200, 500, 200],
  ] as const) {
    it(`divides a ${slot} ms slot into rounds of ${every.toFixed(1)} ms for a ${target} ms target`, () =>
      expect(roundEveryRealMs(slot, target)).to.equal(every));
  }
});
