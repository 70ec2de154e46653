import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type MappingStats, settleBatch, SqsEventSource } from "../../../local/hosts/event-source";
import { type InvokeResult, LambdaHost } from "../../../local/hosts/lambda-host";
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from "../../../functions/shared/sqs-record";
import type { LocalFunction, LocalMapping } from "../../../local/provision/topology-types";
import { localFunction } from "../fixtures/functions";
import { resetMoto } from "../../integration/helpers/moto";

interface Queue {
  url: string;
  arn: string;
}

const ok = (response: unknown): InvokeResult => ({ kind: "ok", response, durationMs: 1 });

describe("SqsEventSource pollers (a counting SQS stand-in)", () => {
  it("without a batching window, its maximum concurrency of pollers receive at once, as Lambda's do", async () => {
    // Prepare: an SQS that answers every long poll empty after 100 ms, counting the polls in flight.
    let inFlight = 0;
    let peak = 0;
    const sqs = {
      send: async () => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 100));
        inFlight -= 1;
        return { Messages: [] };
      },
    } as unknown as SQSClient; // only send() is used by the source
    const mapping: LocalMapping = {
      urn: "urn:pulumi:test::local::aws:lambda/eventSourceMapping:EventSourceMapping::esm",
      logicalName: "esm",
      functionName: "f",
      queueArn: "arn:aws:sqs:us-east-1:123456789012:q",
      queueUrl: "http://localhost/q",
      batchSize: 1,
      batchingWindowSeconds: 0,
      reportBatchItemFailures: true,
      enabled: true,
      maximumConcurrency: 4,
    };
    const source = new SqsEventSource(mapping, async () => ok({}), { sqs, pollWaitSeconds: 1 });
    // Act
    source.start();
    await new Promise((r) => setTimeout(r, 350));
    await source.stop();
    // Assess
    expect(peak).to.equal(4);
  });
});

describe("SqsEventSource with a batching window: gatherers follow the backlog (a counting SQS stand-in)", () => {
  /** An SQS whose receives take 50 ms, answer from a backlog of `backlog` messages, and count the receives in flight. */
  function countingSqs(backlog: number, perReceive: number) {
    const state = { inFlight: 0, peak: 0, left: backlog, next: 0 };
    const sqs = {
      send: async (command: { constructor: { name: string } }) => {
        if (command.constructor.name !== "ReceiveMessageCommand") return { Successful: [], Failed: [] };
        state.inFlight += 1;
        state.peak = Math.max(state.peak, state.inFlight);
        await new Promise((r) => setTimeout(r, 50));
        state.inFlight -= 1;
        const n = Math.min(perReceive, state.left);
        state.left -= n;
        return { Messages: Array.from({ length: n }, () => ({ MessageId: `m${state.next++}`, ReceiptHandle: "h", Body: "{}", Attributes: {} })) };
      },
    } as unknown as SQSClient; // only send() is used by the source
    return { sqs, state };
  }
  const mapping = (batchSize: number): LocalMapping => ({
    urn: "urn:pulumi:test::local::aws:lambda/eventSourceMapping:EventSourceMapping::esm",
    logicalName: "esm",
    functionName: "f",
    queueArn: "arn:aws:sqs:us-east-1:123456789012:q",
    queueUrl: "http://localhost/q",
    batchSize,
    batchingWindowSeconds: 5,
    reportBatchItemFailures: true,
    enabled: true,
    maximumConcurrency: 20,
  });
  const cases = [
    { name: "a backlog that fills every batch at once: up to Lambda's five initial pollers receive at once", backlog: 400, perReceive: 10, peak: 5 },
    { name: "traffic that needs the window to fill a batch: one gatherer", backlog: 3, perReceive: 1, peak: 1 },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      // Prepare
      const { sqs, state } = countingSqs(c.backlog, c.perReceive);
      const source = new SqsEventSource(mapping(10), async () => ok({}), { sqs, pollWaitSeconds: 1 });

      // Act
      source.start();
      await new Promise((r) => setTimeout(r, 600));
      await source.stop();

      // Assess
      expect(state.peak).to.equal(c.peak);
    });
  }
});

