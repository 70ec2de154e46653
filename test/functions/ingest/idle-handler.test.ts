import { DescribeInstancesCommand, EC2Client, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { GetParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import type { IdleConfig } from "../../../functions/ingest/config";
import { IDLE_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { createIdleHandler } from "../../../functions/ingest/idle-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";

const NOW = Date.parse("2026-11-24T12:00:00Z");
const QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest";
const DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq";
const CONFIG: IdleConfig = { instanceIdParam: "/encache/dev/gpu/instance_id", servicePort: 8080, statusPath: "/status", requestTimeoutMs: 1000, idleStopMinutes: 30, holdTag: "encache:gpu-hold", ingestQueueUrl: QUEUE, dlqUrl: DLQ };
const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

interface World {
  state?: string;
  tags?: Record<string, string>;
  depths?: Record<string, number>;
  status?: { active: number; idleSeconds: number } | "down";
  previous?: string;
}

function harness(w: World) {
  const ssm = new SSMClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const [ssmMock, ec2Mock, sqsMock] = [mockClient(ssm), mockClient(ec2), mockClient(sqs)];
  ssmMock.on(GetParameterCommand, { Name: CONFIG.instanceIdParam }).resolves({ Parameter: { Value: "i-gpu" } });
  ec2Mock.on(DescribeInstancesCommand, { InstanceIds: ["i-gpu"] }).resolves({
    Reservations: [
      {
        Instances: [
          {
            InstanceId: "i-gpu",
            State: { Name: (w.state ?? "running") as "running" },
            PrivateIpAddress: "10.0.0.9",
            LaunchTime: new Date(NOW - 7_200_000),
            Tags: Object.entries(w.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
          },
        ],
      },
    ],
  });
  ec2Mock.on(StopInstancesCommand).resolves({ StoppingInstances: [{ InstanceId: "i-gpu", PreviousState: { Name: (w.previous ?? "running") as "running" }, CurrentState: { Name: "stopping" } }] });
  // Answers by queue: a request for the wrong queue gets nothing.
  sqsMock.on(GetQueueAttributesCommand).callsFake((input: { QueueUrl: string }) => ({ Attributes: { ApproximateNumberOfMessages: String(w.depths?.[input.QueueUrl] ?? 0), ApproximateNumberOfMessagesNotVisible: "0", ApproximateNumberOfMessagesDelayed: "0" } }));
  const fetches: string[] = [];
  const fetch = async (url: string) => {
    fetches.push(url);
    if (w.status === "down") throw new TypeError("fetch failed");
    return new Response(JSON.stringify(w.status ?? { active: 0, idleSeconds: 3600 }), { status: 200 });
  };
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const handler = createIdleHandler({ ssm, ec2, sqs, fetch, config: CONFIG, logger, metrics, now: () => NOW });
  return { handler, ec2Mock, ssmMock, sqsMock, fetches, logger, metrics };
}

const tick = () => sqsEvent(sqsRecord(JSON.stringify({ check: "gpu-idle" })));

describe("ingest/idle handler", () => {
  it("stops an idle GPU once, asking its service on the status path, and counts it", async () => {
    // Prepare
    const t = harness({});
    // Act
    const result = await t.handler(tick());
    // Assess
    expect(result.batchItemFailures).to.deep.equal([]);
    expect(t.ec2Mock.commandCalls(StopInstancesCommand).map((c) => c.args[0].input)).to.deep.equal([{ InstanceIds: ["i-gpu"] }]);
    expect(t.fetches).to.deep.equal(["http://10.0.0.9:8080/status"]);
    expect(t.metrics.count("GpuStopped")).to.equal(1);
    expect(t.metrics.count("GpuRunning")).to.equal(1);
    expect(t.metrics.count("GpuIdleMinutes")).to.equal(60);
    expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ instance_id: "i-gpu", basis: "service" });
    expect(t.metrics.published).to.equal(1);
  });

  const kept: Array<[string, World, string]> = [
    ["a window waiting on the ingest queue", { depths: { [QUEUE]: 1 } }, "busy"],
    ["a window parked on the DLQ", { depths: { [DLQ]: 2 } }, "busy"],
    ["a window running on the GPU", { status: { active: 1, idleSeconds: 9999 } }, "busy"],
    ["an operator's hold", { tags: { "encache:gpu-hold": "true" } }, "held"],
    ["idle less than the window", { status: { active: 0, idleSeconds: 600 } }, "wait"],
    ["already stopped", { state: "stopped" }, "not_running"],
  ];
  for (const [what, world, decision] of kept) {
    it(`keeps the GPU on with ${what}`, async () => {
      const t = harness(world);
      await t.handler(tick());
      expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(0);
      expect(t.logger.withStep("gpu_idle_check")[0]?.fields.decision).to.equal(decision);
    });
  }

  it("judges a silent service by the instance's running time, and says so", async () => {
    const t = harness({ status: "down" });
    await t.handler(tick());
    expect(t.logger.steps()).to.include("gpu_status_unavailable");
    expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ basis: "running_time" });
  });

  it("does not count a stop of an instance that was already stopping (a duplicate tick)", async () => {
    const t = harness({ previous: "stopping" });
    await t.handler(tick());
    expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(1);
    expect(t.metrics.count("GpuStopped")).to.equal(0);
  });

  it("reports the tick as failed when StopInstances fails, so SQS retries it", async () => {
    const t = harness({});
    t.ec2Mock.on(StopInstancesCommand).rejects(Object.assign(new Error("denied"), { name: "UnauthorizedOperation" }));
    const result = await t.handler(tick());
    expect(result.batchItemFailures).to.have.length(1);
  });

  it("sends exactly IDLE_IAM_ACTIONS on the stopping path", async () => {
    const t = harness({});
    await t.handler(tick());
    const sent = [
      ...t.ssmMock.calls().map((c) => `ssm:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...t.ec2Mock.calls().map((c) => `ec2:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...t.sqsMock.calls().map((c) => `sqs:${c.args[0].constructor.name.replace(/Command$/, "")}`),
    ];
    expect([...new Set(sent)]).to.have.members([...IDLE_IAM_ACTIONS]);
  });
});
