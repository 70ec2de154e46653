/**
 * EventBridge: rules and their targets, created in moto, which matches events put on its default
 * bus against each rule's pattern and delivers them to SQS targets, as EventBridge does. The local
 * ECS stand-in puts the task state changes AWS would (../hosts/ecs-tasks.ts). SQS queue policies
 * are set on their queues; moto does not enforce them.
 */
import { PutRuleCommand, PutTargetsCommand } from "@aws-sdk/client-eventbridge";
import { SetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { keyValueTags, num, obj, pascal, policyText, str, type Inputs } from "./inputs";

async function rule(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = str(inputs, "name") ?? physicalName(args);
  const out = await ctx.events.send(
    new PutRuleCommand({
      Name: name,
      EventPattern: policyText(inputs, "eventPattern"),
      ScheduleExpression: str(inputs, "scheduleExpression"),
      Description: str(inputs, "description"),
      State: str(inputs, "state") === "DISABLED" ? "DISABLED" : "ENABLED",
      Tags: keyValueTags(inputs),
    }),
  );
  const arn = out.RuleArn ?? `arn:aws:events:${ctx.region}:${ctx.account}:rule/${name}`;
  // pulumi-aws's rule id is `<bus>/<name>` on a custom bus, else the name.
  return { id: name, state: { ...inputs, name, arn, eventBusName: "default" } };
}

async function target(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const ruleName = str(inputs, "rule");
  if (!ruleName) throw new Error("the event target names no rule");
  const targetId = str(inputs, "targetId") ?? physicalName(args);
  const retry = obj(inputs, "retryPolicy");
  const dlq = obj(inputs, "deadLetterConfig");
  const out = await ctx.events.send(
    new PutTargetsCommand({
      Rule: ruleName,
      Targets: [
        {
          Id: targetId,
          Arn: str(inputs, "arn"),
          ...pascal(str, inputs, ["input"]),
          ...(retry ? { RetryPolicy: pascal(num, retry, ["maximumRetryAttempts", "maximumEventAgeInSeconds"]) } : {}),
          ...(dlq ? { DeadLetterConfig: pascal(str, dlq, ["arn"]) } : {}),
        },
      ],
    }),
  );
  if ((out.FailedEntryCount ?? 0) > 0) throw new Error(`PutTargets refused ${targetId}: ${JSON.stringify(out.FailedEntries)}`);
  return { id: `${ruleName}-${targetId}`, state: { ...inputs, targetId, eventBusName: "default" } };
}

async function queuePolicy(ctx: ProvisionContext, _args: Args, inputs: Inputs): Promise<Result> {
  const queueUrl = str(inputs, "queueUrl");
  if (!queueUrl) throw new Error("the queue policy names no queue URL");
  await ctx.sqs.send(new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { Policy: policyText(inputs, "policy") ?? "" } }));
  return { id: queueUrl, state: { ...inputs } };
}

export const eventsProvisioners: Provisioners = {
  "aws:cloudwatch/eventRule:EventRule": creates(rule),
  "aws:cloudwatch/eventTarget:EventTarget": creates(target),
  "aws:sqs/queuePolicy:QueuePolicy": creates(queuePolicy),
};
