/**
 * The chaos run's fault proxy against moto, with real SDK clients: each fault kind does what it
 * says (applied or not, response or not), each service's throttling and server errors come back as
 * the SDK's error of the right name, and a seed replays the same faults.
 */
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { ECSClient, ListClustersCommand } from "@aws-sdk/client-ecs";
import { ListTopicsCommand, SNSClient } from "@aws-sdk/client-sns";
import { CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { GetParameterCommand, PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { loadRestJsonErrorCode } from "@aws-sdk/core";
import { expect } from "chai";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { type CrashRecord, FAULT_KINDS, type FaultKind, FaultProxy, type FaultRecord, idsOf, unitOfWork } from "../../../local/chaos/fault-proxy";
import { errorResponse } from "../../../local/chaos/protocols";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const REGION = "us-east-1";

interface Harness {
  proxy: FaultProxy;
  url: string;
  faults: FaultRecord[];
}

/** A proxy in front of moto for every service, faulting each call with `kind` (rate 1) until told otherwise. */
async function harness(kind: FaultKind, opts: { rate?: number; seed?: number; onceOnly?: boolean } = {}): Promise<Harness> {
  const faults: FaultRecord[] = [];
  const proxy: FaultProxy = new FaultProxy({
    seed: opts.seed ?? 1,
    rate: opts.rate ?? 1,
    kinds: [kind],
    latencyMs: [300, 300],
    onFault: (f) => {
      faults.push(f);
      if (opts.onceOnly) proxy.setRate(0);
    },
  });
  const m = motoEndpoint();
  const url = await proxy.front("test-caller", { aws: m, byService: {} });
  return { proxy, url, faults };
}

const direct = () => new SQSClient({ region: REGION, endpoint: motoEndpoint() });

async function queueDepth(queueUrl: string): Promise<number> {
  const out = await direct().send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["ApproximateNumberOfMessages"] }));
  return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
}

/** A queue created through the proxy's origin (so the SDK sends its calls there), and its URL on moto. */
async function queueVia(h: Harness, name: string): Promise<{ viaProxy: string; onMoto: string }> {
  const onMoto = (await direct().send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? "";
  return { viaProxy: `${h.url}${new URL(onMoto).pathname}`, onMoto };
}

async function caught(p: Promise<unknown>): Promise<Error & { $metadata?: { httpStatusCode?: number; attempts?: number } }> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to fail");
}

