import {
  AutoScalingClient,
  CreateOrUpdateTagsCommand,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  SetInstanceProtectionCommand,
} from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand, type GetQueueAttributesCommandInput, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import type { ScalerConfig } from "../../../functions/ingest/config";
import { SCALER_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { createScalerHandler, SCALED_OUT_AT_TAG } from "../../../functions/gpu/scaler-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";

const NOW = Date.parse("2026-11-25T12:00:00Z");
const QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest";
const DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq";
const GROUP = "encache-gpu-fleet-prod";
const CONFIG: ScalerConfig = {
  fleetGroupName: GROUP,
  servicePort: 8080,
  statusPath: "/status",
  requestTimeoutMs: 1000,
  idleStopMinutes: 30,
  holdTag: "encache:gpu-hold",
  windowsPerInstance: 500,
  scaleInCooldownSeconds: 600,
  ingestQueueUrl: QUEUE,
  dlqUrl: DLQ,
};
const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

interface Member {
  id: string;
  ip: string;
  protected?: boolean;
  status?: { active: number; idleSeconds: number } | "down";
  lifecycle?: string;
}

interface World {
  desired: number;
  max?: number;
  members?: Member[];
  tags?: Record<string, string>;
  /** Visible messages on the ingest queue (the DLQ holds none). */
  backlog?: number;
  /** The backlog on the second look (right before going to zero); default `backlog`. */
  backlogBeforeZero?: number;
}

function harness(w: World) {
  const autoscaling = new AutoScalingClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const [asMock, ec2Mock, sqsMock] = [mockClient(autoscaling), mockClient(ec2), mockClient(sqs)];
  const members = w.members ?? [];
  asMock.on(DescribeAutoScalingGroupsCommand, { AutoScalingGroupNames: [GROUP] }).resolves({
    AutoScalingGroups: [
      {
        AutoScalingGroupName: GROUP,
        DesiredCapacity: w.desired,
        MinSize: 0,
        MaxSize: w.max ?? 4,
        DefaultCooldown: 300,
        AvailabilityZones: ["us-east-1a"],
        HealthCheckType: "ELB",
        CreatedTime: new Date(NOW - 86_400_000),
        Instances: members.map((m) => ({
          InstanceId: m.id,
          LifecycleState: (m.lifecycle ?? "InService") as "InService",
          ProtectedFromScaleIn: m.protected ?? false,
          AvailabilityZone: "us-east-1a",
          HealthStatus: "Healthy",
        })),
        Tags: Object.entries(w.tags ?? {}).map(([Key, Value]) => ({
          Key,
          Value,
          ResourceId: GROUP,
          ResourceType: "auto-scaling-group",
          PropagateAtLaunch: false,
        })),
      },
    ],
  });
  asMock.on(SetInstanceProtectionCommand).resolves({});
  asMock.on(SetDesiredCapacityCommand).resolves({});
  asMock.on(CreateOrUpdateTagsCommand).resolves({});
  ec2Mock.on(DescribeInstancesCommand).resolves({
    Reservations: [{ Instances: members.map((m) => ({ InstanceId: m.id, PrivateIpAddress: m.ip, LaunchTime: new Date(NOW - 7_200_000) })) }],
  });
  let looks = 0;
  sqsMock.on(GetQueueAttributesCommand).callsFake((input: GetQueueAttributesCommandInput) => {
    if (input.QueueUrl === QUEUE) looks += 1;
    const visible = input.QueueUrl !== QUEUE ? 0 : looks > 1 ? (w.backlogBeforeZero ?? w.backlog ?? 0) : (w.backlog ?? 0);
    return {
      Attributes: { ApproximateNumberOfMessages: String(visible), ApproximateNumberOfMessagesNotVisible: "0", ApproximateNumberOfMessagesDelayed: "0" },
    };
  });
  const fetched: string[] = [];
  const byIp = new Map(members.map((m) => [m.ip, m]));
  const fetch = async (url: string): Promise<Response> => {
    fetched.push(url);
    const m = byIp.get(new URL(url).hostname);
    if (!m || m.status === "down") throw new TypeError("fetch failed");
    return new Response(JSON.stringify(m.status ?? { active: 0, idleSeconds: 0 }), { status: 200 });
  };
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const handler = createScalerHandler({ autoscaling, ec2, sqs, fetch, config: CONFIG, logger, metrics, now: () => NOW });
  const tick = () => handler(sqsEvent(sqsRecord({ tick: NOW })));
  return { tick, asMock, ec2Mock, sqsMock, logger, metrics, fetched };
}

const desiredSet = (h: ReturnType<typeof harness>) => h.asMock.commandCalls(SetDesiredCapacityCommand).map((c) => c.args[0].input);
const protectionSet = (h: ReturnType<typeof harness>) => h.asMock.commandCalls(SetInstanceProtectionCommand).map((c) => c.args[0].input);

describe("gpu/scaler-handler (fleet mode)", () => {
  it("scales out from zero to ceil(backlog / windowsPerInstance), bounded by max, and stamps the scale-out time first", async () => {
    // Prepare: 3,000 windows queued, nothing running.
    const h = harness({ desired: 0, backlog: 3000 });
    // Act
    const out = await h.tick();
    // Assess
    expect(out.batchItemFailures).to.deep.equal([]);
    expect(desiredSet(h)).to.deep.equal([{ AutoScalingGroupName: GROUP, DesiredCapacity: 4, HonorCooldown: false }]);
    expect(h.asMock.commandCalls(CreateOrUpdateTagsCommand).map((c) => c.args[0].input.Tags)).to.deep.equal([
      [{ ResourceId: GROUP, ResourceType: "auto-scaling-group", Key: SCALED_OUT_AT_TAG, Value: new Date(NOW).toISOString(), PropagateAtLaunch: false }],
    ]);
    expect(h.metrics.count("GpuFleetScaledOut")).to.equal(1);
    expect(h.logger.withStep("gpu_fleet_desired_set")[0]?.fields).to.include({ previous_desired: 0, desired: 4, reason: "scale_out" });
    expect(h.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(0);
  });

  it("protects a member serving a window and lifts protection from an idle one before it changes capacity", async () => {
    // Prepare: two members, one busy and unprotected, one idle and protected; backlog for one.
    const h = harness({
      desired: 2,
      backlog: 100,
      members: [
        { id: "i-busy", ip: "10.0.1.1", status: { active: 1, idleSeconds: 0 } },
        { id: "i-idle", ip: "10.0.1.2", status: { active: 0, idleSeconds: 60 }, protected: true },
      ],
      tags: { [SCALED_OUT_AT_TAG]: new Date(NOW - 3_600_000).toISOString() },
    });
    // Act
    await h.tick();
    // Assess: protection calls come before the scale-in.
    expect(protectionSet(h)).to.deep.equal([
      { AutoScalingGroupName: GROUP, InstanceIds: ["i-busy"], ProtectedFromScaleIn: true },
      { AutoScalingGroupName: GROUP, InstanceIds: ["i-idle"], ProtectedFromScaleIn: false },
    ]);
    expect(desiredSet(h)).to.deep.equal([{ AutoScalingGroupName: GROUP, DesiredCapacity: 1, HonorCooldown: false }]);
    const order = h.asMock.calls().map((c) => c.args[0].constructor.name);
    expect(order.lastIndexOf("SetInstanceProtectionCommand")).to.be.below(order.indexOf("SetDesiredCapacityCommand"));
    expect(h.asMock.commandCalls(CreateOrUpdateTagsCommand)).to.have.length(0);
    expect(h.fetched.sort()).to.deep.equal(["http://10.0.1.1:8080/status", "http://10.0.1.2:8080/status"]);
  });

  it("holds back a scale-in within the cool-down of the last scale-out (read from the group's tag)", async () => {
    const h = harness({
      desired: 4,
      backlog: 100,
      members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 0, idleSeconds: 5 } }],
      tags: { [SCALED_OUT_AT_TAG]: new Date(NOW - 60_000).toISOString() },
    });
    await h.tick();
    expect(desiredSet(h)).to.deep.equal([]);
    expect(h.logger.withStep("gpu_fleet_scale_check")[0]?.fields).to.include({ decision: "cooldown", target: 4 });
  });

  it("takes the group to zero after the idle time, and counts it", async () => {
    const h = harness({ desired: 1, members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 0, idleSeconds: 1800 } }] });
    await h.tick();
    expect(desiredSet(h)).to.deep.equal([{ AutoScalingGroupName: GROUP, DesiredCapacity: 0, HonorCooldown: false }]);
    expect(h.metrics.count("GpuFleetScaledIn")).to.equal(1);
  });

  it("does not go to zero when a window arrived between the check and the change", async () => {
    const h = harness({ desired: 1, backlog: 0, backlogBeforeZero: 1, members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 0, idleSeconds: 1800 } }] });
    await h.tick();
    expect(desiredSet(h)).to.deep.equal([]);
    expect(h.logger.steps()).to.include("gpu_fleet_scale_skipped");
  });

  it("keeps one instance while the group carries the hold tag", async () => {
    const h = harness({
      desired: 1,
      members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 0, idleSeconds: 99_999 } }],
      tags: { "encache:gpu-hold": "true" },
    });
    await h.tick();
    expect(desiredSet(h)).to.deep.equal([]);
    expect(h.logger.withStep("gpu_fleet_scale_check")[0]?.fields).to.include({ decision: "held" });
  });

  it("asks only in-service members for their status (a warm-pool or terminating instance serves nothing)", async () => {
    const h = harness({
      desired: 1,
      backlog: 10,
      members: [
        { id: "i-in", ip: "10.0.1.1" },
        { id: "i-warm", ip: "10.0.1.2", lifecycle: "Warmed:Stopped" },
        { id: "i-going", ip: "10.0.1.3", lifecycle: "Terminating:Wait" },
      ],
    });
    await h.tick();
    expect(h.fetched).to.deep.equal(["http://10.0.1.1:8080/status"]);
    expect(h.ec2Mock.commandCalls(DescribeInstancesCommand)[0]?.args[0].input).to.deep.equal({ InstanceIds: ["i-in"] });
  });

  describe("a failing call fails the tick, so SQS brings it back", () => {
    const cases: Array<[string, (h: ReturnType<typeof harness>) => void]> = [
      ["DescribeAutoScalingGroups", (h) => h.asMock.on(DescribeAutoScalingGroupsCommand).rejects(new Error("throttled"))],
      ["GetQueueAttributes", (h) => h.sqsMock.on(GetQueueAttributesCommand).rejects(new Error("throttled"))],
      ["SetDesiredCapacity", (h) => h.asMock.on(SetDesiredCapacityCommand).rejects(new Error("throttled"))],
      ["CreateOrUpdateTags (the scale-out stamp)", (h) => h.asMock.on(CreateOrUpdateTagsCommand).rejects(new Error("throttled"))],
    ];
    for (const [call, breakIt] of cases) {
      it(call, async () => {
        const h = harness({ desired: 0, backlog: 600 });
        breakIt(h);
        const out = await h.tick();
        expect(out.batchItemFailures).to.have.length(1);
      });
    }

    it("a group that does not exist (a wrong name is a deploy defect)", async () => {
      const h = harness({ desired: 0 });
      h.asMock.on(DescribeAutoScalingGroupsCommand).resolves({ AutoScalingGroups: [] });
      const out = await h.tick();
      expect(out.batchItemFailures).to.have.length(1);
    });

    it("SetInstanceProtection", async () => {
      const h = harness({ desired: 1, backlog: 10, members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 1, idleSeconds: 0 } }] });
      h.asMock.on(SetInstanceProtectionCommand).rejects(new Error("throttled"));
      const out = await h.tick();
      expect(out.batchItemFailures).to.have.length(1);
    });
  });

  it("a member whose service does not answer is judged by its running time and left unprotected", async () => {
    const h = harness({ desired: 1, members: [{ id: "i-1", ip: "10.0.1.1", status: "down", protected: true }] });
    await h.tick();
    expect(protectionSet(h)).to.deep.equal([{ AutoScalingGroupName: GROUP, InstanceIds: ["i-1"], ProtectedFromScaleIn: false }]);
    expect(desiredSet(h)).to.deep.equal([{ AutoScalingGroupName: GROUP, DesiredCapacity: 0, HonorCooldown: false }]);
    expect(h.logger.steps()).to.include("gpu_status_unavailable");
  });

  it("calls exactly the actions its grants name", async () => {
    // Prepare: a tick that reads everything and changes protection, tags and capacity.
    const h = harness({ desired: 1, backlog: 3000, members: [{ id: "i-1", ip: "10.0.1.1", status: { active: 1, idleSeconds: 0 } }] });
    // Act
    await h.tick();
    // Assess
    const called = new Set([
      ...h.asMock.calls().map((c) => `autoscaling:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...h.ec2Mock.calls().map((c) => `ec2:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...h.sqsMock.calls().map((c) => `sqs:${c.args[0].constructor.name.replace(/Command$/, "")}`),
    ]);
    expect([...called].sort()).to.deep.equal([...SCALER_IAM_ACTIONS].sort());
  });
});
