import { DescribeInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityBatchCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetParameterCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { createWindowHandler } from "../../../functions/ingest/window-handler";
import { FakeGpuService, loopbackOnlyFetch } from "../helpers/gpu-server";
import { fakeDescribeInstances, INGEST_URL, mockedIngestDeps, PARAM, QUARANTINE_URL, type FakeInstance } from "../helpers/ingest-deps";
import { INGEST_QUEUE_ARN, sqsEvent, sqsRecord, validPayload } from "../helpers/sqs-events";

type Harness = ReturnType<typeof mockedIngestDeps>;

function arrangeGpu(t: Harness, ssmValue: string, instances: FakeInstance[]): void {
  t.ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves({ Parameter: { Name: PARAM, Value: ssmValue } });
  t.ssmMock.on(PutParameterCommand).resolves({ Version: 2 });
  fakeDescribeInstances(t.ec2Mock, instances);
  t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
  t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
}

const gpuUp = (t: Harness) => arrangeGpu(t, "i-run", [{ id: "i-run", state: "running", ip: "10.0.0.7" }]);

describe("ingest/window handler", () => {
  describe("against a local GPU service", () => {
    const gpu = new FakeGpuService();
    before(() => gpu.start());
    after(() => gpu.stop());
    beforeEach(() => {
      gpu.requests.length = 0;
      gpu.behaviour = { status: 200 };
    });

    function harness(timeoutMs = 2000): Harness {
      const t = mockedIngestDeps({ fetch: loopbackOnlyFetch, config: { requestTimeoutMs: timeoutMs } });
      t.deps.gpuServiceUrl = gpu.urlFor("/ingest/window");
      return t;
    }

    it("POSTs each valid window as JSON and acknowledges it", async () => {
      const t = harness();
      gpuUp(t);
      const payload = validPayload({ windowIndex: 3, extra: { nested: true } });

      const result = await createWindowHandler(t.deps)(sqsEvent(sqsRecord(payload)));

      expect(result.batchItemFailures).to.deep.equal([]);
      expect(gpu.requests).to.deep.equal([{ method: "POST", url: "/ingest/window", contentType: "application/json", body: payload }]);
      expect(t.logger.withStep("window_processed")[0]?.fields).to.include({ instance_id: "i-run", window_index: 3 });
      expect(t.metrics.count("WindowsProcessed")).to.equal(1);
    });

    // Only the hang needs a short timeout; a reply under a busy machine (a mutation run beside a
    // chaos run) can take longer than 150 ms, and then a 429 reads as a timeout.
    const httpFailures: { name: string; behaviour: FakeGpuService["behaviour"]; error: string; timeoutMs?: number }[] = [
      { name: "a 500 reply", behaviour: { status: 500 }, error: "500" },
      { name: "a 429 reply", behaviour: { status: 429 }, error: "429" },
      { name: "a 404 reply", behaviour: { status: 404 }, error: "404" },
      { name: "no reply before the timeout", behaviour: "hang", error: "TimeoutError", timeoutMs: 150 },
    ];
    for (const c of httpFailures) {
      it(`reports ${c.name} as an item failure`, async () => {
        const t = harness(c.timeoutMs);
        gpuUp(t);
        gpu.behaviour = c.behaviour;
        const record = sqsRecord();

        const result = await createWindowHandler(t.deps)(sqsEvent(record));

        expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(String(t.logger.withStep("window_failed")[0]?.fields.error)).to.contain(c.error);
        expect(t.metrics.count("WindowsFailed")).to.equal(1);
      });
    }
  });

  it("sends each window's natural key as its Idempotency-Key, the same on every delivery of it", async () => {
    // Prepare
    const t = mockedIngestDeps();
    gpuUp(t);
    const record = sqsRecord(validPayload({ sessionId: "s-9", windowIndex: 4 }));
    // Act: the same window delivered twice (a retried batch, or the DLQ consumer after a lost answer)
    await createWindowHandler(t.deps)(sqsEvent(record));
    await createWindowHandler(t.deps)(sqsEvent(record));
    // Assess
    expect(t.fetchHeaders.map((h) => h["idempotency-key"])).to.deep.equal(["s-9/4", "s-9/4"]);
  });

  it("reports a network error as an item failure", async () => {
    const t = mockedIngestDeps({ fetch: () => Promise.reject(new TypeError("fetch failed")) });
    gpuUp(t);
    const record = sqsRecord();

    const result = await createWindowHandler(t.deps)(sqsEvent(record));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
  });

  it("resolves the GPU address once per batch", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);

    const result = await createWindowHandler(t.deps)(sqsEvent(sqsRecord(), sqsRecord(), sqsRecord(), sqsRecord()));

    expect(result.batchItemFailures).to.deep.equal([]);
    expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(1);
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(1);
    expect(t.fetchCalls).to.have.length(4);
  });

  it("fails every valid record (full batch returned, not thrown) when no GPU runs, and never starts one", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "i-stopped", [{ id: "i-stopped", state: "stopped" }]);
    const records = [sqsRecord(), sqsRecord()];

    const result = await createWindowHandler(t.deps)(sqsEvent(...records));

    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).to.deep.equal(records.map((r) => r.messageId));
    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
    expect(t.logger.withStep("gpu_unavailable")).to.have.length(1);
    expect(t.metrics.count("WindowsFailed")).to.equal(2);
    // Each comes back in 20 s, not the queue's visibility timeout: to the DLQ (which starts the GPU) within a minute. One call for the batch.
    expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => c.args[0].input)).to.deep.equal([
      { QueueUrl: INGEST_URL, Entries: records.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle, VisibilityTimeout: 20 })) },
    ]);
  });

  it("still fails the record when bringing it back soon fails, and says so", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "i-stopped", [{ id: "i-stopped", state: "stopped" }]);
    t.sqsMock.on(ChangeMessageVisibilityBatchCommand).rejects(Object.assign(new Error("throttled"), { name: "RequestThrottled" }));
    const record = sqsRecord();

    const result = await createWindowHandler(t.deps)(sqsEvent(record));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(t.logger.withStep("window_retry_soon_failed")[0]?.fields).to.include({ message_id: record.messageId });
  });

  it("logs an entry the batch call refused, and the others as brought back", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "i-stopped", [{ id: "i-stopped", state: "stopped" }]);
    t.sqsMock
      .on(ChangeMessageVisibilityBatchCommand)
      .resolves({ Successful: [{ Id: "0" }], Failed: [{ Id: "1", Code: "ReceiptHandleIsInvalid", SenderFault: true, Message: "expired" }] });
    const records = [sqsRecord(), sqsRecord()];

    const result = await createWindowHandler(t.deps)(sqsEvent(...records));

    expect(result.batchItemFailures).to.have.length(2);
    expect(t.logger.withStep("window_retry_soon").map((e) => e.fields.message_id)).to.deep.equal([records[0]!.messageId]);
    expect(t.logger.withStep("window_retry_soon_failed")[0]?.fields).to.include({
      message_id: records[1]!.messageId,
      error: "ReceiptHandleIsInvalid: expired",
    });
  });

  it("brings back 12 failed records in two batch calls (10 + 2)", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "i-stopped", [{ id: "i-stopped", state: "stopped" }]);

    await createWindowHandler(t.deps)(sqsEvent(...Array.from({ length: 12 }, () => sqsRecord())));

    expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => c.args[0].input.Entries?.length)).to.deep.equal([10, 2]);
  });

  const launchedAgo = (ms: number): FakeInstance => ({ id: "i-run", state: "running", ip: "10.0.0.7", launchTime: new Date(1_700_000_060_000 - ms) });
  const bootCases: Array<[string, FakeInstance, number]> = [
    ["a GPU launched 2 minutes ago whose service refuses (booting): back in 20 s", launchedAgo(120_000), 1],
    ["a GPU running for an hour whose service refuses: the normal visibility timeout", launchedAgo(3_600_000), 0],
  ];
  for (const [what, instance, retries] of bootCases) {
    it(what, async () => {
      // Prepare
      const t = mockedIngestDeps({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
      arrangeGpu(t, "i-run", [instance]);
      // Act
      const result = await createWindowHandler({ ...t.deps, now: () => 1_700_000_060_000 })(sqsEvent(sqsRecord()));
      // Assess
      expect(result.batchItemFailures).to.have.length(1);
      expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).flatMap((c) => c.args[0].input.Entries ?? [])).to.have.length(retries);
    });
  }

  const resolutionErrors: { name: string; arrange: (t: Harness) => void }[] = [
    {
      name: "SSM GetParameter AccessDenied",
      arrange: (t) => t.ssmMock.on(GetParameterCommand).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" })),
    },
    {
      name: "SSM GetParameter throttled",
      arrange: (t) => t.ssmMock.on(GetParameterCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" })),
    },
    {
      name: "EC2 DescribeInstances throws",
      arrange: (t) => t.ec2Mock.on(DescribeInstancesCommand).rejects(new Error("ec2 down")),
    },
  ];
  for (const c of resolutionErrors) {
    it(`fails the batch's valid records when ${c.name}`, async () => {
      const t = mockedIngestDeps();
      gpuUp(t);
      c.arrange(t);
      const record = sqsRecord();

      const result = await createWindowHandler(t.deps)(sqsEvent(record));

      expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.fetchCalls).to.have.length(0);
    });
  }

  it("finds the running tagged GPU when the SSM id is stale and writes it back", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "i-dead", [
      { id: "i-dead", state: "terminated" },
      { id: "i-live", state: "running", ip: "10.0.0.8" },
    ]);

    const result = await createWindowHandler(t.deps)(sqsEvent(sqsRecord()));

    expect(result.batchItemFailures).to.deep.equal([]);
    expect(t.ssmMock.commandCalls(PutParameterCommand)[0]?.args[0].input).to.include({ Name: PARAM, Value: "i-live" });
    expect(t.fetchCalls[0]?.url).to.equal("http://127.0.0.1:8080/gpu-at/10.0.0.8");
  });

  const malformed: { name: string; body: string }[] = [
    { name: "not JSON", body: "{oops" },
    { name: "JSON but not an object", body: "[1,2]" },
    { name: "missing sessionId", body: JSON.stringify(validPayload({ sessionId: undefined })) },
    { name: "empty userId", body: JSON.stringify(validPayload({ userId: "" })) },
    { name: "negative windowIndex", body: JSON.stringify(validPayload({ windowIndex: -1 })) },
    { name: "fractional frameCount", body: JSON.stringify(validPayload({ frameCount: 1.5 })) },
    { name: "windowIndex as a string", body: JSON.stringify(validPayload({ windowIndex: "3" })) },
  ];
  for (const c of malformed) {
    it(`quarantines a malformed body (${c.name}) with its reason and acknowledges it`, async () => {
      const t = mockedIngestDeps();
      gpuUp(t);
      const record = sqsRecord(c.body);

      const result = await createWindowHandler(t.deps)(sqsEvent(record));

      expect(result.batchItemFailures).to.deep.equal([]);
      const sends = t.sqsMock.commandCalls(SendMessageCommand).map((s) => s.args[0].input);
      expect(sends).to.have.length(1);
      expect(sends[0]?.QueueUrl).to.equal(QUARANTINE_URL);
      expect(sends[0]?.MessageBody).to.equal(c.body);
      const attributes = sends[0]?.MessageAttributes ?? {};
      expect(attributes["quarantine-reason"]?.StringValue).to.be.a("string").with.length.above(0);
      expect(attributes["source-message-id"]?.StringValue).to.equal(record.messageId);
      expect(attributes["source-queue-arn"]?.StringValue).to.equal(INGEST_QUEUE_ARN);
      expect(t.logger.withStep("message_quarantined")[0]?.fields).to.include({
        message_id: record.messageId,
        reason: attributes["quarantine-reason"]?.StringValue,
      });
      expect(t.metrics.count("MessagesQuarantined")).to.equal(1);
      expect(t.fetchCalls).to.have.length(0);
      expect(t.ssmMock.commandCalls(GetParameterCommand), "no GPU lookup for a batch of only bad records").to.have.length(0);
    });
  }

  it("reports a malformed record as an item failure when the quarantine send fails, never losing it", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);
    t.sqsMock.on(SendMessageCommand).rejects(new Error("sqs down"));
    const bad = sqsRecord("not json");
    const good = sqsRecord();

    const result = await createWindowHandler(t.deps)(sqsEvent(bad, good));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: bad.messageId }]);
    expect(t.fetchCalls).to.have.length(1);
  });

  it("publishes the stored metrics once per invocation", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);

    await createWindowHandler(t.deps)(sqsEvent(sqsRecord(), sqsRecord()));

    expect(t.metrics.published).to.equal(1);
  });

  it("logs why no GPU could be used, once per batch, with the lookup's error", async () => {
    const t = mockedIngestDeps();
    arrangeGpu(t, "none", []);

    await createWindowHandler(t.deps)(sqsEvent(sqsRecord(), sqsRecord()));

    expect(t.logger.withStep("gpu_unavailable").map((e) => [e.level, e.fields])).to.deep.equal([
      ["warn", { step: "gpu_unavailable", error: "GpuUnavailableError: no running GPU instance (checked SSM id and Name tag)" }],
    ]);
  });

  const soonReasons: Array<[string, (t: Harness) => void, string]> = [
    ["no GPU runs", (t) => arrangeGpu(t, "i-stopped", [{ id: "i-stopped", state: "stopped" }]), "gpu_unavailable"],
    ["the GPU launched 2 minutes ago refuses (booting)", (t) => arrangeGpu(t, "i-run", [launchedAgo(120_000)]), "gpu_booting"],
  ];
  for (const [what, arrange, reason] of soonReasons) {
    it(`logs window_retry_soon with reason ${reason} when ${what}`, async () => {
      const t = mockedIngestDeps({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
      arrange(t);
      const record = sqsRecord();

      await createWindowHandler(t.deps)(sqsEvent(record));

      expect(t.logger.withStep("window_retry_soon").map((e) => e.fields)).to.deep.equal([
        { step: "window_retry_soon", message_id: record.messageId, retry_seconds: 20, reason },
      ]);
    });
  }

  it("names a refused POST a GpuRequestError with the status and at most 200 characters of the reply", async () => {
    const reply = "e".repeat(300);
    const t = mockedIngestDeps({ fetch: async () => new Response(reply, { status: 503 }) });
    gpuUp(t);

    await createWindowHandler(t.deps)(sqsEvent(sqsRecord()));

    expect(t.logger.withStep("window_failed")[0]?.fields.error).to.equal(`GpuRequestError: GPU service replied 503: ${"e".repeat(200)}`);
  });
});
