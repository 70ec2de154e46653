/**
 * Deploys the Pulumi program into moto (the mocks of this folder, ./index.ts) and derives the local
 * runtime's Topology from the recording: the program is the single source of truth.
 *
 * `deployLocally` may run ONCE per process: `pulumi.runtime.setMocks` installs a global monitor
 * and the program module registers its resources when first imported. Tests run it in a child
 * process (test/local/helpers/provision-child.ts).
 */
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { REPO_ROOT } from "../../infra/bundle";
import { installRecorder } from "../../plan/record";
import { readStackFiles } from "../../plan/stack-files";
import type { RecordedResource } from "../../policy/testing/types";
import { codePathFor, createMotoMocks, type ProvisionOutcome } from ".";
import { QUEUE_ROLE_TAG } from "../../policy/contract";

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
export interface LocalFleet {
  urn: string;
  logicalName: string;
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
  clusters: Array<{ urn: string; logicalName: string; name: string; arn: string }>;
  topics: LocalTopic[];
  alarms: LocalAlarm[];
  /** URNs of the resources that were created in moto. */
  created: string[];
  /** The stack outputs, as the program returned them (resolved): what `ops` reads in the local run. */
  stackOutputs?: Record<string, unknown>;
  /** Custom resources recorded but not created (log groups, ECR, Lambda…), by type. */
  uncreated: Array<{ urn: string; type: string }>;
}

export interface DeployLocallyOptions {
  stack: string;
  /** moto's endpoint. */
  endpoint: string;
  /** SQS clients only (the `--speed` proxy). Default: `endpoint`. */
  sqsEndpoint?: string;
  /** Where the Lambda bundles are written. */
  codeDir: string;
  /** Program entry; default Pulumi.yaml's `main`. Relative paths are from the repository root. */
  program?: string;
}

let deployed = false;

export async function deployLocally(opts: DeployLocallyOptions): Promise<Topology> {
  if (deployed) {
    throw new Error(
      "deployLocally may run only once per process: pulumi.runtime.setMocks is global and the program registers its resources on first import. Run it in a fresh process.",
    );
  }
  deployed = true;

  const files = readStackFiles(REPO_ROOT, opts.stack);
  const program = path.resolve(REPO_ROOT, opts.program ?? files.main);
  const region = files.config["aws:region"] ?? "us-east-1";
  const mocks = createMotoMocks({ region, endpoint: opts.endpoint, sqsEndpoint: opts.sqsEndpoint, codeDir: opts.codeDir });

  // A failed registration surfaces in the program as rejected outputs, i.e. unhandled
  // rejections wrapped in Pulumi's serialization errors: collect them while loading, and
  // report the mocks' own error, which names the resource.
  const failures: unknown[] = [];
  const onFailure = (reason: unknown) => failures.push(reason);
  process.on("unhandledRejection", onFailure);
  try {
    pulumi.runtime.setAllConfig(files.config, files.secretKeys);
    await pulumi.runtime.setMocks(mocks, files.project, opts.stack, false);
    const recorder = installRecorder();
    // Loaded only now, after setMocks: a static import would run the program before it.
    const mod = (await import(program)) as { default?: unknown };
    const returned = typeof mod.default === "function" ? await (mod.default as () => unknown)() : undefined;
    const resources = await recorder.settle();
    const failure = mocks.failures()[0] ?? failures[0];
    if (failure !== undefined) throw failure;
    const topology = buildTopology({ project: files.project, stack: opts.stack, region, resources, outcomes: mocks.outcomes(), codeDir: opts.codeDir });
    const stackOutputs = returned === undefined ? undefined : await resolvedOutputs(returned);
    return stackOutputs === undefined ? topology : { ...topology, stackOutputs };
  } catch (err) {
    throw mocks.failures()[0] ?? err;
  } finally {
    process.off("unhandledRejection", onFailure);
  }
}

/**
 * The program's returned outputs with every Output resolved (under mocks, each resolves once its
 * resource is created). An output that never resolves leaves the topology without outputs rather
 * than hanging the deploy: only `ops` reads them.
 */
