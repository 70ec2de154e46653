/**
 * SQS's receipt-handle rule, which local/aws/moto-server.py adds to moto (`latest_receipts_only`, and
 * `atomic_deletes` for deletes): a delete or a visibility change with a handle superseded by a later
 * receive does not act on the message. Plain moto acts on any handle a message ever had, so each
 * case here fails without the patch. Checked straight against the server and through both SQS
 * proxies the local run puts in front of it.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { SqsClockProxy } from "../../../local/aws/sqs-clock";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

describe("local AWS (moto-server.py): SQS's receipt-handle rule", () => {
  describe("straight to moto and through the SQS proxies", () => {
    const cases = [
      { name: "straight to moto (what the move tasks and the harness reach)", speed: undefined },
      { name: "at speed 60 (the Lambdas' clock proxy)", speed: 60 },
      { name: "at speed 1 (the worker's real-time proxy)", speed: 1 },
    ];
    for (const c of cases) {
      describe(c.name, () => {
        let proxy: SqsClockProxy | undefined;
        let sqs: SQSClient;
        let queueUrl: string;
        let queues = 0;

        beforeEach(async () => {
          await resetMoto();
          proxy = c.speed === undefined ? undefined : new SqsClockProxy({ target: motoEndpoint(), speed: c.speed });
          sqs = new SQSClient({ endpoint: proxy ? await proxy.start() : motoEndpoint(), maxAttempts: 1 });
          queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `receipts-${++queues}`, Attributes: { VisibilityTimeout: "600" } }))).QueueUrl!;
        });
        afterEach(async () => {
          sqs.destroy();
          await proxy?.stop();
        });

        /** Sends one message and receives it twice (made visible in between): the first handle, then the latest. */
        async function receivedTwice(body: string): Promise<[Message, Message]> {
          await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
          const first = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }))).Messages![0]!;
          await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle!, VisibilityTimeout: 0 }));
          const second = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }))).Messages![0]!;
          return [first, second];
        }
        async function messagesLeft(): Promise<number> {
          const out = await sqs.send(
            new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
          );
          return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
        }

        it("DeleteMessage with the superseded handle succeeds and leaves the message", async () => {
          // Prepare
          const [first, second] = await receivedTwice("d");

          // Act
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle! }));
          const afterStale = await messagesLeft();
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: second.ReceiptHandle! }));

          // Assess
          expect(first.ReceiptHandle).to.not.equal(second.ReceiptHandle);
          expect({ afterStale, afterLatest: await messagesLeft() }).to.deep.equal({ afterStale: 1, afterLatest: 0 });
        });

        it("ChangeMessageVisibility with the superseded handle is ReceiptHandleIsInvalid, in AWS's words, and leaves the message hidden", async () => {
          // Prepare
          const [first] = await receivedTwice("v");

          // Act
          const outcome = await sqs
            .send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle!, VisibilityTimeout: 0 }))
            .then(
              () => ({ name: "ok", message: "" }),
              (err: Error) => ({ name: err.name, message: err.message }),
            );
          const visible = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }))).Messages ?? [];

          // Assess
          expect({ outcome, visibleAgain: visible.length }).to.deep.equal({
            outcome: {
              name: "ReceiptHandleIsInvalid",
              message: `Value ${first.ReceiptHandle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
            },
            visibleAgain: 0,
          });
        });

        it("the batch forms: a stale delete entry is successful and deletes nothing, a stale visibility entry fails; fresh entries act", async () => {
          // Prepare
          const [staleA, latestA] = await receivedTwice("a");
          const [staleB, latestB] = await receivedTwice("b");

          // Act
          const changed = await sqs.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: [
                { Id: "stale", ReceiptHandle: staleA.ReceiptHandle!, VisibilityTimeout: 0 },
                { Id: "fresh", ReceiptHandle: latestA.ReceiptHandle!, VisibilityTimeout: 600 },
              ],
            }),
          );
          const deleted = await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: [
                { Id: "stale", ReceiptHandle: staleB.ReceiptHandle! },
                { Id: "fresh", ReceiptHandle: latestA.ReceiptHandle! },
              ],
            }),
          );
          const left = await messagesLeft();
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: latestB.ReceiptHandle! }));

          // Assess
          expect((changed.Successful ?? []).map((s) => s.Id)).to.deep.equal(["fresh"]);
          expect((changed.Failed ?? []).map((f) => [f.Id, f.Code])).to.deep.equal([["stale", "ReceiptHandleIsInvalid"]]);
          expect((deleted.Successful ?? []).map((s) => s.Id).sort()).to.deep.equal(["fresh", "stale"]);
          expect({ left, afterLatest: await messagesLeft() }).to.deep.equal({ left: 1, afterLatest: 0 });
        });
      });
    }
  });
});