describe("settleBatch: which records Lambda deletes", () => {
  const ids = ["m1", "m2", "m3"];
  const cases: Array<{ name: string; result: InvokeResult; report: boolean; deleted: string[]; wholeBatchFailed?: boolean }> = [
    { name: "success without ReportBatchItemFailures deletes all", result: ok({ batchItemFailures: [{ itemIdentifier: "m1" }] }), report: false, deleted: ids },
    { name: "listed failures stay", result: ok({ batchItemFailures: [{ itemIdentifier: "m2" }] }), report: true, deleted: ["m1", "m3"] },
    { name: "an empty list is a complete success", result: ok({ batchItemFailures: [] }), report: true, deleted: ids },
    { name: "a null list is a complete success", result: ok({ batchItemFailures: null }), report: true, deleted: ids },
    { name: "a null response is a complete success", result: ok(null), report: true, deleted: ids },
    { name: "an empty response is a complete success", result: ok({}), report: true, deleted: ids },
    {
      name: "an empty itemIdentifier fails the batch",
      result: ok({ batchItemFailures: [{ itemIdentifier: "" }] }),
      report: true,
      deleted: [],
      wholeBatchFailed: true,
    },
    {
      name: "a null itemIdentifier fails the batch",
      result: ok({ batchItemFailures: [{ itemIdentifier: null }] }),
      report: true,
      deleted: [],
      wholeBatchFailed: true,
    },
    { name: "a bad key name fails the batch", result: ok({ batchItemFailures: [{ messageId: "m1" }] }), report: true, deleted: [], wholeBatchFailed: true },
    {
      name: "an id not in the batch fails the batch",
      result: ok({ batchItemFailures: [{ itemIdentifier: "other" }] }),
      report: true,
      deleted: [],
      wholeBatchFailed: true,
    },
    { name: "a response that is not an object fails the batch", result: ok("done"), report: true, deleted: [], wholeBatchFailed: true },
    { name: "a list that is not a list fails the batch", result: ok({ batchItemFailures: "m1" }), report: true, deleted: [], wholeBatchFailed: true },
    {
      name: "an error deletes nothing",
      result: { kind: "error", error: { name: "Error", message: "x" }, durationMs: 1 },
      report: false,
      deleted: [],
      wholeBatchFailed: true,
    },
    { name: "a timeout deletes nothing", result: { kind: "timeout", durationMs: 1 }, report: true, deleted: [], wholeBatchFailed: true },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const settlement = settleBatch(c.result, ids, c.report);

      expect(settlement.delete).to.deep.equal(c.deleted);
      expect(settlement.keep).to.deep.equal(ids.filter((id) => !c.deleted.includes(id)));
      expect(settlement.reason !== undefined).to.equal(c.wholeBatchFailed === true);
    });
  }
});

