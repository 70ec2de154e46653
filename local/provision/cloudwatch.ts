/**
 * CloudWatch: metric alarms, put into moto with their metric, threshold and actions, and
 * answered with moto's ARN. moto stores alarms but never evaluates them: the local run computes
 * from its own queue-depth samples which would have fired (../observe/alarm-eval.ts).
 */
import { DescribeAlarmsCommand, PutMetricAlarmCommand, type Dimension, type MetricDataQuery } from "@aws-sdk/client-cloudwatch";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, keyValueTags, num, obj, objs, pascal, str, strs, tagMap, type Inputs } from "./inputs";

async function metricAlarm(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const queries = objs(inputs, "metricQueries").map(metricQuery);
  await ctx.cloudwatch.send(
    new PutMetricAlarmCommand({
      AlarmName: name,
      // The SDK's unions of literals (statistic, unit, comparison); the provider has already checked the program's strings.
      ...pascal(str, inputs, ["alarmDescription", "namespace", "metricName", "statistic", "extendedStatistic", "unit", "thresholdMetricId"]),
      ...pascal(str, inputs, ["comparisonOperator", "treatMissingData", "evaluateLowSampleCountPercentile"]),
      ...pascal(num, inputs, ["period", "evaluationPeriods", "datapointsToAlarm", "threshold"]),
      ...pascal(strs, inputs, ["alarmActions", "insufficientDataActions"]),
      ActionsEnabled: bool(inputs, "actionsEnabled"),
      OKActions: strs(inputs, "okActions"),
      Dimensions: dimensions(inputs),
      ...(queries.length > 0 ? { Metrics: queries } : {}),
      Tags: keyValueTags(inputs),
    }),
  );
  const described = await ctx.cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: [name] }));
  const arn = described.MetricAlarms?.[0]?.AlarmArn ?? `arn:aws:cloudwatch:${ctx.region}:${ctx.account}:alarm:${name}`;
  return { id: name, state: { ...inputs, name, arn } };
}

/** pulumi-aws's `dimensions` map → CloudWatch's `{ Name, Value }` list. */
function dimensions(o: Inputs | undefined): Dimension[] | undefined {
  const entries = Object.entries(tagMap(o, "dimensions"));
  return entries.length === 0 ? undefined : entries.map(([Name, Value]) => ({ Name, Value }));
}

/** One of pulumi-aws's `metricQueries` (a metric-math alarm's inputs) → PutMetricAlarm's `Metrics`. */
function metricQuery(q: Inputs): MetricDataQuery {
  const metric = obj(q, "metric");
  return {
    ...pascal(str, q, ["id", "expression", "label", "accountId"]),
    ...pascal(bool, q, ["returnData"]),
    ...pascal(num, q, ["period"]),
    ...(metric
      ? {
          MetricStat: {
            Metric: { ...pascal(str, metric, ["namespace", "metricName"]), Dimensions: dimensions(metric) },
            ...pascal(num, metric, ["period"]),
            ...pascal(str, metric, ["stat", "unit"]),
          },
        }
      : {}),
  } as MetricDataQuery;
}

export const cloudwatchProvisioners: Provisioners = {
  "aws:cloudwatch/metricAlarm:MetricAlarm": creates(metricAlarm),
  // aws:cloudwatch/logGroup:LogGroup is recorded only (./recorded.ts).
};
