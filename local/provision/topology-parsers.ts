/**
 * Pure builders: RecordedResource[] → the Topology's parts, one per resource type, with AWS's
 * defaults where the program leaves a setting out (unit-tested without moto).
 */
import type { RecordedResource } from "../../policy/testing/types";
import { QUEUE_ROLE_TAG } from "../../policy/contract";
import { str as s, num as n, bool, definedOnly, obj as o, objs, strs, tagMap } from "./inputs";
import { codePathFor } from "./recorded";
import type {
  LocalAlarm,
  LocalAlarmQuery,
  LocalFleet,
  LocalFunction,
  LocalInstance,
  LocalMapping,
  LocalQueue,
  LocalSchedule,
  LocalService,
  LocalTable,
  LocalTaskDefinition,
  LocalTopic,
} from "./topology-types";

function ofType(resources: RecordedResource[], type: string): RecordedResource[] {
  return resources.filter((r) => r.type === type);
}

function need<T>(r: RecordedResource, value: T | undefined, what: string): T {
  if (value === undefined || value === "") throw new Error(`${r.type} "${r.name}" (${r.urn}) has no ${what} in the recording`);
  return value;
}

/** What every part carries: its URN and logical (Pulumi) name. */
const identity = (r: RecordedResource) => ({ urn: r.urn, logicalName: r.name });

/** Lambda's default timeout and memory, when the program leaves them out. */
const LAMBDA_DEFAULTS = { timeout: 3, memorySize: 128 };

export function functionsFrom(resources: RecordedResource[], codeDir: string): LocalFunction[] {
  return ofType(resources, "aws:lambda/function:Function").map((r) => ({
    ...identity(r),
    name: need(r, s(r.outputs, "name"), "name"),
    arn: need(r, s(r.outputs, "arn"), "arn"),
    codePath: codePathFor(codeDir, r.name),
    handler: s(r.inputs, "handler") ?? "index.handler",
    environment: tagMap(o(r.inputs, "environment"), "variables"),
    timeoutSeconds: n(r.inputs, "timeout") ?? LAMBDA_DEFAULTS.timeout,
    memoryMb: n(r.inputs, "memorySize") ?? LAMBDA_DEFAULTS.memorySize,
  }));
}

export function queuesFrom(resources: RecordedResource[]): LocalQueue[] {
  return ofType(resources, "aws:sqs/queue:Queue").map((r) =>
    definedOnly({
      ...identity(r),
      name: need(r, s(r.outputs, "name"), "name"),
      url: need(r, s(r.outputs, "url"), "url"),
      arn: need(r, s(r.outputs, "arn"), "arn"),
      role: tagMap(r.inputs)[QUEUE_ROLE_TAG] || undefined,
      // SQS's default visibility timeout.
      visibilityTimeoutSeconds: n(r.inputs, "visibilityTimeoutSeconds") ?? 30,
      redrive: parseRedrive(s(r.inputs, "redrivePolicy")),
    }),
  );
}

export function parseRedrive(policy: string | undefined): LocalQueue["redrive"] {
  if (!policy) return undefined;
  const parsed = JSON.parse(policy) as Record<string, unknown>;
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
      return definedOnly({
        ...identity(r),
        functionName: target?.name ?? functionNameOf(fn),
        queueArn,
        queueUrl: queue.url,
        // Lambda's SQS defaults.
        batchSize: n(r.inputs, "batchSize") ?? 10,
        batchingWindowSeconds: n(r.inputs, "maximumBatchingWindowInSeconds") ?? 0,
        maximumConcurrency: n(o(r.inputs, "scalingConfig"), "maximumConcurrency"),
        reportBatchItemFailures: strs(r.inputs, "functionResponseTypes").includes("ReportBatchItemFailures"),
        enabled: bool(r.inputs, "enabled") ?? true,
      });
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
    return definedOnly({
      ...identity(r),
      name: need(r, s(r.outputs, "name"), "name"),
      expression: need(r, s(r.inputs, "scheduleExpression"), "scheduleExpression"),
      timezone: s(r.inputs, "scheduleExpressionTimezone"),
      enabled: (s(r.inputs, "state") ?? "ENABLED") === "ENABLED",
      target: definedOnly({
        arn: need(r, s(target, "arn"), "target.arn"),
        input: s(target, "input"),
        deadLetterArn: s(o(target, "deadLetterConfig"), "arn"),
        // EventBridge Scheduler's defaults.
        maximumRetryAttempts: n(retry, "maximumRetryAttempts") ?? 185,
        maximumEventAgeInSeconds: n(retry, "maximumEventAgeInSeconds") ?? 86400,
      }),
    });
  });
}

