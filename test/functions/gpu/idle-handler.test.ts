import {
  DescribeInstancesCommand,
  type DescribeInstancesCommandInput,
  EC2Client,
  StopInstancesCommand,
  type StopInstancesCommandOutput,
} from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand, type GetQueueAttributesCommandInput, type QueueAttributeName, SQSClient } from "@aws-sdk/client-sqs";
import { GetParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import type { IdleConfig } from "../../../functions/ingest/config";
import { IDLE_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { createIdleHandler } from "../../../functions/gpu/idle-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";

const NOW = Date.parse("2026-11-24T12:00:00Z");
const QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest";
const DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq";
const CONFIG: IdleConfig = {
  instanceIdParam: "/encache/dev/gpu/instance_id",
  servicePort: 8080,
  statusPath: "/status",
  requestTimeoutMs: 1000,
  idleStopMinutes: 30,
  holdTag: "encache:gpu-hold",
  ingestQueueUrl: QUEUE,
  dlqUrl: DLQ,
};
const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

interface World {
  /** What SSM holds; default the GPU's id. */
  ssm?: string;
  state?: string;
  /** EC2 reported the instance without a state (a partial reply). */
  noState?: boolean;
  /** null: the instance has no private address. */
  ip?: string | null;
  /** null: EC2 lists no Tags field at all. */
  tags?: Record<string, string> | null;
  /** Visible messages per queue URL, for the first look. */
  depths?: Record<string, number>;
  /** Visible messages per queue URL for the look right before StopInstances; default `depths`. */
  depthsBeforeStop?: Record<string, number>;
  /** A GetQueueAttributes reply without Attributes. */
  noAttributes?: boolean;
  status?: { active: number; idleSeconds: number } | "down" | "hang" | { httpStatus: number; body: unknown };
  previous?: string;
  stopReply?: Omit<StopInstancesCommandOutput, "$metadata">;
}

function harness(w: World, config: IdleConfig = CONFIG) {
  const ssm = new SSMClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const [ssmMock, ec2Mock, sqsMock] = [mockClient(ssm), mockClient(ec2), mockClient(sqs)];
  ssmMock.on(GetParameterCommand, { Name: config.instanceIdParam }).resolves({ Parameter: { Value: w.ssm ?? "i-gpu" } });
  // Answers by id, like EC2: any other id is unknown.
  ec2Mock.on(DescribeInstancesCommand).callsFake((input: DescribeInstancesCommandInput) => {
    if (!input.InstanceIds?.includes("i-gpu")) throw Object.assign(new Error("unknown id"), { name: "InvalidInstanceID.NotFound" });
    return {
      Reservations: [
        {
          Instances: [
            {
              InstanceId: "i-gpu",
              ...(w.noState ? {} : { State: { Name: (w.state ?? "running") as "running" } }),
              ...(w.ip === null ? {} : { PrivateIpAddress: w.ip ?? "10.0.0.9" }),
              LaunchTime: new Date(NOW - 7_200_000),
              ...(w.tags === null ? {} : { Tags: Object.entries(w.tags ?? {}).map(([Key, Value]) => ({ Key, Value })) }),
            },
          ],
        },
      ],
    };
  });
  ec2Mock.on(StopInstancesCommand).resolves(
    w.stopReply ?? {
      StoppingInstances: [{ InstanceId: "i-gpu", PreviousState: { Name: (w.previous ?? "running") as "running" }, CurrentState: { Name: "stopping" } }],
    },
  );
  // Answers by queue and with only the attributes asked for, as SQS does: a request for the wrong
  // queue or for no depth gets nothing. Two queues per look: the third read is the second look.
  let reads = 0;
  sqsMock.on(GetQueueAttributesCommand).callsFake((input: GetQueueAttributesCommandInput) => {
    reads += 1;
    if (w.noAttributes) return {};
    const depths = reads > 2 ? (w.depthsBeforeStop ?? w.depths) : w.depths;
    const all: Record<string, string> = {
      ApproximateNumberOfMessages: String(depths?.[input.QueueUrl ?? ""] ?? 0),
      ApproximateNumberOfMessagesNotVisible: "0",
      ApproximateNumberOfMessagesDelayed: "0",
    };
    const asked = Object.entries(all).filter(([k]) => input.AttributeNames?.includes(k as QueueAttributeName));
    return asked.length > 0 ? { Attributes: Object.fromEntries(asked) } : {};
  });
  const fetches: string[] = [];
  const fetchInits: RequestInit[] = [];
  const fetch = async (url: string, init: RequestInit) => {
    fetches.push(url);
    fetchInits.push(init);
    const status = w.status ?? { active: 0, idleSeconds: 3600 };
    if (status === "down") throw new TypeError("fetch failed");
    if (status === "hang") {
      // Like fetch: only the request's signal ends it.
      return new Promise<Response>((_, reject) => init.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    }
    if ("httpStatus" in status) return new Response(JSON.stringify(status.body), { status: status.httpStatus });
    return new Response(JSON.stringify(status), { status: 200 });
  };
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const handler = createIdleHandler({ ssm, ec2, sqs, fetch, config, logger, metrics, now: () => NOW });
  return { handler, ec2Mock, ssmMock, sqsMock, fetches, fetchInits, logger, metrics };
}

const tick = () => sqsEvent(sqsRecord(JSON.stringify({ check: "gpu-idle" })));

describe("gpu/idle handler", () => {
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

  describe("no running GPU to check", () => {
    const cases: Array<[string, World, string]> = [
      ["SSM registers no GPU", { ssm: "none" }, "not_found"],
      ["EC2 no longer knows the registered id", { ssm: "i-gone" }, "not_found"],
      ["EC2 reports the instance without a state", { noState: true }, "not_found"],
      ["the GPU is stopped", { state: "stopped" }, "stopped"],
      ["the GPU is pending", { state: "pending" }, "pending"],
    ];
    for (const [what, world, state] of cases) {
      it(`when ${what}: records GpuRunning 0, logs the state "${state}", and reads neither the queues nor the service`, async () => {
        const t = harness(world);

        const result = await t.handler(tick());

        expect(result.batchItemFailures).to.deep.equal([]);
        expect(t.metrics.added.filter((m) => m.name === "GpuRunning").map((m) => m.value)).to.deep.equal([0]);
        expect(t.logger.withStep("gpu_idle_check").map((e) => e.fields)).to.deep.equal([{ step: "gpu_idle_check", state, decision: "not_running" }]);
        expect(t.sqsMock.commandCalls(GetQueueAttributesCommand)).to.have.length(0);
        expect(t.fetches).to.deep.equal([]);
        expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(0);
        expect(t.metrics.published).to.equal(1);
      });
    }
  });

  it("asks both queues for their visible, in-flight and delayed depths", async () => {
    const t = harness({});

    await t.handler(tick());

    const asked = t.sqsMock.commandCalls(GetQueueAttributesCommand).map((c) => c.args[0].input);
    expect(asked.slice(0, 2)).to.have.deep.members(
      [QUEUE, DLQ].map((QueueUrl) => ({
        QueueUrl,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
      })),
    );
  });

  it("counts a queue whose reply carries no attributes as empty", async () => {
    const t = harness({ noAttributes: true });

    await t.handler(tick());

    expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(1);
  });

  it("does not stop when a window arrived between the check and the stop, and says so", async () => {
    // Prepare: idle at the first look, a window on the DLQ at the second
    const t = harness({ depthsBeforeStop: { [DLQ]: 1 } });
    // Act
    const result = await t.handler(tick());
    // Assess
    expect(result.batchItemFailures).to.deep.equal([]);
    expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(0);
    expect(t.sqsMock.commandCalls(GetQueueAttributesCommand)).to.have.length(4);
    expect(t.logger.withStep("gpu_idle_stop_skipped").map((e) => e.fields)).to.deep.equal([
      { step: "gpu_idle_stop_skipped", instance_id: "i-gpu", reason: "work_arrived" },
    ]);
    expect(t.metrics.count("GpuStopped")).to.equal(0);
  });

  it("logs the stop with the state the instance left, the idle time and its basis", async () => {
    const t = harness({});

    await t.handler(tick());

    expect(t.logger.withStep("gpu_idle_stopped").map((e) => e.fields)).to.deep.equal([
      { step: "gpu_idle_stopped", instance_id: "i-gpu", previous_state: "running", idle_seconds: 3600, basis: "service" },
    ]);
    expect(t.logger.withStep("gpu_idle_check").map((e) => e.fields)).to.deep.equal([
      { step: "gpu_idle_check", instance_id: "i-gpu", decision: "stop", idle_seconds: 3600, queued: 0, active: 0 },
    ]);
  });

  const partialStops: Array<[string, Omit<StopInstancesCommandOutput, "$metadata">]> = [
    ["no StoppingInstances", {}],
    ["an empty StoppingInstances", { StoppingInstances: [] }],
    ["an entry without its previous state", { StoppingInstances: [{ InstanceId: "i-gpu" }] }],
  ];
  for (const [what, stopReply] of partialStops) {
    it(`logs previous_state "unknown" and counts no stop when StopInstances answers with ${what}`, async () => {
      const t = harness({ stopReply });

      const result = await t.handler(tick());

      expect(result.batchItemFailures).to.deep.equal([]);
      expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ previous_state: "unknown" });
      expect(t.metrics.count("GpuStopped")).to.equal(0);
    });
  }

  it("reads the hold from the hold tag only, not from another tag whose value looks like one", async () => {
    const t = harness({ tags: { backup: "true", Name: "encache-gpu-worker" } });

    await t.handler(tick());

    expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(1);
  });

  it("stops an idle GPU that carries no tags at all", async () => {
    const t = harness({ tags: null });

    await t.handler(tick());

    expect(t.ec2Mock.commandCalls(StopInstancesCommand)).to.have.length(1);
  });

  it("logs the service's active count in the check, and null when it did not answer", async () => {
    const busy = harness({ status: { active: 2, idleSeconds: 0 } });
    const silent = harness({ status: "down" });

    await busy.handler(tick());
    await silent.handler(tick());

    expect(busy.logger.withStep("gpu_idle_check")[0]?.fields).to.include({ decision: "busy", active: 2 });
    expect(silent.logger.withStep("gpu_idle_check")[0]?.fields).to.include({ active: null });
  });

  it("asks the service's status with a GET bounded by a timeout signal", async () => {
    const t = harness({});

    await t.handler(tick());

    expect(t.fetchInits).to.have.length(1);
    expect(t.fetchInits[0]?.method).to.equal("GET");
    expect(t.fetchInits[0]?.signal).to.be.instanceOf(AbortSignal);
  });

  it("gives up on a status request that hangs past the request timeout and judges by running time", async () => {
    const t = harness({ status: "hang" }, { ...CONFIG, requestTimeoutMs: 20 });

    await t.handler(tick());

    expect(String(t.logger.withStep("gpu_status_unavailable")[0]?.fields.error)).to.contain("TimeoutError");
    expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ basis: "running_time" });
  });

  it("does not ask a GPU without a private address for its status: judges by running time", async () => {
    const t = harness({ ip: null });

    await t.handler(tick());

    expect(t.fetches).to.deep.equal([]);
    expect(t.logger.steps()).to.not.include("gpu_status_unavailable");
    expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ basis: "running_time" });
  });

  const badStatus: Array<[string, { httpStatus: number; body: unknown }, string]> = [
    [
      "an error status, even with a well-formed body",
      { httpStatus: 500, body: { active: 0, idleSeconds: 3600 } },
      'Error: status 500: {"active":0,"idleSeconds":3600}',
    ],
    ["no active count", { httpStatus: 200, body: { idleSeconds: 3600 } }, 'Error: status 200: {"idleSeconds":3600}'],
    [
      "an active count that is not a number",
      { httpStatus: 200, body: { active: "0", idleSeconds: 3600 } },
      'Error: status 200: {"active":"0","idleSeconds":3600}',
    ],
    ["no idle time", { httpStatus: 200, body: { active: 0 } }, 'Error: status 200: {"active":0}'],
    [
      "an idle time that is not a number",
      { httpStatus: 200, body: { active: 0, idleSeconds: "3600" } },
      'Error: status 200: {"active":0,"idleSeconds":"3600"}',
    ],
    [
      "a body over 200 characters, cut in the log",
      { httpStatus: 503, body: { error: "x".repeat(300) } },
      `Error: status 503: ${JSON.stringify({ error: "x".repeat(300) }).slice(0, 200)}`,
    ],
  ];
  for (const [what, status, error] of badStatus) {
    it(`does not trust a status answer with ${what}: logs why and judges by running time`, async () => {
      const t = harness({ status });

      await t.handler(tick());

      expect(t.logger.withStep("gpu_status_unavailable").map((e) => e.fields)).to.deep.equal([{ step: "gpu_status_unavailable", instance_id: "i-gpu", error }]);
      expect(t.logger.withStep("gpu_idle_stopped")[0]?.fields).to.include({ basis: "running_time" });
    });
  }
});
