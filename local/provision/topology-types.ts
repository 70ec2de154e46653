/**
 * The local runtime's Topology: everything the program declared, as it now exists in moto, read
 * from the deploy's recording (local/provision/topology.ts builds it, topology-parsers.ts reads each part).
 */
import type { RecordedResource } from "../../policy/testing/types";

/** What every part carries: the resource's URN and logical (Pulumi) name, e.g. `ingest-window`. */
interface Part {
  urn: string;
  logicalName: string;
}

/** A part known by its physical name (what the ARN ends in) and ARN (a table, a cluster). */
export interface LocalTable extends Part {
  name: string;
  arn: string;
}

/** A Lambda function as `pulumi up` would deploy it, with its bundle written to disk. */
export interface LocalFunction extends LocalTable {
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
export interface LocalMapping extends Part {
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

export interface LocalQueue extends LocalTable {
  url: string;
  /** The `encache:queue-role` tag: source, dlq, quarantine… (undefined when untagged). */
  role?: string;
  visibilityTimeoutSeconds: number;
  redrive?: { deadLetterTargetArn: string; maxReceiveCount: number };
}

/** An EventBridge Scheduler schedule (moto stores them but never fires them). */
export interface LocalSchedule extends Part {
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

export interface LocalInstance extends Part {
  id: string;
  tags: Record<string, string>;
  /** The instance type the program declared (what the local cost figures price). */
  instanceType?: string;
  /** The recorded user data (plain text), where the gateway's environment is written. */
  userData?: string;
}

/**
 * The GPU fleet (`gpu.capacity.mode: fleet`): its Auto Scaling group as created in moto, with what
 * moto only stores (the mixed instances policy, the warm pool, the drain hook) and the load
 * balancer, target group and listener in front of it, which the runtime plays (local/hosts/gpu-fleet.ts).
 */
export interface LocalFleet extends Part {
  groupName: string;
  maxSize: number;
  /** The launch template's instance type: the first (preferred) of the group's types. */
  instanceType?: string;
  /** The mixed instances policy's distribution; undefined for an on-demand group. */
  spot?: { onDemandBaseCapacity: number; onDemandPercentageAboveBaseCapacity: number; instanceTypes: string[] };
  /** Stopped instances the warm pool keeps (0: no warm pool). */
  warmPoolMinSize: number;
  /** The terminate hook's timeout: how long a leaving instance may drain (0: no hook). */
  drainHookSeconds: number;
  /** The terminate hook's name (what the gateway completes). */
  drainHookName?: string;
  /** The launch template's user data, decoded from base64. */
  userData?: string;
  loadBalancer: {
    /** The DNS name the consumers POST to (GPU_FLEET_SERVICE_HOST). */
    dnsName: string;
    /** The listener's port. */
    port: number;
    healthCheck: { path: string; intervalSeconds: number; healthyThreshold: number; unhealthyThreshold: number; timeoutSeconds: number };
  };
}

export interface LocalTaskDefinition extends Part {
  arn: string;
  family: string;
  /** Parsed `containerDefinitions` (pulumi-aws takes them as a JSON string). */
  containerDefinitions: Array<Record<string, unknown>>;
}

export interface LocalService extends Part {
  name: string;
  clusterArn: string;
  taskDefinitionArn: string;
  desiredCount: number;
}

/** An SNS topic (the stack's alert topic) and who it tells. */
export interface LocalTopic extends LocalTable {
  /** The program's subscriptions to it. */
  subscriptions: Array<{ protocol: string; endpoint: string }>;
}

/** A CloudWatch metric alarm as the program declared it (moto stores it but never evaluates it). */
export interface LocalAlarm extends LocalTable {
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
  /** A metric-math alarm's queries (its `metricQueries`); absent on a single-metric alarm. */
  queries?: LocalAlarmQuery[];
}

/** One of a metric-math alarm's queries: a metric and its statistic, or an expression over the others' ids. */
export interface LocalAlarmQuery {
  id: string;
  expression?: string;
  label?: string;
  returnData: boolean;
  metric?: { namespace: string; metricName: string; dimensions: Record<string, string>; stat: string; periodSeconds: number };
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
  /** GPU fleets (fleet mode); empty with one GPU instance. */
  fleets: LocalFleet[];
  taskDefinitions: LocalTaskDefinition[];
  services: LocalService[];
  tables: LocalTable[];
  clusters: LocalTable[];
  topics: LocalTopic[];
  alarms: LocalAlarm[];
  /** URNs of the resources that were created in moto. */
  created: string[];
  /** The stack outputs, as the program returned them (resolved): what `ops` reads in the local run. */
  stackOutputs?: Record<string, unknown>;
  /** Custom resources recorded but not created (log groups, ECR, Lambda…), by type. */
  uncreated: Array<{ urn: string; type: string }>;
}
