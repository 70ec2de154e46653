/** SQS: queues, created with their attributes; answered with moto's URL and ARN. */
import { CreateQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, num, str, tagMap, type Inputs } from "./inputs";

async function queue(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const fifo = bool(inputs, "fifoQueue") === true;
  const name = str(inputs, "name") ?? `${physicalName(args)}${fifo ? ".fifo" : ""}`;
  const created = await ctx.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: queueAttributes(inputs, fifo), tags: tagMap(inputs) }));
  const url = created.QueueUrl;
  if (!url) throw new Error("CreateQueue returned no QueueUrl");
  const attrs = await ctx.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }));
  return { id: url, state: { ...inputs, name, url, arn: attrs.Attributes?.QueueArn ?? `arn:aws:sqs:${ctx.region}:${ctx.account}:${name}` } };
}

/** pulumi-aws's queue inputs → CreateQueue's string attributes (the ones the program set). */
function queueAttributes(inputs: Inputs, fifo: boolean): Record<string, string> {
  const attribute = (k: string, v: string | number | boolean | undefined) => (v === undefined ? {} : { [k]: String(v) });
  return {
    ...attribute("VisibilityTimeout", num(inputs, "visibilityTimeoutSeconds")),
    ...attribute("MessageRetentionPeriod", num(inputs, "messageRetentionSeconds")),
    ...attribute("DelaySeconds", num(inputs, "delaySeconds")),
    ...attribute("ReceiveMessageWaitTimeSeconds", num(inputs, "receiveWaitTimeSeconds")),
    ...attribute("MaximumMessageSize", num(inputs, "maxMessageSize")),
    ...attribute("RedrivePolicy", str(inputs, "redrivePolicy")),
    ...attribute("SqsManagedSseEnabled", bool(inputs, "sqsManagedSseEnabled")),
    ...attribute("FifoQueue", fifo ? true : undefined),
    ...attribute("ContentBasedDeduplication", bool(inputs, "contentBasedDeduplication")),
  };
}

export const sqsProvisioners: Provisioners = {
  "aws:sqs/queue:Queue": creates(queue),
  // aws:sqs/redriveAllowPolicy:RedriveAllowPolicy is recorded only (./recorded.ts).
};