describe("SqsEventSource against moto", function () {
  this.timeout(30_000);
  let sqs: SQSClient;
  let logDir: string;
  let host: LambdaHost | undefined;
  let source: SqsEventSource | undefined;
  let queueCount = 0;

  before(async () => {
    await resetMoto();
    sqs = new SQSClient({});
  });
  beforeEach(() => {
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), "event-source-"));
  });
  afterEach(async () => {
    await source?.stop();
    await host?.close();
    source = undefined;
    host = undefined;
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  async function createQueue(attributes: Record<string, string> = {}): Promise<Queue> {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `esm-${++queueCount}`, Attributes: attributes }));
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }));
    return { url: QueueUrl ?? "", arn: Attributes?.QueueArn ?? "" };
  }

  async function depth(queue: Queue): Promise<number> {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
    );
    return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
  }

  async function sendAll(queue: Queue, bodies: string[]): Promise<string[]> {
    const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queue.url, Entries: bodies.map((b, i) => ({ Id: String(i), MessageBody: b })) }));
    return bodies.map((_, i) => out.Successful?.find((s) => s.Id === String(i))?.MessageId ?? "");
  }

  async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A mapping from the queue to a fixture function, with every invocation's records recorded. */
  function wire(queue: Queue, fn: LocalFunction, mapping: Partial<LocalMapping> = {}, defaultConcurrency?: number) {
    host = new LambdaHost([fn], { awsEnv: {}, logDir });
    const lambda = host;
    const invoked: Array<Array<{ id: string; receiveCount: string }>> = [];
    const invoke = (event: SQSEvent) => {
      invoked.push(event.Records.map((r) => ({ id: r.messageId, receiveCount: r.attributes.ApproximateReceiveCount })));
      return lambda.invoke(fn.name, event);
    };
    source = new SqsEventSource(
      {
        urn: "urn:pulumi:test::local::aws:lambda/eventSourceMapping:EventSourceMapping::esm",
        logicalName: "esm",
        functionName: fn.name,
        queueArn: queue.arn,
        queueUrl: queue.url,
        batchSize: 10,
        batchingWindowSeconds: 0,
        reportBatchItemFailures: true,
        enabled: true,
        ...mapping,
      },
      invoke,
      { sqs, pollWaitSeconds: 1, defaultConcurrency },
    );
    const started = source;
    return { source: started, lambda, invoked, stats: (): MappingStats => started.stats() };
  }

  it("converts messages to Lambda's record shape", async () => {
    const queue = await createQueue();
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: "hello",
        MessageAttributes: {
          kind: { DataType: "String", StringValue: "window" },
          size: { DataType: "Number", StringValue: "42" },
          blob: { DataType: "Binary", BinaryValue: Buffer.from("bytes") },
        },
      }),
    );

    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, ...RECEIVE_ALL_ATTRIBUTES }));
    const record = toSqsRecord(Messages![0]!, queue.arn);

    expect(record).to.include({ body: "hello", eventSource: "aws:sqs", eventSourceARN: queue.arn, awsRegion: "us-east-1" });
    expect(record.md5OfBody).to.equal("5d41402abc4b2a76b9719d911017c592");
    expect(record.attributes.ApproximateReceiveCount).to.equal("1");
    expect(record.attributes.SentTimestamp).to.match(/^\d{13}$/);
    expect(record.attributes.ApproximateFirstReceiveTimestamp).to.match(/^\d{13}$/);
    expect(record.attributes.SenderId).to.be.a("string").and.not.equal("");
    expect(record.messageAttributes).to.deep.equal({
      kind: { stringValue: "window", stringListValues: [], binaryListValues: [], dataType: "String" },
      size: { stringValue: "42", stringListValues: [], binaryListValues: [], dataType: "Number" },
      blob: { binaryValue: Buffer.from("bytes").toString("base64"), stringListValues: [], binaryListValues: [], dataType: "Binary" },
    });
  });

  for (const c of [
    { reportBatchItemFailures: true, outcome: "only the reported records stay, and they come back" },
    { reportBatchItemFailures: false, outcome: "a success deletes every record" },
  ]) {
    it(`partial batch failure with ReportBatchItemFailures=${c.reportBatchItemFailures}: ${c.outcome}`, async () => {
      const queue = await createQueue({ VisibilityTimeout: "1" });
      const { source, invoked, stats } = wire(queue, localFunction("batch", "sqs-batch.js"), { reportBatchItemFailures: c.reportBatchItemFailures });
      const ids = await sendAll(queue, ["ok-1", "fail-2", "ok-3", "fail-4"]);
      const failing = [ids[1], ids[3]];
      const expectedBack = c.reportBatchItemFailures ? failing : [];

      source.start();
      await waitFor("the first batch to settle", () => stats().succeeded + stats().failed >= 4);
      // The reported records reappear after the 1 s visibility timeout and are invoked again.
      if (expectedBack.length > 0) await waitFor("the failures to come back", () => invoked.flat().filter((r) => r.receiveCount === "2").length === 2);
      await source.stop();

      const redelivered = invoked
        .flat()
        .filter((r) => r.receiveCount !== "1")
        .map((r) => r.id);
      expect([...new Set(redelivered)].sort()).to.deep.equal([...expectedBack].sort());
      expect(await depth(queue)).to.equal(expectedBack.length);
    });
  }

  it("leaves a message that always fails to SQS's redrive: it lands in the DLQ after maxReceiveCount receives", async () => {
    const dlq = await createQueue();
    const queue = await createQueue({ VisibilityTimeout: "1", RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }) });
    const { source, invoked, stats } = wire(queue, localFunction("failing", "sqs-batch.js", { environment: { MODE: "throw" } }));
    const [id] = await sendAll(queue, ["poison"]);

    source.start();
    await waitFor("the message to reach the DLQ", async () => (await depth(dlq)) === 1);
    await source.stop();

    expect(invoked.map((batch) => batch.map((r) => r.id))).to.deep.equal([[id], [id]]);
    expect(stats()).to.include({ invocations: 2, succeeded: 0, failed: 2 });
    expect(await depth(queue)).to.equal(0);
  });

  const windows = [
    { name: "a 2 s window gathers messages sent over ~1 s into one invocation", batchSize: 20, window: 2, gapMs: 400, count: 3, sizes: [3] },
    { name: "with no window, separate receives give separate invocations", batchSize: 10, window: 0, gapMs: 400, count: 3, sizes: [1, 1, 1] },
    { name: "a full batch is invoked without waiting for the window", batchSize: 2, window: 20, gapMs: 0, count: 4, sizes: [2, 2] },
  ];
  for (const c of windows) {
    it(`batching: ${c.name}`, async () => {
      const queue = await createQueue();
      const { source, stats } = wire(queue, localFunction("batch", "sqs-batch.js"), { batchSize: c.batchSize, batchingWindowSeconds: c.window });
      source.start();

      if (c.gapMs === 0)
        await sendAll(
          queue,
          Array.from({ length: c.count }, (_, i) => `m${i}`),
        );
      else {
        for (let i = 0; i < c.count; i++) {
          if (i > 0) await new Promise((r) => setTimeout(r, c.gapMs));
          await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: `m${i}` }));
        }
      }
      await waitFor("every message to be processed", () => stats().succeeded === c.count);
      await source.stop();

      expect(stats().lastBatchSizes).to.deep.equal(c.sizes);
    });
  }

  const concurrency = [
    { name: "maximumConcurrency 2", maximumConcurrency: 2, defaultConcurrency: undefined, peak: 2 },
    { name: "no maximum: the default pollers (3 here)", maximumConcurrency: undefined, defaultConcurrency: 3, peak: 3 },
  ];
  for (const c of concurrency) {
    it(`concurrency: ${c.name} caps the batches running at once, and is reached`, async () => {
      const queue = await createQueue({ VisibilityTimeout: "30" });
      const { source, lambda, stats } = wire(
        queue,
        localFunction("slow", "sqs-batch.js", { environment: { SLEEP_MS: "400" } }),
        { batchSize: 1, maximumConcurrency: c.maximumConcurrency },
        c.defaultConcurrency,
      );
      await sendAll(queue, ["a", "b", "c", "d", "e", "f", "g"]);

      source.start();
      await waitFor("every message to be processed", () => stats().succeeded === 7);
      await source.stop();

      expect(stats().peakRunning).to.equal(c.peak);
      expect(Object.values(lambda.stats())[0]!.peakRunning).to.equal(c.peak);
      expect(await depth(queue)).to.equal(0);
    });
  }

  it("timeout: nothing is deleted, the message comes back, and each retry starts a fresh environment", async () => {
    const queue = await createQueue({ VisibilityTimeout: "2" });
    const fn = localFunction("sleepy", "sqs-batch.js", { environment: { SLEEP_MS: "5000" }, timeoutSeconds: 1 });
    const { source, lambda, invoked, stats } = wire(queue, fn);
    await sendAll(queue, ["slow"]);

    source.start();
    await waitFor("a second delivery", () => invoked.length >= 2);
    await source.stop();

    expect(invoked.map((batch) => batch[0]!.receiveCount)).to.deep.equal(["1", "2"]);
    expect(stats()).to.include({ succeeded: 0, failed: 2 });
    expect(lambda.stats()[fn.name]).to.include({ timeouts: 2, coldStarts: 2 });
    expect(await depth(queue)).to.equal(1);
  });

  it("stop() waits for the batch in flight and settles it", async () => {
    const queue = await createQueue({ VisibilityTimeout: "30" });
    const { source, stats } = wire(queue, localFunction("slow", "sqs-batch.js", { environment: { SLEEP_MS: "500" } }));
    await sendAll(queue, ["one"]);
    source.start();
    await waitFor("the invocation to start", () => stats().running === 1);

    await source.stop();

    expect(stats()).to.include({ running: 0, succeeded: 1 });
    expect(await depth(queue)).to.equal(0);
  });

  it("a failed delete is counted in the stats, not thrown", async () => {
    const queue = await createQueue({ VisibilityTimeout: "30" });
    const { source, stats } = wire(queue, localFunction("slow", "sqs-batch.js", { environment: { SLEEP_MS: "500" } }));
    await sendAll(queue, ["one"]);
    source.start();
    await waitFor("the invocation to start", () => stats().running === 1);

    await sqs.send(new DeleteQueueCommand({ QueueUrl: queue.url }));
    await waitFor("the delete to fail", () => stats().deleteFailures === 1);
    await source.stop();

    expect(stats()).to.include({ succeeded: 1, deleteFailures: 1 });
  });

  it("a disabled mapping never polls", async () => {
    const queue = await createQueue();
    const { source, stats } = wire(queue, localFunction("batch", "sqs-batch.js"), { enabled: false });
    await sendAll(queue, ["x"]);

    source.start();
    await new Promise((r) => setTimeout(r, 300));
    await source.stop();

    expect(stats().invocations).to.equal(0);
    expect(await depth(queue)).to.equal(1);
  });
});