describe("chaos fault proxy", function () {
  this.timeout(30_000);
  let proxies: FaultProxy[] = [];
  const track = (h: Harness): Harness => {
    proxies.push(h.proxy);
    return h;
  };

  beforeEach(async () => {
    await resetMoto();
  });
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    proxies = [];
  });

  describe("fault kinds", () => {
    it("without a fault, passes the call through to moto", async () => {
      const h = track(await harness("throttled", { rate: 0 }));
      const q = await queueVia(h, "pass-through");
      await new SQSClient({ region: REGION, endpoint: h.url }).send(new SendMessageCommand({ QueueUrl: q.viaProxy, MessageBody: "hello" }));
      expect(await queueDepth(q.onMoto)).to.equal(1);
      expect(h.proxy.stats()).to.include({ calls: 1, injected: 0 });
    });

    it("not-applied: the call never reaches moto, and the fault names the queue", async () => {
      const h = track(await harness("not-applied"));
      const q = await queueVia(h, "not-applied");
      const err = await caught(
        new SQSClient({ region: REGION, endpoint: h.url, maxAttempts: 1 }).send(new SendMessageCommand({ QueueUrl: q.viaProxy, MessageBody: "never" })),
      );
      expect(err.message).to.match(/socket hang up|ECONNRESET/);
      expect(await queueDepth(q.onMoto)).to.equal(0);
      expect(h.faults).to.have.length(1);
      expect(h.faults[0]).to.include({ caller: "test-caller", service: "sqs", operation: "SendMessage", kind: "not-applied", queueUrl: q.viaProxy });
    });

    it("response-lost: the call takes effect, its answer never arrives, and the SDK's retry applies it again", async () => {
      const h = track(await harness("response-lost", { onceOnly: true }));
      const q = await queueVia(h, "response-lost");
      const out = await new SQSClient({ region: REGION, endpoint: h.url, maxAttempts: 2 }).send(
        new SendMessageCommand({ QueueUrl: q.viaProxy, MessageBody: "twice" }),
      );
      expect(out.$metadata.attempts).to.equal(2);
      expect(await queueDepth(q.onMoto)).to.equal(2);
      // The lost answer's message id is logged, so the ledger can tie the fault to that message.
      expect(h.faults[0]).to.include({ kind: "response-lost", upstreamStatus: 200 });
      expect(h.faults[0]?.messageIds).to.have.length(1);
      expect(h.faults[0]?.messageIds[0]).to.not.equal(out.MessageId);
    });

    it("latency: the call is applied after the delay", async () => {
      const h = track(await harness("latency"));
      const q = await queueVia(h, "latency");
      const started = Date.now();
      await new SQSClient({ region: REGION, endpoint: h.url }).send(new SendMessageCommand({ QueueUrl: q.viaProxy, MessageBody: "late" }));
      expect(Date.now() - started).to.be.at.least(290);
      expect(await queueDepth(q.onMoto)).to.equal(1);
      expect(h.faults[0]).to.include({ kind: "latency", latencyMs: 300 });
    });

    it("logs the DynamoDB key of a faulted call", async () => {
      expect(idsOf(JSON.stringify({ TableName: "t", Key: { job_id: { S: "job-7" } } })).key).to.equal('{"job_id":{"S":"job-7"}}');
      expect(idsOf(JSON.stringify({ QueueUrl: "http://q/1", Entries: [{ Id: "0", ReceiptHandle: "rh-1" }] }))).to.deep.include({
        queueUrl: "http://q/1",
        receiptHandles: ["rh-1"],
      });
    });
  });

  describe("protocol shapes: the SDK raises the service's own error", () => {
    const ssmSetup = async () => {
      await new SSMClient({ region: REGION, endpoint: motoEndpoint() }).send(new PutParameterCommand({ Name: "/chaos/p", Value: "v", Type: "String" }));
    };
    const cases: Array<{
      service: string;
      call: (endpoint: string, maxAttempts: number) => Promise<{ $metadata: { attempts?: number } }>;
      throttling: string;
      serverError: string;
      setup?: () => Promise<void>;
    }> = [
      {
        service: "sqs",
        setup: async () => void (await direct().send(new CreateQueueCommand({ QueueName: "shape" }))),
        call: (endpoint, maxAttempts) => new SQSClient({ region: REGION, endpoint, maxAttempts }).send(new GetQueueUrlCommand({ QueueName: "shape" })),
        throttling: "RequestThrottled",
        serverError: "InternalError",
      },
      {
        service: "dynamodb",
        call: (endpoint, maxAttempts) => new DynamoDBClient({ region: REGION, endpoint, maxAttempts }).send(new ListTablesCommand({})),
        throttling: "ThrottlingException",
        serverError: "InternalServerError",
      },
      {
        service: "ssm",
        setup: ssmSetup,
        call: (endpoint, maxAttempts) => new SSMClient({ region: REGION, endpoint, maxAttempts }).send(new GetParameterCommand({ Name: "/chaos/p" })),
        throttling: "ThrottlingException",
        serverError: "InternalServerError",
      },
      {
        service: "ecs",
        call: (endpoint, maxAttempts) => new ECSClient({ region: REGION, endpoint, maxAttempts }).send(new ListClustersCommand({})),
        throttling: "ThrottlingException",
        serverError: "ServerException",
      },
      {
        service: "ec2",
        call: (endpoint, maxAttempts) => new EC2Client({ region: REGION, endpoint, maxAttempts }).send(new DescribeInstancesCommand({})),
        throttling: "RequestLimitExceeded",
        serverError: "InternalError",
      },
      // SNS's query codes (Throttled, InternalError) come out as the modelled shapes' names.
      {
        service: "sns",
        call: (endpoint, maxAttempts) => new SNSClient({ region: REGION, endpoint, maxAttempts }).send(new ListTopicsCommand({})),
        throttling: "ThrottledException",
        serverError: "InternalErrorException",
      },
    ];
    for (const c of cases) {
      for (const [kind, name] of [
        ["throttled", c.throttling],
        ["server-error", c.serverError],
      ] as const) {
        it(`${c.service} ${kind}: ${name}, which the SDK retries`, async () => {
          await c.setup?.();
          const h = track(await harness(kind));
          const err = await caught(c.call(h.url, 1));
          expect(err.name).to.equal(name);
          expect(h.faults[0]).to.include({ service: c.service, kind });
          const once = track(await harness(kind, { onceOnly: true }));
          const out = await c.call(once.url, 2);
          expect(out.$metadata.attempts).to.equal(2);
        });
      }
    }

    it("scheduler (restJson1, no client installed): the SDK's own rest-JSON parser reads the error type", () => {
      for (const [kind, name, status] of [
        ["throttling", "ThrottlingException", 429],
        ["serverError", "InternalServerException", 500],
      ] as const) {
        const r = errorResponse("scheduler", kind, "injected", "req-1");
        expect(r.status).to.equal(status);
        // loadRestJsonErrorCode reads only the status, headers and parsed body of the response.
        const output = { statusCode: r.status, headers: r.headers } as Parameters<typeof loadRestJsonErrorCode>[0];
        expect(loadRestJsonErrorCode(output, JSON.parse(r.body))).to.equal(name);
      }
    });
  });

  describe("routing and replay", () => {
    it("sends each service to its own upstream (SQS, EC2 and ECS to the local run's proxies, the rest to moto)", async () => {
      const hits: string[] = [];
      const stub = http.createServer((req, res) => {
        hits.push(String(req.headers.authorization).match(/\/(\w+)\/aws4_request/)?.[1] ?? "?");
        req.resume();
        res.writeHead(200, { "content-type": "text/xml" });
        res.end('<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><reservationSet/></DescribeInstancesResponse>');
      });
      await new Promise<void>((r) => stub.listen(0, "127.0.0.1", () => r()));
      const proxy = new FaultProxy({ seed: 1, rate: 0 });
      proxies.push(proxy);
      const url = await proxy.front("router", { aws: motoEndpoint(), byService: { ec2: `http://127.0.0.1:${(stub.address() as AddressInfo).port}` } });
      await new EC2Client({ region: REGION, endpoint: url }).send(new DescribeInstancesCommand({}));
      await new DynamoDBClient({ region: REGION, endpoint: url }).send(new ListTablesCommand({}));
      stub.close();
      expect(hits).to.deep.equal(["ec2"]);
    });

    it("the same seed faults the same calls, per caller and operation", async () => {
      const fates = async (seed: number): Promise<string[]> => {
        const proxy = new FaultProxy({ seed, rate: 0.5, kinds: ["throttled", "server-error"] });
        proxies.push(proxy);
        const url = await proxy.front("replay", { aws: motoEndpoint(), byService: {} });
        const client = new DynamoDBClient({ region: REGION, endpoint: url, maxAttempts: 1 });
        const out: string[] = [];
        for (let i = 0; i < 12; i++)
          out.push(
            await client.send(new ListTablesCommand({})).then(
              () => "ok",
              (e: Error) => e.name,
            ),
          );
        return out;
      };
      const a = await fates(42);
      expect(await fates(42)).to.deep.equal(a);
      expect(a).to.include("ok");
      expect(a.some((f) => f !== "ok")).to.equal(true);
    });

    it("draws every kind it is given", () => {
      expect(FAULT_KINDS).to.deep.equal(["not-applied", "response-lost", "throttled", "server-error", "latency"]);
    });
  });
  describe("crashes (--crash-rate): the caller dies after a call that took effect", () => {
    /** A proxy that "kills" by recording which request it was asked to kill; `dies` says whether a process was there to kill. */
    async function crashing(rate: number, seed = 1, dies = true) {
      const asked: string[] = [];
      const crashes: CrashRecord[] = [];
      let calls = 0;
      const proxy = new FaultProxy({
        seed,
        rate: 0,
        crash: {
          rate,
          // Every call its own unit of work, so each call is drawn.
          unitOf: () => `unit ${++calls}`,
          kill: async (caller, req) => {
            asked.push(`${caller} ${String(req.headers["x-amz-target"] ?? req.url)}`);
            return dies ? { process: "sandbox s1", work: ["m1"] } : undefined;
          },
        },
        onCrash: (c) => crashes.push(c),
      });
      proxies.push(proxy);
      const url = await proxy.front("victim", { aws: motoEndpoint(), byService: {} });
      return { proxy, url, asked, crashes };
    }

    it("applies the call, then kills its caller before the answer: the caller never hears, and the kill is journalled", async () => {
      // Prepare: a doomed unit is killed at one of its calls (each a point with KILL_POINT): the seed's first that is.
      const h = await crashing(1);
      const ssm = new SSMClient({ region: REGION, endpoint: h.url, maxAttempts: 1 });
      const put = (i: number) => ssm.send(new PutParameterCommand({ Name: `/crash/p${i}`, Value: "v", Type: "String" }));
      let i = 0;
      for (; i < 20; i++)
        if (
          await put(i).then(
            () => false,
            () => true,
          )
        )
          break;

      // Act
      const err = await caught(put(i));

      // Assess
      const stored = await new SSMClient({ region: REGION, endpoint: motoEndpoint() }).send(new GetParameterCommand({ Name: `/crash/p${i}` }));
      expect(stored.Parameter?.Value).to.equal("v");
      // Its first send applied and died unanswered; the second meets its own parameter.
      expect(err.name).to.equal("ParameterAlreadyExists");
      expect(h.asked[0]).to.equal("victim AmazonSSM.PutParameter");
      expect(h.crashes.length).to.be.at.least(1);
      expect(h.crashes[0]).to.include({ kind: "crash", seq: 1, caller: "victim", process: "sandbox s1", point: "ssm PutParameter" });
      expect(h.crashes[0]?.work).to.deep.equal(["m1"]);
      expect(h.proxy.kills()).to.deep.equal(h.crashes);
    });

    it("never kills at a poll (ReceiveMessage): a process waiting for work is not in the middle of it", async () => {
      // Prepare
      const h = await crashing(1);
      const q = await queueVia({ proxy: h.proxy, url: h.url, faults: [] }, "crash-polls");
      const sqs = new SQSClient({ region: REGION, endpoint: h.url, maxAttempts: 1 });

      // Act
      await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.viaProxy, WaitTimeSeconds: 0 }));

      // Assess
      expect(h.asked).to.deep.equal([]);
    });

    it("answers the call when there is no process to kill, and journals nothing", async () => {
      const h = await crashing(1, 1, false);
      const client = new DynamoDBClient({ region: REGION, endpoint: h.url, maxAttempts: 1 });
      for (let i = 0; i < 8; i++) expect((await client.send(new ListTablesCommand({}))).TableNames).to.be.an("array");
      expect(h.asked.length).to.be.greaterThan(0);
      expect(h.crashes).to.deep.equal([]);
    });

    const units: Array<[string, { operation: string; text: string }, string | undefined, string | undefined]> = [
      ["a Lambda's call: its invocation", { operation: "UpdateItem", text: '{"Key":{"job_id":{"S":"j1"}}}' }, "req-1", "invocation req-1"],
      ["a worker's ledger write: its job", { operation: "UpdateItem", text: '{"TableName":"t","Key":{"job_key":{"S":"w-1"}}}' }, undefined, "item w-1"],
      ["a gateway's claim: its window", { operation: "UpdateItem", text: '{"Key":{"window_key":"s/3"}}' }, undefined, "item s/3"],
      ["a worker's delete: the job its message named", { operation: "DeleteMessage", text: '{"QueueUrl":"q","ReceiptHandle":"rh-7"}' }, undefined, "item w-7"],
      ["a handle never received: none", { operation: "DeleteMessage", text: '{"ReceiptHandle":"rh-8"}' }, undefined, undefined],
      ["a poll: none, even in an invocation", { operation: "ReceiveMessage", text: "{}" }, "req-1", undefined],
    ];
    for (const [name, call, invocation, want] of units)
      it(`unitOfWork: ${name}`, () => expect(unitOfWork(call, invocation, new Map([["rh-7", "w-7"]]))).to.equal(want));

    it("the same seed kills after the same calls; rate 0 (or setCrashRate(0)) kills none", async () => {
      const fates = async (seed: number, rate: number, off = false): Promise<string[]> => {
        const h = await crashing(rate, seed, false);
        if (off) h.proxy.setCrashRate(0);
        const client = new DynamoDBClient({ region: REGION, endpoint: h.url, maxAttempts: 1 });
        const out: string[] = [];
        for (let i = 0; i < 16; i++) {
          const before = h.asked.length;
          await client.send(new ListTablesCommand({}));
          out.push(h.asked.length > before ? "kill" : "live");
        }
        return out;
      };
      const a = await fates(7, 0.6);
      expect(await fates(7, 0.6)).to.deep.equal(a);
      expect(a).to.include("kill").and.to.include("live");
      expect(await fates(7, 0)).to.not.include("kill");
      expect(await fates(7, 0.6, true)).to.not.include("kill");
    });
  });
});