export function instancesFrom(resources: RecordedResource[]): LocalInstance[] {
  return ofType(resources, "aws:ec2/instance:Instance").map((r) =>
    definedOnly({
      ...identity(r),
      // The recording holds state, not the id; the ARN ends in it.
      id: need(r, s(r.outputs, "arn")?.split("/").pop(), "arn"),
      tags: tagMap(r.inputs),
      instanceType: s(r.inputs, "instanceType"),
      userData: s(r.inputs, "userData"),
    }),
  );
}

/** Each Auto Scaling group with its load balancer: group → target group (by ARN) → listener → load balancer. */
export function fleetsFrom(resources: RecordedResource[]): LocalFleet[] {
  const byArn = (type: string, arn: string | undefined) => ofType(resources, type).find((r) => arn !== undefined && s(r.outputs, "arn") === arn);
  return ofType(resources, "aws:autoscaling/group:Group").map((r) => {
    const tgArn = strs(r.inputs, "targetGroupArns")[0];
    const tg = byArn("aws:lb/targetGroup:TargetGroup", tgArn);
    if (!tg) throw new Error(`${r.type} "${r.name}" (${r.urn}) has no target group in the recording: the local run needs its load balancer`);
    const listener = ofType(resources, "aws:lb/listener:Listener").find((l) => objs(l.inputs, "defaultActions").some((a) => s(a, "targetGroupArn") === tgArn));
    if (!listener) throw new Error(`target group "${tg.name}" has no listener in the recording`);
    const lb = byArn("aws:lb/loadBalancer:LoadBalancer", s(listener.inputs, "loadBalancerArn"));
    if (!lb) throw new Error(`listener "${listener.name}" names no load balancer of the recording`);
    const mixed = o(r.inputs, "mixedInstancesPolicy");
    const distribution = o(mixed, "instancesDistribution");
    const overrides = objs(o(mixed, "launchTemplate"), "overrides");
    const groupName = need(r, s(r.outputs, "name"), "name");
    const hook = ofType(resources, "aws:autoscaling/lifecycleHook:LifecycleHook")
      .map((h) => h.inputs)
      .find((h) => s(h, "lifecycleTransition") === "autoscaling:EC2_INSTANCE_TERMINATING" && s(h, "autoscalingGroupName") === groupName);
    const ltId = s(o(o(mixed, "launchTemplate"), "launchTemplateSpecification"), "launchTemplateId") ?? s(o(r.inputs, "launchTemplate"), "id");
    const lt = ofType(resources, "aws:ec2/launchTemplate:LaunchTemplate").find((t) => ltId !== undefined && (t.id === ltId || s(t.outputs, "id") === ltId));
    const userData = s(lt?.inputs, "userData");
    const health = o(tg.inputs, "healthCheck");
    return definedOnly({
      ...identity(r),
      groupName,
      maxSize: need(r, n(r.inputs, "maxSize"), "maxSize"),
      instanceType: s(lt?.inputs, "instanceType"),
      spot: mixed && {
        onDemandBaseCapacity: n(distribution, "onDemandBaseCapacity") ?? 0,
        onDemandPercentageAboveBaseCapacity: n(distribution, "onDemandPercentageAboveBaseCapacity") ?? 100,
        instanceTypes: overrides.flatMap((x) => s(x, "instanceType") ?? []),
      },
      warmPoolMinSize: n(o(r.inputs, "warmPool"), "minSize") ?? 0,
      drainHookSeconds: n(hook, "heartbeatTimeout") ?? 0,
      drainHookName: s(hook, "name"),
      // Base64 in the launch template.
      userData: userData === undefined ? undefined : Buffer.from(userData, "base64").toString("utf8"),
      loadBalancer: {
        dnsName: need(lb, s(lb.outputs, "dnsName"), "dnsName"),
        port: need(listener, n(listener.inputs, "port"), "port"),
        // AWS's defaults for an HTTP target group where the program leaves one unset.
        healthCheck: {
          path: s(health, "path") ?? "/",
          intervalSeconds: n(health, "interval") ?? 30,
          healthyThreshold: n(health, "healthyThreshold") ?? 5,
          unhealthyThreshold: n(health, "unhealthyThreshold") ?? 2,
          timeoutSeconds: n(health, "timeout") ?? 5,
        },
      },
    });
  });
}

