/**
 * SNS: topics, their policies and subscriptions, created in moto and answered with moto's ARNs,
 * so every alarm's actions name a topic the local run can publish to.
 */
import { CreateTopicCommand, SetTopicAttributesCommand, SubscribeCommand } from "@aws-sdk/client-sns";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, keyValueTags, pascal, policyText, str, type Inputs, type Reader } from "./inputs";

/** A boolean input as the string SNS takes its attributes in. */
const flag: Reader<string> = (inputs, k) => (bool(inputs, k) === undefined ? undefined : String(bool(inputs, k)));

async function topic(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const fifo = bool(inputs, "fifoTopic") === true;
  const name = str(inputs, "name") ?? `${physicalName(args)}${fifo ? ".fifo" : ""}`;
  const created = await ctx.sns.send(
    new CreateTopicCommand({
      Name: name,
      // SNS takes attributes as strings: only the ones the program set.
      Attributes: {
        ...pascal(str, inputs, ["displayName", "kmsMasterKeyId"]),
        ...pascal(policyText, inputs, ["policy", "deliveryPolicy"]),
        ...(fifo ? { FifoTopic: "true" } : {}),
        ...pascal(flag, inputs, ["contentBasedDeduplication"]),
      },
      Tags: keyValueTags(inputs),
    }),
  );
  const arn = created.TopicArn;
  if (!arn) throw new Error("CreateTopic returned no TopicArn");
  // pulumi-aws's topic id is its ARN.
  return { id: arn, state: { ...inputs, name, arn, owner: ctx.account } };
}

async function topicPolicy(ctx: ProvisionContext, _args: Args, inputs: Inputs): Promise<Result> {
  const arn = str(inputs, "arn");
  if (!arn) throw new Error("the topic policy names no topic ARN");
  await ctx.sns.send(new SetTopicAttributesCommand({ TopicArn: arn, AttributeName: "Policy", AttributeValue: policyText(inputs, "policy") }));
  return { id: arn, state: { ...inputs, owner: ctx.account } };
}

async function topicSubscription(ctx: ProvisionContext, _args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  const protocol = str(inputs, "protocol");
  const subscribed = await ctx.sns.send(
    new SubscribeCommand({
      TopicArn: str(inputs, "topic"),
      Protocol: protocol,
      Endpoint: str(inputs, "endpoint"),
      ReturnSubscriptionArn: true,
      Attributes: {
        ...pascal(flag, inputs, ["rawMessageDelivery"]),
        ...pascal(policyText, inputs, ["filterPolicy", "redrivePolicy", "deliveryPolicy"]),
        ...pascal(str, inputs, ["filterPolicyScope", "subscriptionRoleArn"]),
      },
    }),
  );
  const arn = subscribed.SubscriptionArn;
  if (!arn) throw new Error("Subscribe returned no SubscriptionArn");
  if (protocol === "email" || protocol === "email-json")
    notes.push("moto confirms the subscription at once; on AWS it stays pending until its recipient confirms it");
  return { id: arn, state: { ...inputs, arn, owner: ctx.account } };
}

export const snsProvisioners: Provisioners = {
  "aws:sns/topic:Topic": creates(topic),
  "aws:sns/topicPolicy:TopicPolicy": creates(topicPolicy),
  "aws:sns/topicSubscription:TopicSubscription": creates(topicSubscription),
};
