/**
 * The local run's contracts: what the Pulumi program deployed into moto (the topology), and
 * what the runtime and scenarios report. Each module of `local/` reads or writes these.
 */
import type { RecordedResource } from "../policy/testing/types";

/** A Lambda function as `pulumi up` would deploy it, with its bundle written to disk. */
export interface LocalFunction {
  urn: string;
  /** Logical (Pulumi) name, e.g. `ingest-window`. */
  logicalName: string;
  /** Physical function name (what the ARN ends in). */
  name: string;
  arn: string;
  /** Absolute path of the bundle's `index.js`: the exact esbuild output the program uploads. */
  codePath: string;
  /** `index.handler`. */
  handler: string;
  /** The function's environment variables, with moto's real URLs and names in them. */
  environment: Record<string, string>;
  timeoutSeconds: number;
  memoryMb: number;
}

/** An SQS event source mapping. */
export interface LocalMapping {
  urn: string;
  logicalName: string;
  /** Physical name of the function it invokes (matches LocalFunction.name). */
  functionName: string;
  queueArn: string;
  queueUrl: string;
  batchSize: number;
  batchingWindowSeconds: number;
  /** ScalingConfig.MaximumConcurrency; undefined means unlimited (Lambda's default). */
  maximumConcurrency?: number;
  reportBatchItemFailures: boolean;
  enabled: boolean;
}

export interface LocalQueue {
  urn: string;
  logicalName: string;
  name: string;
  url: string;
  arn: string;
  /** The `encache:queue-role` tag: source, dlq, quarantine… (undefined when untagged). */
  role?: string;
  visibilityTimeoutSeconds: number;
  redrive?: { deadLetterTargetArn: string; maxReceiveCount: number };
}

/** An EventBridge Scheduler schedule (moto stores them but never fires them). */
export interface LocalSchedule {
  urn: string;
  logicalName: string;
  name: string;
  /** `rate(…)`, `cron(…)` or `at(…)`. */
  expression: string;
  timezone?: string;
  enabled: boolean;
  target: {
    arn: string;
    input?: string;
    deadLetterArn?: string;
    maximumRetryAttempts: number;
    maximumEventAgeInSeconds: number;
  };
}

export interface LocalInstance {
  urn: string;
  logicalName: string;
  id: string;
  tags: Record<string, string>;
}

export interface LocalTaskDefinition {
  urn: string;
  logicalName: string;
  arn: string;
  family: string;
  /** Parsed `containerDefinitions` (pulumi-aws takes them as a JSON string). */
  containerDefinitions: Array<Record<string, unknown>>;
}

export interface LocalService {
  urn: string;
  logicalName: string;
  name: string;
  clusterArn: string;
  taskDefinitionArn: string;
  desiredCount: number;
}

export interface LocalTable {
  urn: string;
  logicalName: string;
  name: string;
  arn: string;
}

/** An SNS topic (the stack's alert topic) and who it tells. */
export interface LocalTopic {
  urn: string;
  logicalName: string;
  name: string;
  arn: string;
  /** The program's subscriptions to it. */
  subscriptions: Array<{ protocol: string; endpoint: string }>;
}

/** A CloudWatch metric alarm as the program declared it (moto stores it but never evaluates it). */
export interface LocalAlarm {
  urn: string;
  logicalName: string;
  /** Physical alarm name. */
  name: string;
  arn: string;
  description?: string;
  /** "" for a metric-math alarm, which has no single metric. */
  namespace: string;
  metricName: string;
  dimensions: Record<string, string>;
  /** The `QueueName` dimension of an AWS/SQS alarm. */
  queueName?: string;
  /** `Maximum`, `Average`…, or a percentile such as `p99` (ExtendedStatistic). */
  statistic: string;
  periodSeconds: number;
  evaluationPeriods: number;
  /** M of "M out of N"; CloudWatch's default is `evaluationPeriods`. */
  datapointsToAlarm: number;
  /** Absent on an anomaly-detection alarm (it compares with a band). */
  threshold?: number;
  comparisonOperator: string;
  /** CloudWatch's default is `missing`. */
  treatMissingData: string;
  alarmActions: string[];
  okActions: string[];
}

