/**
 * CloudWatch: metric alarms, put into moto with their metric, threshold and actions, and
 * answered with moto's ARN. moto stores alarms but never evaluates them: the local run computes
 * from its own queue-depth samples which would have fired (../observe/alarm-eval.ts).
 */
import {
  DescribeAlarmsCommand,
  PutMetricAlarmCommand,
  type ComparisonOperator,
  type Dimension,
  type MetricDataQuery,
  type StandardUnit,
  type Statistic,
} from "@aws-sdk/client-cloudwatch";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, definedOnly, keyValueTags, num, obj, objs, str, strs, type Inputs } from "./inputs";

async function metricAlarm(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const queries = objs(inputs, "metricQueries").map(metricQuery);
  await ctx.cloudwatch.send(
    new PutMetricAlarmCommand({
      AlarmName: name,
      AlarmDescription: str(inputs, "alarmDescription"),
      ActionsEnabled: bool(inputs, "actionsEnabled"),
      AlarmActions: strs(inputs, "alarmActions"),
      OKActions: strs(inputs, "okActions"),
      InsufficientDataActions: strs(inputs, "insufficientDataActions"),
      Namespace: str(inputs, "namespace"),
      MetricName: str(inputs, "metricName"),
      Dimensions: dimensions(obj(inputs, "dimensions")),
      // The SDK's unions of literals; the provider has already checked the program's strings.
      Statistic: str(inputs, "statistic") as Statistic | undefined,
      ExtendedStatistic: str(inputs, "extendedStatistic"),
      Unit: str(inputs, "unit") as StandardUnit | undefined,
      Period: num(inputs, "period"),
      EvaluationPeriods: num(inputs, "evaluationPeriods"),
      DatapointsToAlarm: num(inputs, "datapointsToAlarm"),
      Threshold: num(inputs, "threshold"),
      ThresholdMetricId: str(inputs, "thresholdMetricId"),
      ComparisonOperator: str(inputs, "comparisonOperator") as ComparisonOperator | undefined,
      TreatMissingData: str(inputs, "treatMissingData"),
      EvaluateLowSampleCountPercentile: str(inputs, "evaluateLowSampleCountPercentile"),
      ...(queries.length > 0 ? { Metrics: queries } : {}),
      Tags: keyValueTags(inputs),
    }),
  );
  const described = await ctx.cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: [name] }));
  const arn = described.MetricAlarms?.[0]?.AlarmArn ?? `arn:aws:cloudwatch:${ctx.region}:${ctx.account}:alarm:${name}`;
  return { id: name, state: { ...inputs, name, arn } };
}

/** pulumi-aws's `dimensions` map → CloudWatch's `{ Name, Value }` list. */
function dimensions(map: Inputs | undefined): Dimension[] | undefined {
  const entries = Object.entries(map ?? {}).filter((e): e is [string, string] => typeof e[1] === "string");
  return entries.length === 0 ? undefined : entries.map(([Name, Value]) => ({ Name, Value }));
}

/** One of pulumi-aws's `metricQueries` (a metric-math alarm's inputs) → PutMetricAlarm's `Metrics`. */
function metricQuery(q: Inputs): MetricDataQuery {
  const metric = obj(q, "metric");
  return definedOnly({
    Id: str(q, "id"),
    Expression: str(q, "expression"),
    Label: str(q, "label"),
    ReturnData: bool(q, "returnData"),
    Period: num(q, "period"),
    AccountId: str(q, "accountId"),
    MetricStat: metric
      ? definedOnly({
          Metric: { Namespace: str(metric, "namespace"), MetricName: str(metric, "metricName"), Dimensions: dimensions(obj(metric, "dimensions")) },
          Period: num(metric, "period"),
          Stat: str(metric, "stat"),
          Unit: str(metric, "unit") as StandardUnit | undefined,
        })
      : undefined,
  });
}

export const cloudwatchProvisioners: Provisioners = {
  "aws:cloudwatch/metricAlarm:MetricAlarm": creates(metricAlarm),
  // aws:cloudwatch/logGroup:LogGroup is recorded only (./recorded.ts).
};
