import { DescribeInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityBatchCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { createDlqHandler } from "../../../functions/ingest/dlq-handler";
import { DLQ_URL, fakeDescribeInstances, mockedIngestDeps, PARAM, QUARANTINE_URL, type FakeInstance } from "../helpers/ingest-deps";
import { sqsEvent, sqsRecord, validPayload } from "../helpers/sqs-events";

type Harness = ReturnType<typeof mockedIngestDeps>;

function arrangeGpu(t: Harness, ssmValue: string, instances: FakeInstance[]): void {
  t.ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves({ Parameter: { Name: PARAM, Value: ssmValue } });
  fakeDescribeInstances(t.ec2Mock, instances);
  t.ec2Mock.on(StartInstancesCommand).resolves({});
  t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
  t.sqsMock.on(SendMessageCommand).resolves({ MessageId: "q1" });
}

/** Every park the handler asked for, across its ChangeMessageVisibilityBatch calls, in order. */
function parks(t: Harness): Array<{ QueueUrl?: string; ReceiptHandle?: string; VisibilityTimeout?: number }> {
  return t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).flatMap((c) =>
    (c.args[0].input.Entries ?? []).map((e) => ({
      QueueUrl: c.args[0].input.QueueUrl,
      ReceiptHandle: e.ReceiptHandle,
      VisibilityTimeout: e.VisibilityTimeout,
    })),
  );
}

const gpuDown = (t: Harness) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "stopped" }]);
const gpuUp = (t: Harness) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "running", ip: "10.1.2.3" }]);