/** Everything the program declared, as it now exists in moto. */
export interface Topology {
  project: string;
  stack: string;
  region: string;
  /** The full recording (inputs and the outputs moto answered with), keyed by URN. */
  resources: RecordedResource[];
  functions: LocalFunction[];
  mappings: LocalMapping[];
  queues: LocalQueue[];
  schedules: LocalSchedule[];
  instances: LocalInstance[];
  taskDefinitions: LocalTaskDefinition[];
  services: LocalService[];
  tables: LocalTable[];
  clusters: Array<{ urn: string; logicalName: string; name: string; arn: string }>;
  topics: LocalTopic[];
  alarms: LocalAlarm[];
  /** URNs of the resources that were created in moto. */
  created: string[];
  /** Custom resources recorded but not created (log groups, ECR, Lambda…), by type. */
  uncreated: Array<{ urn: string; type: string }>;
}

/**
 * One key timing of a scenario. The run's clock goes `--speed` times faster than the wall, so
 * a duration a person waited for and the duration the platform lived through differ: both are
 * given (built with `timing()` or `keyTimings()` of local/scenarios/scenario.ts).
 */
export interface Timing {
  wallMs: number;
  simulatedSeconds: number;
}

/** The real instants (epoch ms) a key timing runs between. */
export interface TimingMark {
  fromMs: number;
  toMs: number;
}

/** Where every message sent ended up: the counts a scenario and the chaos run both account for. */
export interface MessageCounts {
  /** Messages put on a queue. */
  sent: number;
  /** Messages whose effect was observed (GPU received it, task launched, job completed…). */
  processed: number;
  /** Messages moved to a quarantine queue with a reason. */
  quarantined: number;
  /** Messages sitting in a DLQ at the end. */
  inDlq: number;
  /** Messages still on their source queue at the end (visible or in flight). */
  remaining: number;
  /** sent − processed − quarantined − inDlq − remaining: must be 0. */
  lost: number;
}

/** One row of the end-of-run table, and one entry of `--json`'s `scenarios`. */
export interface ScenarioSummary extends MessageCounts {
  scenario: string;
  wallMs: number;
  /** Key timings, in wall time and in simulated time (null when the event never happened). */
  timings: Record<string, Timing | null>;
  /**
   * When each key timing's interval began and ended, for the HTML report's timeline; a timing
   * without a mark is listed there but not drawn. Absent when the scenario marks none.
   */
  marks?: Record<string, TimingMark>;
  /** Scenario-specific counts (tasks launched, duplicates, claims…). */
  details: Record<string, unknown>;
  /** Expectations the scenario checked that did not hold (empty when it passed). */
  failures: string[];
}

/** One OK → ALARM transition an alarm would have made, in simulated ms since the run's start. */
export interface AlarmFiring {
  atMs: number;
  /** The statistic of the period that crossed the threshold, at that moment. */
  value: number;
  /** When it went back to OK; absent when it was still in ALARM at the end. */
  okAtMs?: number;
}

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

/** One gauge row of the live view. */
export interface QueueGauge {
  /** Short label, e.g. `ingest` or `ingest-dlq`. */
  label: string;
  visible: number;
  inFlight: number;
}

/** What the live view draws on each tick. */
export interface LiveSnapshot {
  scenario: string;
  elapsedMs: number;
  progress: { done: number; total: number };
  queues: QueueGauge[];
  /** Counters shown under the gauges, e.g. processed, quarantined, in DLQ. */
  counters: Record<string, number>;
  /** Free-form status lines, e.g. `GPU: running (serving)`. */
  status: string[];
}
