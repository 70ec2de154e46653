/**
 * The move-task stand-in's refusals and its count, on moto: SQS's documented rules for
 * StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask.
 */
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { DirectSends, MessageMoveTasks, type MoveTaskQueue, SqsError } from "../../../local/aws/sqs-move-tasks";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

async function refused(p: Promise<unknown> | (() => unknown)): Promise<SqsError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    if (err instanceof SqsError) return err;
    throw err;
  }
  throw new Error("not refused");
}

describe("SQS's message move tasks, as the local stand-in plays them", function () {
  this.timeout(60_000);
  let sqs: SQSClient;
  let queues: MoveTaskQueue[];
  let direct: DirectSends;
  let tasks: MessageMoveTasks;
  const q = (name: string) => queues.find((x) => x.name === name) as MoveTaskQueue;

  beforeEach(async () => {
    await resetMoto();
    sqs = new SQSClient({ region: "us-east-1", endpoint: motoEndpoint() });
    const make = async (name: string): Promise<MoveTaskQueue> => {
      const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? "";
      const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn ?? "";
      return { name, url, arn };
    };
    const dlq = await make("work-dlq");
    queues = [{ ...(await make("work")), deadLetterTargetArn: dlq.arn }, dlq, await make("lonely")];
    direct = new DirectSends();
    tasks = new MessageMoveTasks({ sqs, queues, direct });
  });

  afterEach(async () => {
    await tasks.stop();
    sqs.destroy();
  });

  it("refuses a source that is no queue's DLQ, an unknown queue, and a rate above 500", async () => {
    // Act
    const notDlq = await refused(tasks.start({ SourceArn: q("lonely").arn }));
    const unknown = await refused(tasks.start({ SourceArn: "arn:aws:sqs:us-east-1:123456789012:nope" }));
    const fast = await refused(tasks.start({ SourceArn: q("work-dlq").arn, MaxNumberOfMessagesPerSecond: 501 }));
    // Assess
    expect(notDlq.code).to.equal("UnsupportedOperation");
    expect(notDlq.message).to.include("must be configured as a dead-letter queue");
    expect(unknown.code).to.equal("ResourceNotFoundException");
    expect(fast.code).to.equal("InvalidParameterValue");
  });

  it("takes the count to move at the start, allows one active task per queue, and cancels only a running one", async () => {
    // Prepare: three messages SQS moved (not plain sends to the DLQ, as far as the stand-in knows)
    for (const body of ["a", "b", "c"]) await sqs.send(new SendMessageCommand({ QueueUrl: q("work-dlq").url, MessageBody: body }));
    // Act
    const { TaskHandle } = await tasks.start({ SourceArn: q("work-dlq").arn, MaxNumberOfMessagesPerSecond: 1 });
    const second = await refused(tasks.start({ SourceArn: q("work-dlq").arn }));
    const running = tasks.list({ SourceArn: q("work-dlq").arn }).Results[0];
    tasks.cancel({ TaskHandle });
    const again = await refused(() => tasks.cancel({ TaskHandle }));
    await tasks.stop();
    const ended = tasks.list({ SourceArn: q("work-dlq").arn, MaxResults: 10 }).Results;
    // Assess
    expect(second.message).to.include("Only one active task is allowed");
    expect(running).to.deep.include({ Status: "RUNNING", ApproximateNumberOfMessagesToMove: 3, TaskHandle });
    expect(again.code).to.equal("UnsupportedOperation");
    expect(ended).to.have.length(1);
    expect(ended[0]?.Status).to.equal("CANCELLED");
    expect(ended[0]?.TaskHandle).to.equal(undefined);
  });

  it("fails on a message sent to the DLQ directly, leaving it there", async () => {
    // Prepare
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: q("work-dlq").url, MessageBody: "plain" }));
    direct.sent(q("work-dlq").url, [sent.MessageId ?? ""]);
    // Act
    await tasks.start({ SourceArn: q("work-dlq").arn });
    const deadline = Date.now() + 20_000;
    while (tasks.list({ SourceArn: q("work-dlq").arn }).Results[0]?.Status === "RUNNING" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const [task] = tasks.list({ SourceArn: q("work-dlq").arn }).Results;
    const left = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q("work-dlq").url, AttributeNames: ["ApproximateNumberOfMessages"] }));
    // Assess
    expect(task?.Status).to.equal("FAILED");
    expect(task?.FailureReason).to.include("no DeadLetterQueueSourceArn");
    expect(left.Attributes?.ApproximateNumberOfMessages).to.equal("1");
  });
});
