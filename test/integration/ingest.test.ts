import { expect } from "chai";
import { createDlqHandler } from "../../functions/ingest/dlq-handler";
import { createWindowHandler } from "../../functions/ingest/window-handler";
import { FakeGpuService, loopbackOnlyFetch } from "../functions/helpers/gpu-server";
import { RecordingLogger, RecordingMetrics } from "../functions/helpers/telemetry";
import { AwsWorld, GPU_NAME_TAG, GPU_PARAM, type Queue } from "./helpers/aws-world";
import { pollOnce } from "./helpers/event-source-mapping";
import { resetMoto } from "./helpers/moto";

const GPU_PATH = "/ingest/window";
const payload = { sessionId: "s1", userId: "u1", windowIndex: 2, frameCount: 30, codec: "h264" };

describe("ingest consumers against moto", () => {
  const gpu = new FakeGpuService();
  let world: AwsWorld;
  let ingest: Queue;
  let dlq: Queue;
  let quarantineQueue: Queue;
  let logger: RecordingLogger;
  let metrics: RecordingMetrics;

  before(() => gpu.start());
  after(() => gpu.stop());

  beforeEach(async () => {
    await resetMoto();
    gpu.requests.length = 0;
    gpu.behaviour = { status: 200 };
    world = new AwsWorld();
    dlq = await world.createQueue("ingest-dlq");
    ingest = await world.createQueue("ingest");
    quarantineQueue = await world.createQueue("ingest-quarantine");
    logger = new RecordingLogger();
    metrics = new RecordingMetrics();
  });

  function baseDeps() {
    return {
      ssm: world.ssm,
      ec2: world.ec2,
      sqs: world.sqs,
      fetch: loopbackOnlyFetch,
      gpuServiceUrl: gpu.urlFor(GPU_PATH),
      logger,
      metrics,
    };
  }

  function gpuConfig(quarantineQueueUrl: string) {
    return {
      instanceIdParam: GPU_PARAM,
      nameTag: GPU_NAME_TAG,
      servicePort: 8080,
      servicePath: GPU_PATH,
      requestTimeoutMs: 2000,
      quarantineQueueUrl,
    };
  }

  const dlqConsumer = () =>
    createDlqHandler({
      ...baseDeps(),
      config: {
        ...gpuConfig(quarantineQueue.url),
        dlqUrl: dlq.url,
        visibilityExtensionSeconds: 900,
        maxAgeSeconds: 1_123_200,
        bootParkSeconds: 20,
        capacityRetrySeconds: 120,
        bootGraceSeconds: 600,
      },
    });
  const windowConsumer = () =>
    createWindowHandler({ ...baseDeps(), config: { ...gpuConfig(dlq.url), ingestQueueUrl: ingest.url, retrySeconds: 20, bootGraceSeconds: 600 } });

  it("DLQ, GPU stopped: starts the registered instance and parks the message for the boot park (20 s)", async () => {
    const gpuId = await world.launchGpu("stopped");
    await world.setGpuParam(gpuId);
    const messageId = await world.send(dlq, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: dlq.url, queueArn: dlq.arn }, dlqConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([{ itemIdentifier: messageId }]);
    expect(await world.instanceState(gpuId)).to.equal("running");
    expect(logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({ instance_id: gpuId, source: "ssm" });
    expect(logger.withStep("dlq_visibility_extended")[0]?.fields).to.include({ extended_seconds: 20, reason: "gpu_booting" });
    expect(await world.receiveAll(dlq), "parked, so not receivable").to.have.length(0);
    expect(await world.depth(dlq)).to.deep.equal({ visible: 0, notVisible: 1 });
    expect(gpu.requests).to.have.length(0);
  });

  it("DLQ, GPU running: posts the window to the GPU service and deletes the message", async () => {
    const gpuId = await world.launchGpu("running");
    await world.setGpuParam(gpuId);
    await world.send(dlq, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: dlq.url, queueArn: dlq.arn }, dlqConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([]);
    expect(gpu.requests.map((r) => [r.method, r.url, r.body])).to.deep.equal([["POST", GPU_PATH, payload]]);
    expect(await world.depth(dlq)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("window, GPU running: posts the window to the GPU service and deletes the message", async () => {
    const gpuId = await world.launchGpu("running");
    await world.setGpuParam(gpuId);
    await world.send(ingest, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: ingest.url, queueArn: ingest.arn }, windowConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([]);
    expect(gpu.requests.map((r) => r.body)).to.deep.equal([payload]);
    expect(await world.depth(ingest)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("DLQ, stale SSM id (terminated instance): the tag scan finds the stopped GPU and starts it", async () => {
    const deadId = await world.launchGpu("terminated");
    const gpuId = await world.launchGpu("stopped");
    await world.setGpuParam(deadId);
    const messageId = await world.send(dlq, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: dlq.url, queueArn: dlq.arn }, dlqConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([{ itemIdentifier: messageId }]);
    expect(await world.instanceState(gpuId)).to.equal("running");
    expect(await world.instanceState(deadId)).to.equal("terminated");
    expect(logger.withStep("gpu_autostart_attempted")[0]?.fields).to.include({ instance_id: gpuId, source: "tag_scan" });
    expect(await world.gpuParam(), "the DLQ consumer's start path leaves SSM alone").to.equal(deadId);
  });

  it("window, stale SSM id (terminated instance): finds the running tagged GPU, writes it to SSM and posts", async () => {
    const deadId = await world.launchGpu("terminated");
    const gpuId = await world.launchGpu("running");
    await world.launchGpu("running", "some-other-service");
    await world.setGpuParam(deadId);
    await world.send(ingest, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: ingest.url, queueArn: ingest.arn }, windowConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([]);
    expect(await world.gpuParam()).to.equal(gpuId);
    expect(gpu.requests).to.have.length(1);
    expect(await world.depth(ingest)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("DLQ, malformed message: lands in the quarantine queue with its reason and leaves the DLQ", async () => {
    const body = JSON.stringify({ ...payload, windowIndex: -1 });
    const messageId = await world.send(dlq, body);

    const run = await pollOnce(world.sqs, { queueUrl: dlq.url, queueArn: dlq.arn }, dlqConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([]);
    expect(await world.depth(dlq)).to.deep.equal({ visible: 0, notVisible: 0 });
    const [quarantined, ...rest] = await world.receiveAll(quarantineQueue);
    expect(rest).to.have.length(0);
    expect(quarantined?.Body).to.equal(body);
    expect(quarantined?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.contain("windowIndex");
    expect(quarantined?.MessageAttributes?.["source-message-id"]?.StringValue).to.equal(messageId);
    expect(quarantined?.MessageAttributes?.["source-queue-arn"]?.StringValue).to.equal(dlq.arn);
  });

  it("window, no GPU running: the message stays on the queue for a retry", async () => {
    const gpuId = await world.launchGpu("stopped");
    await world.setGpuParam(gpuId);
    const messageId = await world.send(ingest, JSON.stringify(payload));

    const run = await pollOnce(world.sqs, { queueUrl: ingest.url, queueArn: ingest.arn }, windowConsumer());

    expect(run?.response.batchItemFailures).to.deep.equal([{ itemIdentifier: messageId }]);
    expect(await world.depth(ingest)).to.deep.equal({ visible: 0, notVisible: 1 });
    expect(logger.withStep("window_retry_soon")[0]?.fields).to.include({ message_id: messageId, retry_seconds: 20, reason: "gpu_unavailable" });
    expect(await world.instanceState(gpuId), "only the DLQ consumer starts the GPU").to.equal("stopped");
  });
});