export function taskDefinitionsFrom(resources: RecordedResource[]): LocalTaskDefinition[] {
  return ofType(resources, "aws:ecs/taskDefinition:TaskDefinition").map((r) => {
    const parsed: unknown = JSON.parse(s(r.inputs, "containerDefinitions") ?? "[]");
    if (!Array.isArray(parsed)) throw new Error(`${r.name}: containerDefinitions is not a JSON array`);
    return {
      ...identity(r),
      arn: need(r, s(r.outputs, "arn"), "arn"),
      family: need(r, s(r.outputs, "family") ?? s(r.inputs, "family"), "family"),
      containerDefinitions: parsed as Array<Record<string, unknown>>,
    };
  });
}

export function servicesFrom(resources: RecordedResource[]): LocalService[] {
  return ofType(resources, "aws:ecs/service:Service").map((r) => ({
    ...identity(r),
    name: need(r, s(r.outputs, "name"), "name"),
    clusterArn: need(r, s(r.inputs, "cluster"), "cluster"),
    taskDefinitionArn: need(r, s(r.inputs, "taskDefinition"), "taskDefinition"),
    desiredCount: n(r.inputs, "desiredCount") ?? 0,
  }));
}

/** A part known by its physical name and ARN alone (a table, a cluster). */
function namedFrom(resources: RecordedResource[], type: string): LocalTable[] {
  return ofType(resources, type).map((r) => ({ ...identity(r), name: need(r, s(r.outputs, "name"), "name"), arn: need(r, s(r.outputs, "arn"), "arn") }));
}

export const tablesFrom = (resources: RecordedResource[]): LocalTable[] => namedFrom(resources, "aws:dynamodb/table:Table");
export const clustersFrom = (resources: RecordedResource[]): LocalTable[] => namedFrom(resources, "aws:ecs/cluster:Cluster");

export function topicsFrom(resources: RecordedResource[]): LocalTopic[] {
  const subscriptions = ofType(resources, "aws:sns/topicSubscription:TopicSubscription");
  return ofType(resources, "aws:sns/topic:Topic").map((r) => {
    const arn = need(r, s(r.outputs, "arn"), "arn");
    return {
      ...identity(r),
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
    const dimensions = tagMap(r.inputs, "dimensions");
    const evaluationPeriods = need(r, n(r.inputs, "evaluationPeriods"), "evaluationPeriods");
    const queries = alarmQueriesFrom(objs(r.inputs, "metricQueries"));
    return definedOnly({
      ...identity(r),
      name: need(r, s(r.outputs, "name"), "name"),
      arn: need(r, s(r.outputs, "arn"), "arn"),
      description: s(r.inputs, "alarmDescription"),
      namespace,
      metricName: s(r.inputs, "metricName") ?? "",
      dimensions,
      queueName: namespace === "AWS/SQS" ? dimensions.QueueName : undefined,
      statistic: s(r.inputs, "statistic") ?? s(r.inputs, "extendedStatistic") ?? "",
      // A metric-math alarm's period is its metrics' (CloudWatch takes it from the queries).
      periodSeconds: n(r.inputs, "period") ?? queries?.find((q) => q.metric)?.metric?.periodSeconds ?? 0,
      evaluationPeriods,
      datapointsToAlarm: n(r.inputs, "datapointsToAlarm") ?? evaluationPeriods,
      // Absent on an anomaly-detection alarm, which compares with a band (`thresholdMetricId`).
      threshold: n(r.inputs, "threshold"),
      comparisonOperator: need(r, s(r.inputs, "comparisonOperator"), "comparisonOperator"),
      treatMissingData: s(r.inputs, "treatMissingData") ?? "missing",
      alarmActions: strs(r.inputs, "alarmActions"),
      okActions: strs(r.inputs, "okActions"),
      queries,
    });
  });
}

/** pulumi-aws's `metricQueries` inputs, or undefined when there are none. */
function alarmQueriesFrom(queries: Record<string, unknown>[]): LocalAlarmQuery[] | undefined {
  if (queries.length === 0) return undefined;
  return queries.map((q) => {
    const metric = o(q, "metric");
    return definedOnly({
      id: s(q, "id") ?? "",
      expression: s(q, "expression"),
      label: s(q, "label"),
      // CloudWatch's default: a query returns its data unless told not to.
      returnData: q.returnData !== false,
      metric: metric && {
        namespace: s(metric, "namespace") ?? "",
        metricName: s(metric, "metricName") ?? "",
        dimensions: tagMap(metric, "dimensions"),
        stat: s(metric, "stat") ?? "",
        periodSeconds: n(metric, "period") ?? 0,
      },
    });
  });
}
