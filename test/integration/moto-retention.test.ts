/**
 * SQS deletes a message once it is older than its queue's MessageRetentionPeriod; moto kept it,
 * marked it received on every receive that met it (returning nothing more in that call), and after
 * maxReceiveCount such receives moved it to the DLQ. A loaded chaos run found 87 pool adverts in
 * their class's DLQ that way, never handed to a consumer. local/aws/moto-server.py deletes them as
 * SQS does and writes each deletion to MOTO_SQS_EXPIRED_LOG (retention_deletes).
 *
 * The retention here is 1 s (moto takes any value; SQS's least is 60 s), so the test waits a real
 * second and a bit: expiry is the server's own clock, which fake timers cannot move.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { MotoServer, motoClientEnv } from "../../local/aws/moto";

const RETENTION_SECONDS = 1;

describe("local AWS (moto-server.py): messages past their retention are deleted, as SQS deletes them", function () {
  this.timeout(60_000);
  const moto = new MotoServer();
  const dir = mkdtempSync(path.join(tmpdir(), "moto-retention-"));
  const log = path.join(dir, "expired.jsonl");
  let sqs: SQSClient;

  before(async () => {
    const endpoint = await moto.start({ expiredLog: log });
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY } = motoClientEnv(endpoint, "us-east-1");
    sqs = new SQSClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: AWS_ACCESS_KEY_ID!, secretAccessKey: AWS_SECRET_ACCESS_KEY! },
      maxAttempts: 1,
    });
  });

  after(async () => {
    sqs?.destroy();
    await moto.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("never delivers nor dead-letters an expired message, hands out the fresh one behind it, and logs the expiry", async () => {
    // Prepare: a queue whose DLQ takes a message after 2 receives; one message left to expire, one fresh.
    const dlq = await sqs.send(new CreateQueueCommand({ QueueName: "adverts-dlq" }));
    const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn;
    const queue = await sqs.send(
      new CreateQueueCommand({
        QueueName: "adverts",
        Attributes: {
          MessageRetentionPeriod: String(RETENTION_SECONDS),
          VisibilityTimeout: "0",
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }),
        },
      }),
    );
    const stale = await sqs.send(new SendMessageCommand({ QueueUrl: queue.QueueUrl, MessageBody: "stale" }));
    await new Promise((r) => setTimeout(r, RETENTION_SECONDS * 1000 + 300));
    await sqs.send(new SendMessageCommand({ QueueUrl: queue.QueueUrl, MessageBody: "fresh" }));

    // Act: one receive, which must reach the fresh message; then, with it deleted, more receives than maxReceiveCount.
    const first = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
    for (const m of first.Messages ?? []) await sqs.send(new DeleteMessageCommand({ QueueUrl: queue.QueueUrl, ReceiptHandle: m.ReceiptHandle }));
    const later: string[] = [];
    for (let i = 0; i < 3; i++) {
      const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
      later.push(...(out.Messages ?? []).map((m) => m.Body ?? ""));
    }
    const inDlq = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10 }));

    // Assess: moto's own receive returned nothing first (the expired message ended the call) and dead-lettered it by the third.
    expect((first.Messages ?? []).map((m) => m.Body)).to.deep.equal(["fresh"]);
    expect(later).to.deep.equal([]);
    expect(inDlq.Messages ?? []).to.have.length(0);
    const expired = await moto.expired();
    expect(expired.map((e) => [e.queueName, e.messageId])).to.deep.equal([["adverts", stale.MessageId]]);
    expect(expired[0]?.retentionSeconds).to.equal(RETENTION_SECONDS);
  });
});
