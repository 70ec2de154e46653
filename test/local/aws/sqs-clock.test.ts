import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { scaleSeconds, SqsClockProxy } from "../../../local/aws/sqs-clock";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const JSON_10 = "application/x-amz-json-1.0";

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** A stand-in for moto that records what reaches it and answers with a fixed reply. */
class RecordingUpstream {
  readonly seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: Buffer }> = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      this.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(418, "I'm a teapot", { "x-upstream": "moto-ish", "content-type": "application/json" });
      res.end('{"reply":true}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

describe("local runtime: SQS clock proxy", () => {
  describe("scaleSeconds (pure)", () => {
    const cases: Array<[number, number, number]> = [
      [0, 60, 0],
      [120, 60, 2],
      [30, 60, 1],
      [1, 60, 1],
      [90, 60, 2],
      [45, 2, 23],
      [43_200, 60, 720],
      [100, 1, 100],
    ];
    for (const [seconds, speed, expected] of cases) {
      it(`${seconds} s at speed ${speed} → ${expected} s`, () => expect(scaleSeconds(seconds, speed)).to.equal(expected));
    }
  });

  describe("what reaches the upstream (a recording stand-in for moto)", () => {
    let upstream: RecordingUpstream;
    let proxy: SqsClockProxy;
    let url: string;
    let upstreamUrl: string;

    async function post(target: string | undefined, body: string | Buffer, contentType = JSON_10): Promise<Response> {
      const headers: Record<string, string> = { "content-type": contentType };
      if (target) headers["x-amz-target"] = target;
      return fetch(url, { method: "POST", headers, body });
    }
    const lastBody = (): unknown => JSON.parse(upstream.seen.at(-1)!.body.toString());

    beforeEach(async () => {
      upstream = new RecordingUpstream();
      upstreamUrl = await upstream.start();
      proxy = new SqsClockProxy({ target: upstreamUrl, speed: 60 });
      url = await proxy.start();
    });
    afterEach(async () => {
      await proxy.stop();
      await upstream.stop();
    });

    const rewrites: Array<[string, object, object]> = [
      [
        "CreateQueue",
        {
          QueueName: "q",
          Attributes: {
            VisibilityTimeout: "120",
            DelaySeconds: "60",
            MessageRetentionPeriod: "600",
            ReceiveMessageWaitTimeSeconds: "20",
            RedrivePolicy: '{"maxReceiveCount":"5"}',
          },
        },
        {
          QueueName: "q",
          Attributes: {
            VisibilityTimeout: "2",
            DelaySeconds: "1",
            MessageRetentionPeriod: "600",
            ReceiveMessageWaitTimeSeconds: "20",
            RedrivePolicy: '{"maxReceiveCount":"5"}',
          },
        },
      ],
      ["SetQueueAttributes", { QueueUrl: "u", Attributes: { VisibilityTimeout: "300" } }, { QueueUrl: "u", Attributes: { VisibilityTimeout: "5" } }],
      ["ReceiveMessage", { QueueUrl: "u", VisibilityTimeout: 120, WaitTimeSeconds: 20 }, { QueueUrl: "u", VisibilityTimeout: 2, WaitTimeSeconds: 20 }],
      ["ChangeMessageVisibility", { QueueUrl: "u", ReceiptHandle: "r", VisibilityTimeout: 600 }, { QueueUrl: "u", ReceiptHandle: "r", VisibilityTimeout: 10 }],
      [
        "ChangeMessageVisibilityBatch",
        {
          QueueUrl: "u",
          Entries: [
            { Id: "a", ReceiptHandle: "r", VisibilityTimeout: 0 },
            { Id: "b", ReceiptHandle: "s", VisibilityTimeout: 180 },
          ],
        },
        {
          QueueUrl: "u",
          Entries: [
            { Id: "a", ReceiptHandle: "r", VisibilityTimeout: 0 },
            { Id: "b", ReceiptHandle: "s", VisibilityTimeout: 3 },
          ],
        },
      ],
      ["SendMessage", { QueueUrl: "u", MessageBody: "m", DelaySeconds: 120 }, { QueueUrl: "u", MessageBody: "m", DelaySeconds: 2 }],
      [
        "SendMessageBatch",
        {
          QueueUrl: "u",
          Entries: [
            { Id: "a", MessageBody: "m", DelaySeconds: 900 },
            { Id: "b", MessageBody: "n" },
          ],
        },
        {
          QueueUrl: "u",
          Entries: [
            { Id: "a", MessageBody: "m", DelaySeconds: 15 },
            { Id: "b", MessageBody: "n" },
          ],
        },
      ],
    ];
    for (const [op, sent, expected] of rewrites) {
      it(`${op}: scales the durations and nothing else`, async () => {
        const res = await post(`AmazonSQS.${op}`, JSON.stringify(sent));
        await res.text();

        expect(lastBody()).to.deep.equal(expected);
        expect(Number(upstream.seen.at(-1)!.headers["content-length"])).to.equal(Buffer.byteLength(JSON.stringify(expected)));
        expect(proxy.stats()).to.deep.equal({ requests: 1, rewritten: 1 });
      });
    }

    const passThrough: Array<[string, string | undefined, string, string]> = [
      ["another JSON operation", "AmazonSQS.GetQueueAttributes", JSON_10, '{"QueueUrl":"u","AttributeNames":["All"]}'],
      ["a rewritable operation with no duration in it", "AmazonSQS.SendMessage", JSON_10, '{ "QueueUrl": "u",  "MessageBody": "spaces kept" }'],
      ["a duration already 0", "AmazonSQS.ChangeMessageVisibility", JSON_10, '{"QueueUrl":"u","ReceiptHandle":"r","VisibilityTimeout":0}'],
      ["the query protocol", undefined, "application/x-www-form-urlencoded", "Action=SendMessage&DelaySeconds=120&MessageBody=x"],
      ["a body that is not JSON", "AmazonSQS.SendMessage", JSON_10, "{not json"],
    ];
    for (const [name, target, contentType, body] of passThrough) {
      it(`passes ${name} through byte for byte`, async () => {
        const res = await post(target, body, contentType);
        await res.text();

        expect(upstream.seen.at(-1)!.body.toString()).to.equal(body);
        expect(proxy.stats().rewritten).to.equal(0);
      });
    }

    it("streams a large body through unchanged, with the method, path and headers", async () => {
      const big = randomBytes(5 * 1024 * 1024);
      const res = await fetch(`${url}/some/path?x=1`, { method: "PUT", headers: { "x-custom": "kept" }, body: big });
      await res.text();

      const seen = upstream.seen.at(-1)!;
      expect(seen.method).to.equal("PUT");
      expect(seen.url).to.equal("/some/path?x=1");
      expect(seen.headers["x-custom"]).to.equal("kept");
      expect(seen.body.equals(big)).to.equal(true);
    });

    it("returns the upstream's status, status text, headers and body", async () => {
      const res = await post("AmazonSQS.SendMessage", '{"QueueUrl":"u","MessageBody":"m","DelaySeconds":60}');

      expect(res.status).to.equal(418);
      expect(res.statusText).to.equal("I'm a teapot");
      expect(res.headers.get("x-upstream")).to.equal("moto-ish");
      expect(await res.text()).to.equal('{"reply":true}');
    });

    it("at speed 1 passes even the durations through untouched", async () => {
      await proxy.stop();
      proxy = new SqsClockProxy({ target: upstreamUrl, speed: 1 });
      url = await proxy.start();
      const body = '{"QueueUrl":"u","MessageBody":"m","DelaySeconds":120}';

      await (await post("AmazonSQS.SendMessage", body)).text();

      expect(upstream.seen.at(-1)!.body.toString()).to.equal(body);
      expect(proxy.stats()).to.deep.equal({ requests: 1, rewritten: 0 });
    });

    it("answers 502 when the upstream is gone, and keeps serving", async () => {
      await upstream.stop();

      const res = await post("AmazonSQS.ListQueues", "{}");

      expect(res.status).to.equal(502);
      expect(await res.text()).to.match(/did not answer/);
    });
  });

  describe("against moto at speed 60", () => {
    let proxy: SqsClockProxy;
    let direct: SQSClient;
    let viaProxy: SQSClient;
    let proxyUrl: string;

    beforeEach(async () => {
      await resetMoto();
      proxy = new SqsClockProxy({ target: motoEndpoint(), speed: 60 });
      proxyUrl = await proxy.start();
      direct = new SQSClient({ endpoint: motoEndpoint() });
      // An explicit endpoint: every call goes to the proxy, whatever origin the QueueUrl has.
      viaProxy = new SQSClient({ endpoint: proxyUrl });
    });
    afterEach(async () => {
      direct.destroy();
      viaProxy.destroy();
      await proxy.stop();
    });

    async function attributesFromMoto(queueUrl: string): Promise<Record<string, string>> {
      const out = await direct.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["All"] }));
      return out.Attributes ?? {};
    }
    async function receiveDirect(queueUrl: string, visibilityTimeout = 600) {
      const out = await direct.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: visibilityTimeout }));
      return out.Messages ?? [];
    }
    let queues = 0;
    async function createQueue(attributes: Record<string, string> = {}): Promise<string> {
      const out = await viaProxy.send(new CreateQueueCommand({ QueueName: `clock-${++queues}`, Attributes: attributes }));
      return out.QueueUrl!;
    }

    it("creates a queue whose VisibilityTimeout 120 reads back from moto as 2, with retention and wait time unscaled", async () => {
      const queueUrl = await createQueue({ VisibilityTimeout: "120", MessageRetentionPeriod: "600", ReceiveMessageWaitTimeSeconds: "20" });

      const attributes = await attributesFromMoto(queueUrl);

      expect(attributes).to.include({ VisibilityTimeout: "2", MessageRetentionPeriod: "600", ReceiveMessageWaitTimeSeconds: "20" });
    });

    it("hands out queue URLs on the proxy's origin, so SDK clients that follow QueueUrl stay on the proxy", async () => {
      const queueUrl = await createQueue();

      expect(new URL(queueUrl).origin).to.equal(proxyUrl);
    });

    it("SetQueueAttributes VisibilityTimeout 300 reads back as 5", async () => {
      const queueUrl = await createQueue();

      await viaProxy.send(new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { VisibilityTimeout: "300" } }));

      expect((await attributesFromMoto(queueUrl)).VisibilityTimeout).to.equal("5");
    });

    it("ChangeMessageVisibility 60 makes a message come back after about a second", async () => {
      const queueUrl = await createQueue();
      await direct.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "m" }));
      const [message] = await receiveDirect(queueUrl, 600);

      await viaProxy.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 60 }));

      expect(await receiveDirect(queueUrl)).to.have.length(0);
      // Unscaled, it would stay hidden for 60 s (and for 600 s without the change).
      const back = await waitFor("the message to reappear", async () => ((await receiveDirect(queueUrl)).length > 0 ? true : undefined), 15_000);
      expect(back).to.equal(true);
    });

    it("ChangeMessageVisibility 20 (a third of a real second at speed 60) brings the message back on time, not after a whole second", async () => {
      // Prepare
      const queueUrl = await createQueue();
      await direct.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "parked" }));
      const [message] = await receiveDirect(queueUrl, 600);
      // Act
      const parked = Date.now();
      await viaProxy.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 20 }));
      const hidden = (await receiveDirect(queueUrl)).length;
      await waitFor("the message to reappear", async () => ((await receiveDirect(queueUrl, 0)).length > 0 ? true : undefined), 5_000);
      const backAfterMs = Date.now() - parked;
      // Assess: hidden at first, back well before moto's rounded-up second would have let it go.
      expect(hidden).to.equal(0);
      expect(backAfterMs).to.be.below(900);
    });

    it("ChangeMessageVisibilityBatch 20 brings each entry's message back on time too", async () => {
      // Prepare
      const queueUrl = await createQueue();
      await direct.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "a" }));
      await direct.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "b" }));
      const messages = await receiveDirect(queueUrl, 600);
      // Act
      const parked = Date.now();
      await viaProxy.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 20 })),
        }),
      );
      const seen = new Set<string>();
      await waitFor(
        "both messages to reappear",
        async () => {
          for (const m of await receiveDirect(queueUrl, 0)) seen.add(m.Body ?? "");
          return seen.size === 2 ? true : undefined;
        },
        5_000,
      );
      // Assess
      expect(messages).to.have.length(2);
      expect(Date.now() - parked).to.be.below(900);
    });

    it("a second change to the same receipt handle replaces the first one's reveal", async () => {
      const queueUrl = await createQueue();
      await direct.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "parked twice" }));
      const [message] = await receiveDirect(queueUrl, 600);

      await viaProxy.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 20 }));
      await viaProxy.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 600 }));
      await new Promise((r) => setTimeout(r, 700));

      expect(await receiveDirect(queueUrl, 0), "still parked for the later, longer change").to.have.length(0);
    });

    it("SendMessage DelaySeconds 120 keeps a message invisible for about 2 s, not 2 minutes", async () => {
      const queueUrl = await createQueue();

      await viaProxy.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "late", DelaySeconds: 120 }));

      expect(await receiveDirect(queueUrl)).to.have.length(0);
      const [message] = await waitFor(
        "the delayed message",
        async () => {
          const messages = await receiveDirect(queueUrl);
          return messages.length > 0 ? messages : undefined;
        },
        15_000,
      );
      expect(message.Body).to.equal("late");
    });

    it("SendMessageBatch scales each entry's delay and leaves undelayed entries visible at once", async () => {
      const queueUrl = await createQueue();

      await viaProxy.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [
            { Id: "now", MessageBody: "now" },
            { Id: "late", MessageBody: "late", DelaySeconds: 120 },
          ],
        }),
      );

      expect((await receiveDirect(queueUrl)).map((m) => m.Body)).to.deep.equal(["now"]);
      const [late] = await waitFor(
        "the delayed entry",
        async () => {
          const messages = await receiveDirect(queueUrl);
          return messages.length > 0 ? messages : undefined;
        },
        15_000,
      );
      expect(late.Body).to.equal("late");
    });

    it("leaves other operations working: send, receive and attributes through the proxy", async () => {
      const queueUrl = await createQueue();

      await viaProxy.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "plain" }));
      const received = await viaProxy.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
      const attributes = await viaProxy.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }));

      expect(received.Messages?.map((m) => m.Body)).to.deep.equal(["plain"]);
      expect(attributes.Attributes?.QueueArn).to.match(/^arn:aws:sqs:us-east-1:123456789012:clock-/);
    });

    it("survives a client that aborts a long poll, and keeps serving", async () => {
      const queueUrl = await createQueue();
      const abort = new AbortController();
      const poll = viaProxy.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 20 }), { abortSignal: abort.signal });
      await new Promise((r) => setTimeout(r, 200));

      abort.abort();
      const outcome = await poll.then(
        () => "resolved",
        (err: Error) => err.name,
      );
      // Another queue: moto keeps the abandoned long poll open, and it would swallow a message
      // sent to the same queue (as SQS itself can, for a receive whose client went away).
      const otherUrl = await createQueue();
      await viaProxy.send(new SendMessageCommand({ QueueUrl: otherUrl, MessageBody: "after" }));

      expect(outcome).to.equal("AbortError");
      expect((await receiveDirect(otherUrl)).map((m) => m.Body)).to.deep.equal(["after"]);
    });
  });
});
