/**
 * SQS's receipt-handle rule in the local run's SQS proxies (local/aws/sqs-receipts.ts): a delete or a
 * visibility change with a handle superseded by a later receive does not act on the message. The
 * pure parts table by table, then through the proxy against moto, which alone would act on any
 * old handle (the last case shows it, so the rule's tests can fail).
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
import {
  answerWithStale,
  CHANGE_VISIBILITY,
  CHANGE_VISIBILITY_BATCH,
  DELETE_MESSAGE,
  DELETE_MESSAGE_BATCH,
  deletedHandles,
  ReceiptHandles,
  splitStale,
} from "../../../local/aws/sqs-receipts";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

describe("local runtime: SQS receipt-handle rule", () => {
  describe("ReceiptHandles (pure)", () => {
    it("a handle is stale once its message is received again, and only then", () => {
      // Prepare
      const r = new ReceiptHandles();
      r.received([
        { MessageId: "m1", ReceiptHandle: "a" },
        { MessageId: "m2", ReceiptHandle: "x" },
      ]);
      const before = r.isStale("a");

      // Act
      const superseded = r.received([{ MessageId: "m1", ReceiptHandle: "b" }]);

      // Assess
      expect({ before, a: r.isStale("a"), b: r.isStale("b"), x: r.isStale("x"), unknown: r.isStale("never-seen"), superseded }).to.deep.equal({
        before: false,
        a: true,
        b: false,
        x: false,
        unknown: false,
        superseded: ["a"],
      });
    });

    it("forgets a message deleted with its latest handle, and not one deleted with a stale one", () => {
      const r = new ReceiptHandles();
      r.received([
        { MessageId: "m1", ReceiptHandle: "a" },
        { MessageId: "m1", ReceiptHandle: "b" },
        { MessageId: "m2", ReceiptHandle: "x" },
      ]);

      r.deleted("a");
      const afterStale = r.size();
      r.deleted("b");

      expect({ afterStale, after: r.size(), aStale: r.isStale("a") }).to.deep.equal({ afterStale: 2, after: 1, aStale: false });
    });
  });

  describe("splitStale (pure)", () => {
    const stale = (h: string) => h.startsWith("old");
    const cases: Array<{ name: string; target: string; body: Record<string, unknown>; forward: Record<string, unknown> | undefined; stale: unknown[] }> = [
      {
        name: "a fresh delete goes on",
        target: DELETE_MESSAGE,
        body: { QueueUrl: "q", ReceiptHandle: "new" },
        forward: { QueueUrl: "q", ReceiptHandle: "new" },
        stale: [],
      },
      {
        name: "a stale delete stays here",
        target: DELETE_MESSAGE,
        body: { QueueUrl: "q", ReceiptHandle: "old1" },
        forward: undefined,
        stale: [{ ReceiptHandle: "old1" }],
      },
      {
        name: "a stale visibility change stays here",
        target: CHANGE_VISIBILITY,
        body: { QueueUrl: "q", ReceiptHandle: "old1", VisibilityTimeout: 5 },
        forward: undefined,
        stale: [{ ReceiptHandle: "old1" }],
      },
      {
        name: "a mixed batch forwards only its fresh entries",
        target: DELETE_MESSAGE_BATCH,
        body: {
          QueueUrl: "q",
          Entries: [
            { Id: "1", ReceiptHandle: "old1" },
            { Id: "2", ReceiptHandle: "new" },
          ],
        },
        forward: { QueueUrl: "q", Entries: [{ Id: "2", ReceiptHandle: "new" }] },
        stale: [{ Id: "1", ReceiptHandle: "old1" }],
      },
      {
        name: "an all-stale batch forwards nothing",
        target: CHANGE_VISIBILITY_BATCH,
        body: { QueueUrl: "q", Entries: [{ Id: "1", ReceiptHandle: "old1", VisibilityTimeout: 0 }] },
        forward: undefined,
        stale: [{ Id: "1", ReceiptHandle: "old1" }],
      },
    ];
    for (const c of cases) it(c.name, () => expect(splitStale(c.target, c.body, stale)).to.deep.equal({ forward: c.forward, stale: c.stale }));
  });

  describe("answerWithStale and deletedHandles (pure)", () => {
    it("a stale delete succeeds; a stale visibility change is ReceiptHandleIsInvalid, sender's fault", () => {
      const del = answerWithStale(DELETE_MESSAGE, [{ ReceiptHandle: "old" }]);
      const change = answerWithStale(CHANGE_VISIBILITY, [{ ReceiptHandle: "old" }]);

      expect({ status: del?.status, body: del?.body }).to.deep.equal({ status: 200, body: "{}" });
      expect(change?.status).to.equal(400);
      expect(change?.headers["x-amzn-query-error"]).to.equal("ReceiptHandleIsInvalid;Sender");
      expect(JSON.parse(change?.body ?? "{}")).to.include({ __type: "com.amazonaws.sqs#ReceiptHandleIsInvalid" });
    });

    it("merges stale batch entries into moto's answer: deletes as successful, visibility changes as failed", () => {
      const upstream = { status: 200, body: { Successful: [{ Id: "2" }], Failed: [] } };

      const del = JSON.parse(answerWithStale(DELETE_MESSAGE_BATCH, [{ Id: "1", ReceiptHandle: "old" }], upstream)?.body ?? "{}") as Record<string, unknown>;
      const change = JSON.parse(answerWithStale(CHANGE_VISIBILITY_BATCH, [{ Id: "1", ReceiptHandle: "old" }], upstream)?.body ?? "{}") as {
        Successful: unknown[];
        Failed: Array<Record<string, unknown>>;
      };

      expect(del).to.deep.equal({ Successful: [{ Id: "2" }, { Id: "1" }], Failed: [] });
      expect(change.Successful).to.deep.equal([{ Id: "2" }]);
      expect(change.Failed.map((f) => [f.Id, f.Code, f.SenderFault])).to.deep.equal([["1", "ReceiptHandleIsInvalid", true]]);
    });

    it("passes a batch moto refused as a whole through as moto answered", () => {
      expect(answerWithStale(DELETE_MESSAGE_BATCH, [{ Id: "1", ReceiptHandle: "old" }], { status: 500, body: {} })).to.equal(undefined);
    });

    it("a batch delete deleted the entries not listed as failed", () => {
      const request = {
        Entries: [
          { Id: "1", ReceiptHandle: "a" },
          { Id: "2", ReceiptHandle: "b" },
        ],
      };
      expect(deletedHandles(DELETE_MESSAGE_BATCH, request, { Successful: [{ Id: "1" }], Failed: [{ Id: "2" }] })).to.deep.equal(["a"]);
    });
  });

  describe("through the SQS proxy, against moto", () => {
    const cases = [
      { name: "at speed 60 (the Lambdas' clock proxy)", speed: 60, rule: true },
      { name: "at speed 1 (the worker's real-time proxy)", speed: 1, rule: true },
      { name: "with the rule off (moto's own behaviour)", speed: 1, rule: false },
    ];
    for (const c of cases) {
      describe(c.name, () => {
        let proxy: SqsClockProxy;
        let sqs: SQSClient;
        let queueUrl: string;
        let queues = 0;

        beforeEach(async () => {
          await resetMoto();
          proxy = new SqsClockProxy({ target: motoEndpoint(), speed: c.speed, ...(c.rule ? {} : { receipts: false as const }) });
          sqs = new SQSClient({ endpoint: await proxy.start(), maxAttempts: 1 });
          queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `receipts-${++queues}`, Attributes: { VisibilityTimeout: "600" } }))).QueueUrl!;
        });
        afterEach(async () => {
          sqs.destroy();
          await proxy.stop();
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

        it(c.rule ? "DeleteMessage with the superseded handle succeeds and leaves the message" : "moto deletes with the superseded handle", async () => {
          // Prepare
          const [first, second] = await receivedTwice("d");

          // Act
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle! }));
          const afterStale = await messagesLeft();
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: second.ReceiptHandle! }));

          // Assess
          expect(first.ReceiptHandle).to.not.equal(second.ReceiptHandle);
          expect({ afterStale, afterLatest: await messagesLeft() }).to.deep.equal({ afterStale: c.rule ? 1 : 0, afterLatest: 0 });
        });

        it(
          c.rule
            ? "ChangeMessageVisibility with the superseded handle is ReceiptHandleIsInvalid and leaves the message hidden"
            : "moto changes visibility with the superseded handle",
          async () => {
            const [first] = await receivedTwice("v");

            const outcome = await sqs
              .send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle!, VisibilityTimeout: 0 }))
              .then(
                () => "ok",
                (err: Error) => err.name,
              );
            const visible = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }))).Messages ?? [];

            expect({ outcome, visibleAgain: visible.length }).to.deep.equal(
              c.rule ? { outcome: "ReceiptHandleIsInvalid", visibleAgain: 0 } : { outcome: "ok", visibleAgain: 1 },
            );
          },
        );

        if (c.rule) {
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
            expect(proxy.receipts?.counts).to.deep.equal({ deletesIgnored: 1, visibilityChangesRefused: 1 });
          });
        }
      });
    }
  });
});
