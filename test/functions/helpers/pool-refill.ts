/** Arrangement of the pool refill tests: fake EC2, claim table, clock and SQS around one class. */
import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand, SQSClient, SQSServiceException } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import type { PoolClassConfig, RefillConfig } from "../../../functions/pool/config";
import { FakeClaimTable, FakeClock, FakeEc2, type FakeEc2Instance, instanceId, POOL_TAG, poolTags, QUEUE_URL, TABLE, telemetry } from "./pool-fakes";

export const REFILL_DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/pool-refill-dlq";
export const CLS: PoolClassConfig = {
  name: "gpu-small",
  queueUrl: QUEUE_URL,
  launchTemplateId: "lt-0123",
  size: 3,
  instanceTypes: ["g5.xlarge"],
  cpu: 4,
  memoryMib: 16384,
  usageClass: "on-demand",
};

function sqsError(name: string): SQSServiceException {
  return new SQSServiceException({ name, message: name, $fault: "client", $metadata: { httpStatusCode: 400 } });
}

export function arrange(instances: FakeEc2Instance[] = [], size = 3) {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(instances);
  const table = new FakeClaimTable();
  const sqs = new SQSClient({ region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" } });
  const sqsMock = mockClient(sqs);
  sqsMock.on(SendMessageCommand).resolves({ MessageId: "x" });
  sqsMock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => {
    const entries = input.Entries ?? [];
    // What SQS rejects as a whole: an empty batch, more than 10 entries, repeated entry ids.
    if (entries.length === 0) throw sqsError("AWS.SimpleQueueService.EmptyBatchRequest");
    if (entries.length > 10) throw sqsError("AWS.SimpleQueueService.TooManyEntriesInBatchRequest");
    if (new Set(entries.map((e) => e.Id)).size !== entries.length) throw sqsError("AWS.SimpleQueueService.BatchEntryIdsNotDistinct");
    // The SDK leaves out a list the response does not carry: here, Failed when nothing failed.
    return { Successful: entries.map((e) => ({ Id: e.Id, MessageId: "x", MD5OfMessageBody: "" })) };
  });
  const t = telemetry();
  const config: RefillConfig = {
    classes: [{ ...CLS, size }],
    claimTableName: TABLE,
    poolTag: POOL_TAG,
    poolTagKey: "encache:pool",
    poolClassTagKey: "encache:pool-class",
    leaseSeconds: 120,
    quarantineQueueUrl: REFILL_DLQ,
  };
  const deps = { ec2: ec2.ec2, dynamodb: table.dynamodb, sqs, clock: clock.read, config, ...t };
  const adverts = () =>
    sqsMock
      .commandCalls(SendMessageBatchCommand)
      .filter((c) => c.args[0].input.QueueUrl === QUEUE_URL)
      .flatMap((c) => c.args[0].input.Entries ?? [])
      .map((e) => JSON.parse(e.MessageBody ?? "") as { instance_id: string });
  return { clock, ec2, table, sqsMock, deps, config, adverts, ...t };
}

export const pooled = (state: string, cls = "gpu-small"): FakeEc2Instance => ({ id: instanceId(), state, tags: poolTags(cls) });