describe("ingest/dlq handler", () => {
  it("AC-5 GPU down: tries to start it once, then parks the message while it boots (20 s, not the long park) and reports the item failure", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    const record = sqsRecord(validPayload({ frameCount: 30 }), {
      receiptHandle: "r1",
      attributes: { ...sqsRecord().attributes, ApproximateReceiveCount: "4" },
    });

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(1);
    expect(parks(t)).to.deep.equal([{ QueueUrl: DLQ_URL, ReceiptHandle: "r1", VisibilityTimeout: 20 }]);
    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    // The seed's order: the start attempt precedes the visibility change.
    const steps = t.logger.steps();
    expect(steps.indexOf("gpu_autostart_attempted")).to.be.lessThan(steps.indexOf("dlq_visibility_extended"));
    expect(t.logger.withStep("dlq_visibility_extended")[0]?.fields).to.deep.equal({
      step: "dlq_visibility_extended",
      message_id: record.messageId,
      extended_seconds: 20,
      receive_count: 4,
      reason: "gpu_booting",
    });
    expect(t.metrics.count("GpuAutostartAttempted")).to.equal(1);
    expect(t.metrics.count("DlqMessagesParked")).to.equal(1);
    expect(t.fetchCalls).to.have.length(0);
  });

  it("AC-6 GPU running: does not try to start it and sends the window to the GPU", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);
    const record = sqsRecord(validPayload({ frameCount: 0, extra: "kept" }));

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
    expect(t.logger.steps()).to.not.include("gpu_autostart_attempted");
    expect(parks(t)).to.have.length(0);
    expect(result.batchItemFailures).to.deep.equal([]);
    expect(t.fetchCalls).to.deep.equal([{ url: "http://127.0.0.1:8080/gpu-at/10.1.2.3", body: validPayload({ frameCount: 0, extra: "kept" }) }]);
    expect(t.logger.withStep("window_processed")[0]?.fields).to.include({ message_id: record.messageId });
  });

  it("checks availability once and tries to start the GPU at most once for a multi-record batch", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    const records = [sqsRecord(), sqsRecord(), sqsRecord()];

    const result = await createDlqHandler(t.deps)(sqsEvent(...records));

    // The start attempt reuses the availability check's reads: one SSM read, a Describe by id and
    // the running-instance tag scan, then StartInstances.
    expect(t.ssmMock.commandCalls(GetParameterCommand), "one SSM read shared by check and start").to.have.length(1);
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(2);
    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(1);
    expect(t.logger.withStep("gpu_autostart_attempted")).to.have.length(1);
    expect(parks(t)).to.have.length(3);
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).to.deep.equal(records.map((r) => r.messageId));
  });

  it("parks a batch of 10 with one lookup, one start attempt and one ChangeMessageVisibilityBatch", async () => {
    // Prepare
    const t = mockedIngestDeps();
    gpuDown(t);
    const records = Array.from({ length: 10 }, (_, i) => sqsRecord(validPayload(), { receiptHandle: `r${i}` }));
    // Act
    const result = await createDlqHandler(t.deps)(sqsEvent(...records));
    // Assess: the calls per parked message are a tenth of a one-record invocation's
    expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(1);
    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(1);
    expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand)).to.have.length(1);
    expect(parks(t)).to.deep.equal(records.map((r) => ({ QueueUrl: DLQ_URL, ReceiptHandle: r.receiptHandle, VisibilityTimeout: 20 })));
    expect(result.batchItemFailures).to.have.length(10);
    expect(t.metrics.count("DlqMessagesParked")).to.equal(10);
  });

  it("a park SQS refuses for one entry is logged for that record only; the others count as parked", async () => {
    // Prepare
    const t = mockedIngestDeps();
    gpuDown(t);
    t.sqsMock
      .on(ChangeMessageVisibilityBatchCommand)
      .resolves({ Successful: [{ Id: "0" }], Failed: [{ Id: "1", Code: "ReceiptHandleIsInvalid", SenderFault: true, Message: "expired" }] });
    const [kept, refused] = [sqsRecord(), sqsRecord()];
    // Act
    const result = await createDlqHandler(t.deps)(sqsEvent(kept, refused));
    // Assess: both still fail (and come back); only the refused one is reported as not parked
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).to.deep.equal([kept.messageId, refused.messageId]);
    expect(t.logger.withStep("dlq_visibility_extend_failed").map((l) => l.fields.message_id)).to.deep.equal([refused.messageId]);
    expect(t.logger.withStep("dlq_visibility_extended").map((l) => l.fields.message_id)).to.deep.equal([kept.messageId]);
    expect(t.metrics.count("DlqMessagesParked")).to.equal(1);
  });

  it("checks availability once for a multi-record batch when the GPU is up", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);

    const result = await createDlqHandler(t.deps)(sqsEvent(sqsRecord(), sqsRecord(), sqsRecord()));

    expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(1);
    expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(1);
    expect(t.fetchCalls).to.have.length(3);
    expect(result.batchItemFailures).to.deep.equal([]);
  });

  it("still reports the item failure when ChangeMessageVisibilityBatch fails, and logs it", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    t.sqsMock.on(ChangeMessageVisibilityBatchCommand).rejects(Object.assign(new Error("receipt expired"), { name: "ReceiptHandleIsInvalid" }));
    const record = sqsRecord();

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    const [failed] = t.logger.withStep("dlq_visibility_extend_failed");
    expect(failed?.level).to.equal("error");
    expect(failed?.fields).to.include({ message_id: record.messageId });
    expect(t.logger.steps()).to.not.include("dlq_visibility_extended");
    expect(t.metrics.count("DlqMessagesParked")).to.equal(0);
  });

  it("parks the batch when StartInstances fails (AC-4 at handler level)", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    t.ec2Mock.on(StartInstancesCommand).rejects(new Error("access denied"));
    const record = sqsRecord();

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(t.logger.steps()).to.include.members(["gpu_autostart_failed", "dlq_visibility_extended"]);
    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(t.metrics.count("GpuAutostartAttempted")).to.equal(0);
  });

  it("treats a failing availability check (SSM throttled) as unavailable and parks", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    t.ssmMock.on(GetParameterCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    const record = sqsRecord();

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(t.logger.steps()).to.include.members(["gpu_availability_check_failed", "gpu_autostart_failed", "dlq_visibility_extended"]);
    expect(t.logger.withStep("gpu_availability_check_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["warn", { step: "gpu_availability_check_failed", error: "ThrottlingException: Rate exceeded" }],
    ]);
    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
  });

  it("uses DLQ_VISIBILITY_EXTENSION_SECONDS from config for the long park", async () => {
    const t = mockedIngestDeps({ config: { visibilityExtensionSeconds: 120 } });
    arrangeGpu(t, "none", []);

    await createDlqHandler(t.deps)(sqsEvent(sqsRecord()));

    expect(parks(t)[0]?.VisibilityTimeout).to.equal(120);
  });

  it("quarantines a malformed record to the terminal queue before any GPU check", async () => {
    const t = mockedIngestDeps();
    gpuDown(t);
    const bad = sqsRecord("{not json");

    const result = await createDlqHandler(t.deps)(sqsEvent(bad));

    expect(result.batchItemFailures).to.deep.equal([]);
    const [send] = t.sqsMock.commandCalls(SendMessageCommand);
    expect(send?.args[0].input.QueueUrl).to.equal(QUARANTINE_URL);
    expect(send?.args[0].input.MessageBody).to.equal("{not json");
    expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(0);
    expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
  });

  const DAY_MS = 86_400_000;
  const sentDaysAgo = (days: number) => String(1_700_000_060_000 - days * DAY_MS);
  const ageCases: Array<{ title: string; days: number; quarantined: boolean }> = [
    { title: "12.9 days old: parked as usual", days: 12.9, quarantined: false },
    { title: "exactly 13 days old: quarantined before the DLQ's retention deletes it", days: 13, quarantined: true },
    { title: "13.9 days old: quarantined", days: 13.9, quarantined: true },
  ];
  for (const c of ageCases) {
    it(`GPU down, a message ${c.title}`, async () => {
      const t = mockedIngestDeps();
      gpuDown(t);
      const record = sqsRecord(validPayload(), {
        attributes: { ...sqsRecord().attributes, SentTimestamp: sentDaysAgo(c.days), ApproximateReceiveCount: "900" },
      });

      const result = await createDlqHandler(t.deps)(sqsEvent(record));

      const sends = t.sqsMock.commandCalls(SendMessageCommand);
      if (c.quarantined) {
        expect(result.batchItemFailures).to.deep.equal([]);
        expect(sends).to.have.length(1);
        expect(sends[0]?.args[0].input.QueueUrl).to.equal(QUARANTINE_URL);
        const reason = sends[0]?.args[0].input.MessageAttributes?.["quarantine-reason"]?.StringValue;
        expect(reason).to.match(/^expiring_in_dlq: \d+ s old, limit 1123200 s, 900 receives$/);
        expect(parks(t)).to.have.length(0);
      } else {
        expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        expect(sends).to.have.length(0);
        expect(parks(t)).to.have.length(1);
      }
    });
  }

  it("reports a malformed record as an item failure when the quarantine send fails", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);
    t.sqsMock.on(SendMessageCommand).rejects(new Error("sqs unavailable"));
    const bad = sqsRecord({ sessionId: "" });
    const good = sqsRecord();

    const result = await createDlqHandler(t.deps)(sqsEvent(bad, good));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: bad.messageId }]);
    expect(t.logger.steps()).to.not.include("message_quarantined");
  });

  it("reports a GPU HTTP error as an item failure without parking", async () => {
    const t = mockedIngestDeps({ fetch: async () => new Response("busy", { status: 503 }) });
    gpuUp(t);
    const record = sqsRecord();

    const result = await createDlqHandler(t.deps)(sqsEvent(record));

    expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
    expect(parks(t)).to.have.length(0);
    expect(String(t.logger.withStep("window_failed")[0]?.fields.error)).to.contain("503");
  });

  describe("how long a message parks, by what the GPU is doing", () => {
    // The records factory sends at 1_700_000_000_000; a minute later the message is young.
    const NOW = 1_700_000_060_000;
    const ec2Error = (name: string) => Object.assign(new Error(name), { name });
    const cases: Array<{ title: string; arrange: (t: Harness) => void; seconds: number | null; reason?: string; metric?: string; starts?: number }> = [
      { title: "a start was accepted (booting)", arrange: gpuDown, seconds: 20, reason: "gpu_booting", metric: "GpuAutostartAttempted", starts: 1 },
      {
        title: "already pending (booting, no second start)",
        arrange: (t) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "pending" }]),
        seconds: 20,
        reason: "gpu_booting",
        starts: 0,
      },
      {
        title: "still stopping after an idle stop (no doomed StartInstances)",
        arrange: (t) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "stopping" }]),
        seconds: 20,
        reason: "gpu_booting",
        starts: 0,
      },
      {
        title: "StartInstances refused with IncorrectInstanceState (it began stopping meanwhile)",
        arrange: (t) => {
          gpuDown(t);
          t.ec2Mock.on(StartInstancesCommand).rejects(ec2Error("IncorrectInstanceState"));
        },
        seconds: 20,
        reason: "gpu_booting",
        starts: 1,
      },
      {
        title: "no capacity for the type (retried at the capacity pace, counted)",
        arrange: (t) => {
          gpuDown(t);
          t.ec2Mock.on(StartInstancesCommand).rejects(ec2Error("InsufficientInstanceCapacity"));
        },
        seconds: 120,
        reason: "gpu_capacity",
        metric: "GpuStartInsufficientCapacity",
        starts: 1,
      },
      {
        title: "StartInstances failed otherwise (the long park)",
        arrange: (t) => {
          gpuDown(t);
          t.ec2Mock.on(StartInstancesCommand).rejects(ec2Error("UnauthorizedOperation"));
        },
        seconds: 900,
        reason: "gpu_unavailable",
        starts: 1,
      },
      { title: "no instance at all (the long park)", arrange: (t) => arrangeGpu(t, "none", []), seconds: 900, reason: "gpu_unavailable", starts: 0 },
      {
        title: "running since 2 minutes, service refusing (booting)",
        arrange: (t) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "running", ip: "10.1.2.3", launchTime: new Date(NOW - 120_000) }]),
        seconds: 20,
        reason: "gpu_booting",
        starts: 0,
      },
      {
        title: "running since an hour, service refusing (no park: the failure retries as before)",
        arrange: (t) => arrangeGpu(t, "i-abc", [{ id: "i-abc", state: "running", ip: "10.1.2.3", launchTime: new Date(NOW - 3_600_000) }]),
        seconds: null,
        starts: 0,
      },
    ];
    for (const c of cases) {
      it(`${c.title}: ${c.seconds === null ? "not parked" : `${c.seconds} s`}`, async () => {
        // Prepare
        const t = mockedIngestDeps({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
        c.arrange(t);
        const record = sqsRecord(validPayload(), { receiptHandle: "r1" });
        // Act
        const result = await createDlqHandler({ ...t.deps, now: () => NOW })(sqsEvent(record));
        // Assess
        expect(result.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
        const parked = parks(t).map((x) => x.VisibilityTimeout);
        expect(parked).to.deep.equal(c.seconds === null ? [] : [c.seconds]);
        if (c.reason) expect(t.logger.withStep("dlq_visibility_extended")[0]?.fields.reason).to.equal(c.reason);
        if (c.metric) expect(t.metrics.count(c.metric)).to.equal(1);
        // Each start outcome counts only its own metric.
        for (const metric of ["GpuAutostartAttempted", "GpuStartInsufficientCapacity"].filter((m) => m !== c.metric)) {
          expect(t.metrics.count(metric), metric).to.equal(0);
        }
        expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(c.starts ?? 0);
      });
    }
  });

  describe("a warm environment trusts a serving GPU for 30 s", () => {
    it("delivers the next message without reading SSM or EC2 again, then looks again 30 s after the last delivery", async () => {
      // Prepare
      const t = mockedIngestDeps();
      gpuUp(t);
      let clock = 1_700_000_060_000;
      const handler = createDlqHandler({ ...t.deps, now: () => clock });
      // Act
      await handler(sqsEvent(sqsRecord()));
      clock += 29_000;
      await handler(sqsEvent(sqsRecord()));
      const lookupsWithin = t.ssmMock.commandCalls(GetParameterCommand).length;
      clock += 31_000;
      await handler(sqsEvent(sqsRecord()));
      // Assess
      expect(lookupsWithin).to.equal(1);
      expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(2);
      expect(t.fetchCalls).to.have.length(3);
    });

    it("no longer trusts it exactly 30 s after the last delivery", async () => {
      // Prepare
      const t = mockedIngestDeps();
      gpuUp(t);
      let clock = 1_700_000_060_000;
      const handler = createDlqHandler({ ...t.deps, now: () => clock });
      await handler(sqsEvent(sqsRecord()));
      // Act
      clock += 30_000;
      await handler(sqsEvent(sqsRecord()));
      // Assess
      expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(2);
    });

    it("forgets the GPU when a POST to it fails, so the next message looks it up", async () => {
      // Prepare
      let fail = false;
      const t = mockedIngestDeps({ fetch: async () => (fail ? Promise.reject(new TypeError("fetch failed")) : new Response("ok", { status: 200 })) });
      gpuUp(t);
      const handler = createDlqHandler({ ...t.deps, now: () => 1_700_000_060_000 });
      await handler(sqsEvent(sqsRecord()));
      // Act
      fail = true;
      const failed = await handler(sqsEvent(sqsRecord()));
      fail = false;
      await handler(sqsEvent(sqsRecord()));
      // Assess
      expect(failed.batchItemFailures).to.have.length(1);
      expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(2);
    });
  });

  it("publishes the stored metrics once per invocation", async () => {
    const t = mockedIngestDeps();
    gpuUp(t);

    await createDlqHandler(t.deps)(sqsEvent(sqsRecord()));

    expect(t.metrics.published).to.equal(1);
  });
});