function resolvedOutputs(returned: unknown, waitMs = 20_000): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), waitMs);
    timer.unref();
    pulumi.output(returned as pulumi.Input<Record<string, unknown>>).apply((v: Record<string, unknown>) => {
      clearTimeout(timer);
      resolve(v ?? {});
      return v;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Pure builders: RecordedResource[] → Topology parts (unit-tested without moto).

type Bag = Record<string, unknown>;
const s = (o: Bag | undefined, k: string): string | undefined => (o && typeof o[k] === "string" ? (o[k] as string) : undefined);
const n = (o: Bag | undefined, k: string): number | undefined => {
  const v = o?.[k];
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};
const b = (o: Bag | undefined, k: string): boolean | undefined => (typeof o?.[k] === "boolean" ? (o[k] as boolean) : undefined);
const o = (v: Bag | undefined, k: string): Bag | undefined =>
  v && typeof v[k] === "object" && v[k] !== null && !Array.isArray(v[k]) ? (v[k] as Bag) : undefined;
const strMap = (v: Bag | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(v ?? {}).filter((e): e is [string, string] => typeof e[1] === "string"));

function ofType(resources: RecordedResource[], type: string): RecordedResource[] {
  return resources.filter((r) => r.type === type);
}

function need(r: RecordedResource, value: string | undefined, what: string): string {
  if (value === undefined || value === "") throw new Error(`${r.type} "${r.name}" (${r.urn}) has no ${what} in the recording`);
  return value;
}

function needNumber(r: RecordedResource, value: number | undefined, what: string): number {
  if (value === undefined) throw new Error(`${r.type} "${r.name}" (${r.urn}) has no ${what} in the recording`);
  return value;
}

const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** Lambda's default timeout and memory, when the program leaves them out. */
const LAMBDA_DEFAULTS = { timeout: 3, memorySize: 128 };

export function functionsFrom(resources: RecordedResource[], codeDir: string): LocalFunction[] {
  return ofType(resources, "aws:lambda/function:Function").map((r) => ({
    urn: r.urn,
    logicalName: r.name,
    name: need(r, s(r.outputs, "name"), "name"),
    arn: need(r, s(r.outputs, "arn"), "arn"),
    codePath: codePathFor(codeDir, r.name),
    handler: s(r.inputs, "handler") ?? "index.handler",
    environment: strMap(o(o(r.inputs, "environment"), "variables")),
    timeoutSeconds: n(r.inputs, "timeout") ?? LAMBDA_DEFAULTS.timeout,
    memoryMb: n(r.inputs, "memorySize") ?? LAMBDA_DEFAULTS.memorySize,
  }));
}

export function queuesFrom(resources: RecordedResource[]): LocalQueue[] {
  return ofType(resources, "aws:sqs/queue:Queue").map((r) => {
    const redrive = parseRedrive(s(r.inputs, "redrivePolicy"));
    const role = strMap(o(r.inputs, "tags"))[QUEUE_ROLE_TAG];
    return {
      urn: r.urn,
      logicalName: r.name,
      name: need(r, s(r.outputs, "name"), "name"),
      url: need(r, s(r.outputs, "url"), "url"),
      arn: need(r, s(r.outputs, "arn"), "arn"),
      ...(role ? { role } : {}),
      // SQS's default visibility timeout.
      visibilityTimeoutSeconds: n(r.inputs, "visibilityTimeoutSeconds") ?? 30,
      ...(redrive ? { redrive } : {}),
    };
  });
}

export function parseRedrive(policy: string | undefined): LocalQueue["redrive"] {
  if (!policy) return undefined;
  const parsed = JSON.parse(policy) as Bag;
  const deadLetterTargetArn = s(parsed, "deadLetterTargetArn");
  const maxReceiveCount = n(parsed, "maxReceiveCount");
  if (!deadLetterTargetArn || maxReceiveCount === undefined) throw new Error(`redrive policy without deadLetterTargetArn/maxReceiveCount: ${policy}`);
  return { deadLetterTargetArn, maxReceiveCount };
}

/**
 * SQS mappings only: each resolves its queue's URL from the recording, and its function's
 * physical name even when the program passed an ARN.
 */
export function mappingsFrom(resources: RecordedResource[], queues: LocalQueue[], functions: LocalFunction[]): LocalMapping[] {
  return ofType(resources, "aws:lambda/eventSourceMapping:EventSourceMapping")
    .filter((r) => s(r.inputs, "eventSourceArn")?.startsWith("arn:aws:sqs:"))
    .map((r) => {
      const queueArn = need(r, s(r.inputs, "eventSourceArn"), "eventSourceArn");
      const queue = queues.find((q) => q.arn === queueArn);
      if (!queue) throw new Error(`${r.name}: its event source ${queueArn} is not a queue the program declares`);
      const fn = need(r, s(r.inputs, "functionName"), "functionName");
      const target = functions.find((f) => f.arn === fn || f.name === fn || `${f.arn}:$LATEST` === fn);
      const scaling = o(r.inputs, "scalingConfig");
      const maximumConcurrency = n(scaling, "maximumConcurrency");
      const responseTypes = r.inputs.functionResponseTypes;
      return {
        urn: r.urn,
        logicalName: r.name,
        functionName: target?.name ?? functionNameOf(fn),
        queueArn,
        queueUrl: queue.url,
        // Lambda's SQS defaults.
        batchSize: n(r.inputs, "batchSize") ?? 10,
        batchingWindowSeconds: n(r.inputs, "maximumBatchingWindowInSeconds") ?? 0,
        ...(maximumConcurrency !== undefined ? { maximumConcurrency } : {}),
        reportBatchItemFailures: Array.isArray(responseTypes) && responseTypes.includes("ReportBatchItemFailures"),
        enabled: b(r.inputs, "enabled") ?? true,
      };
    });
}

/** `arn:aws:lambda:…:function:NAME[:qualifier]` → NAME; a plain name is returned as is. */
export function functionNameOf(nameOrArn: string): string {
  const m = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)/.exec(nameOrArn);
  return m?.[1] ?? nameOrArn;
}

export function schedulesFrom(resources: RecordedResource[]): LocalSchedule[] {
  return ofType(resources, "aws:scheduler/schedule:Schedule").map((r) => {
    const target = o(r.inputs, "target");
    const retry = o(target, "retryPolicy");
    const timezone = s(r.inputs, "scheduleExpressionTimezone");
    const input = s(target, "input");
    const deadLetterArn = s(o(target, "deadLetterConfig"), "arn");
    return {
      urn: r.urn,
      logicalName: r.name,
      name: need(r, s(r.outputs, "name"), "name"),
      expression: need(r, s(r.inputs, "scheduleExpression"), "scheduleExpression"),
      ...(timezone ? { timezone } : {}),
      enabled: (s(r.inputs, "state") ?? "ENABLED") === "ENABLED",
      target: {
        arn: need(r, s(target, "arn"), "target.arn"),
        ...(input !== undefined ? { input } : {}),
        ...(deadLetterArn ? { deadLetterArn } : {}),
        // EventBridge Scheduler's defaults.
        maximumRetryAttempts: n(retry, "maximumRetryAttempts") ?? 185,
        maximumEventAgeInSeconds: n(retry, "maximumEventAgeInSeconds") ?? 86400,
      },
    };
  });
}

export function instancesFrom(resources: RecordedResource[]): LocalInstance[] {
  return ofType(resources, "aws:ec2/instance:Instance").map((r) => ({
    urn: r.urn,
    logicalName: r.name,
    // The recording holds state, not the id; the ARN ends in it.
    id: need(r, s(r.outputs, "arn")?.split("/").pop(), "arn"),
    tags: strMap(o(r.inputs, "tags")),
    ...(s(r.inputs, "instanceType") !== undefined ? { instanceType: s(r.inputs, "instanceType") } : {}),
    ...(s(r.inputs, "userData") !== undefined ? { userData: s(r.inputs, "userData") } : {}),
  }));
}

const arr = (v: Bag | undefined, k: string): Bag[] =>
  Array.isArray(v?.[k]) ? (v[k] as unknown[]).filter((x): x is Bag => typeof x === "object" && x !== null) : [];

/** Each Auto Scaling group with its load balancer: group → target group (by ARN) → listener → load balancer. */
export function fleetsFrom(resources: RecordedResource[]): LocalFleet[] {
  const byArn = (type: string, arn: string | undefined) => ofType(resources, type).find((r) => arn !== undefined && s(r.outputs, "arn") === arn);
  return ofType(resources, "aws:autoscaling/group:Group").map((r) => {
    const tgArn = (r.inputs.targetGroupArns as unknown[] | undefined)?.find((x): x is string => typeof x === "string");
    const tg = byArn("aws:lb/targetGroup:TargetGroup", tgArn);
    if (!tg) throw new Error(`${r.type} "${r.name}" (${r.urn}) has no target group in the recording: the local run needs its load balancer`);
    const listener = ofType(resources, "aws:lb/listener:Listener").find((l) => arr(l.inputs, "defaultActions").some((a) => s(a, "targetGroupArn") === tgArn));
    if (!listener) throw new Error(`target group "${tg.name}" has no listener in the recording`);
    const lb = byArn("aws:lb/loadBalancer:LoadBalancer", s(listener.inputs, "loadBalancerArn"));
    if (!lb) throw new Error(`listener "${listener.name}" names no load balancer of the recording`);
    const mixed = o(r.inputs, "mixedInstancesPolicy");
    const distribution = o(mixed, "instancesDistribution");
    const overrides = arr(o(mixed, "launchTemplate"), "overrides");
    const groupName = need(r, s(r.outputs, "name"), "name");
    const hook = ofType(resources, "aws:autoscaling/lifecycleHook:LifecycleHook")
      .map((h) => h.inputs)
      .find((h) => s(h, "lifecycleTransition") === "autoscaling:EC2_INSTANCE_TERMINATING" && s(h, "autoscalingGroupName") === groupName);
    const ltId = s(o(o(mixed, "launchTemplate"), "launchTemplateSpecification"), "launchTemplateId") ?? s(o(r.inputs, "launchTemplate"), "id");
    const lt = ofType(resources, "aws:ec2/launchTemplate:LaunchTemplate").find((t) => ltId !== undefined && (t.id === ltId || s(t.outputs, "id") === ltId));
    const userData = s(lt?.inputs, "userData");
    const instanceType = s(lt?.inputs, "instanceType");
    const health = o(tg.inputs, "healthCheck");
    return {
      urn: r.urn,
      logicalName: r.name,
      groupName,
      maxSize: needNumber(r, n(r.inputs, "maxSize"), "maxSize"),
      ...(instanceType !== undefined ? { instanceType } : {}),
      ...(mixed
        ? {
            spot: {
              onDemandBaseCapacity: n(distribution, "onDemandBaseCapacity") ?? 0,
              onDemandPercentageAboveBaseCapacity: n(distribution, "onDemandPercentageAboveBaseCapacity") ?? 100,
              instanceTypes: overrides.flatMap((x) => (s(x, "instanceType") ? [s(x, "instanceType") as string] : [])),
            },
          }
        : {}),
      warmPoolMinSize: n(o(r.inputs, "warmPool"), "minSize") ?? 0,
      drainHookSeconds: n(hook, "heartbeatTimeout") ?? 0,
      ...(s(hook, "name") !== undefined ? { drainHookName: s(hook, "name") } : {}),
      // Base64 in the launch template.
      ...(userData !== undefined ? { userData: Buffer.from(userData, "base64").toString("utf8") } : {}),
      loadBalancer: {
        dnsName: need(lb, s(lb.outputs, "dnsName"), "dnsName"),
        port: needNumber(listener, n(listener.inputs, "port"), "port"),
        // AWS's defaults for an HTTP target group where the program leaves one unset.
        healthCheck: {
          path: s(health, "path") ?? "/",
          intervalSeconds: n(health, "interval") ?? 30,
          healthyThreshold: n(health, "healthyThreshold") ?? 5,
          unhealthyThreshold: n(health, "unhealthyThreshold") ?? 2,
          timeoutSeconds: n(health, "timeout") ?? 5,
        },
      },
    };
  });
}

export function taskDefinitionsFrom(resources: RecordedResource[]): LocalTaskDefinition[] {
  return ofType(resources, "aws:ecs/taskDefinition:TaskDefinition").map((r) => {
    const parsed: unknown = JSON.parse(s(r.inputs, "containerDefinitions") ?? "[]");
    if (!Array.isArray(parsed)) throw new Error(`${r.name}: containerDefinitions is not a JSON array`);
    return {
      urn: r.urn,
      logicalName: r.name,
      arn: need(r, s(r.outputs, "arn"), "arn"),
      family: need(r, s(r.outputs, "family") ?? s(r.inputs, "family"), "family"),
      containerDefinitions: parsed as Array<Record<string, unknown>>,
    };
  });
}

export function servicesFrom(resources: RecordedResource[]): LocalService[] {
  return ofType(resources, "aws:ecs/service:Service").map((r) => ({
    urn: r.urn,
    logicalName: r.name,
    name: need(r, s(r.outputs, "name"), "name"),
    clusterArn: need(r, s(r.inputs, "cluster"), "cluster"),
    taskDefinitionArn: need(r, s(r.inputs, "taskDefinition"), "taskDefinition"),
    desiredCount: n(r.inputs, "desiredCount") ?? 0,
  }));
}

export function tablesFrom(resources: RecordedResource[]): LocalTable[] {
  return ofType(resources, "aws:dynamodb/table:Table").map((r) => ({
    urn: r.urn,
    logicalName: r.name,
    name: need(r, s(r.outputs, "name"), "name"),
    arn: need(r, s(r.outputs, "arn"), "arn"),
  }));
}

export function clustersFrom(resources: RecordedResource[]): Topology["clusters"] {
  return ofType(resources, "aws:ecs/cluster:Cluster").map((r) => ({
    urn: r.urn,
    logicalName: r.name,
    name: need(r, s(r.outputs, "name"), "name"),
    arn: need(r, s(r.outputs, "arn"), "arn"),
  }));
}

export function topicsFrom(resources: RecordedResource[]): LocalTopic[] {
  const subscriptions = ofType(resources, "aws:sns/topicSubscription:TopicSubscription");
  return ofType(resources, "aws:sns/topic:Topic").map((r) => {
    const arn = need(r, s(r.outputs, "arn"), "arn");
    return {
      urn: r.urn,
      logicalName: r.name,
      name: need(r, s(r.outputs, "name"), "name"),
      arn,
      subscriptions: subscriptions
        .filter((x) => s(x.inputs, "topic") === arn)
        .map((x) => ({ protocol: need(x, s(x.inputs, "protocol"), "protocol"), endpoint: need(x, s(x.inputs, "endpoint"), "endpoint") })),
    };
  });
}

/**
 * Every metric alarm, with CloudWatch's defaults filled in. A metric-math alarm has no single
 * metric (its namespace, metric and statistic are empty); the alarm evaluator says so.
 */
export function alarmsFrom(resources: RecordedResource[]): LocalAlarm[] {
  return ofType(resources, "aws:cloudwatch/metricAlarm:MetricAlarm").map((r) => {
    const namespace = s(r.inputs, "namespace") ?? "";
    const dimensions = strMap(o(r.inputs, "dimensions"));
    const evaluationPeriods = needNumber(r, n(r.inputs, "evaluationPeriods"), "evaluationPeriods");
    const description = s(r.inputs, "alarmDescription");
    // Absent on an anomaly-detection alarm, which compares with a band (`thresholdMetricId`).
    const threshold = n(r.inputs, "threshold");
    const queries = alarmQueriesFrom(r.inputs.metricQueries);
    return {
      urn: r.urn,
      logicalName: r.name,
      name: need(r, s(r.outputs, "name"), "name"),
      arn: need(r, s(r.outputs, "arn"), "arn"),
      ...(description !== undefined ? { description } : {}),
      namespace,
      metricName: s(r.inputs, "metricName") ?? "",
      dimensions,
      ...(namespace === "AWS/SQS" && dimensions.QueueName !== undefined ? { queueName: dimensions.QueueName } : {}),
      statistic: s(r.inputs, "statistic") ?? s(r.inputs, "extendedStatistic") ?? "",
      // A metric-math alarm's period is its metrics' (CloudWatch takes it from the queries).
      periodSeconds: n(r.inputs, "period") ?? queries?.find((q) => q.metric)?.metric?.periodSeconds ?? 0,
      evaluationPeriods,
      datapointsToAlarm: n(r.inputs, "datapointsToAlarm") ?? evaluationPeriods,
      ...(threshold !== undefined ? { threshold } : {}),
      comparisonOperator: need(r, s(r.inputs, "comparisonOperator"), "comparisonOperator"),
      treatMissingData: s(r.inputs, "treatMissingData") ?? "missing",
      alarmActions: strList(r.inputs.alarmActions),
      okActions: strList(r.inputs.okActions),
      ...(queries !== undefined ? { queries } : {}),
    };
  });
}

/** pulumi-aws's `metricQueries` inputs, or undefined when there are none. */
function alarmQueriesFrom(value: unknown): LocalAlarmQuery[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value
    .filter((q): q is Record<string, unknown> => typeof q === "object" && q !== null)
    .map((q) => {
      const metric = o(q, "metric");
      const expression = s(q, "expression");
      const label = s(q, "label");
      return {
        id: s(q, "id") ?? "",
        ...(expression !== undefined ? { expression } : {}),
        ...(label !== undefined ? { label } : {}),
        // CloudWatch's default: a query returns its data unless told not to.
        returnData: q.returnData !== false,
        ...(metric !== undefined
          ? {
              metric: {
                namespace: s(metric, "namespace") ?? "",
                metricName: s(metric, "metricName") ?? "",
                dimensions: strMap(o(metric, "dimensions")),
                stat: s(metric, "stat") ?? "",
                periodSeconds: n(metric, "period") ?? 0,
              },
            }
          : {}),
      };
    });
}

/**
 * Splits custom resources into created (in moto) and uncreated (recorded only). Outcomes are
 * keyed by type and logical name, which is all the mocks see; a program that reuses a logical
 * name for two resources of one type would collide in moto's physical names first.
 */
export function splitCreated(resources: RecordedResource[], outcomes: ProvisionOutcome[]): Pick<Topology, "created" | "uncreated"> {
  const created = new Set(outcomes.filter((x) => x.created).map((x) => `${x.type}\0${x.name}`));
  const custom = resources.filter((r) => r.custom);
  return {
    created: custom.filter((r) => created.has(`${r.type}\0${r.name}`)).map((r) => r.urn),
    uncreated: custom.filter((r) => !created.has(`${r.type}\0${r.name}`)).map((r) => ({ urn: r.urn, type: r.type })),
  };
}

export function buildTopology(args: {
  project: string;
  stack: string;
  region: string;
  resources: RecordedResource[];
  outcomes: ProvisionOutcome[];
  codeDir: string;
}): Topology {
  const { resources } = args;
  const functions = functionsFrom(resources, args.codeDir);
  const queues = queuesFrom(resources);
  return {
    project: args.project,
    stack: args.stack,
    region: args.region,
    resources,
    functions,
    mappings: mappingsFrom(resources, queues, functions),
    queues,
    schedules: schedulesFrom(resources),
    instances: instancesFrom(resources),
    fleets: fleetsFrom(resources),
    taskDefinitions: taskDefinitionsFrom(resources),
    services: servicesFrom(resources),
    tables: tablesFrom(resources),
    clusters: clustersFrom(resources),
    topics: topicsFrom(resources),
    alarms: alarmsFrom(resources),
    ...splitCreated(resources, args.outcomes),
  };
}
