import {
  AutoScalingClient,
  CreateOrUpdateTagsCommand,
  type CreateOrUpdateTagsCommandInput,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
  SetInstanceProtectionCommand,
  UpdateAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type DescribeInstancesCommandInput, EC2Client } from "@aws-sdk/client-ec2";
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
  spotPercent: 75,
  spotBreakerInterruptions: 2,
  spotBreakerWindowMinutes: 15,
  spotBreakerCooldownMinutes: 30,
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
  /** The mixed instances policy's on-demand share above the base; `none`: no mixed instances policy. Default 25 (prod's mix). */
  onDemandPercent?: number | "none";
  /** Instances not in the group's description that EC2 still describes, with the group their Auto Scaling tag names. */
  elsewhere?: Record<string, string>;
  /** The scaler's configuration, over CONFIG. */
  config?: Partial<ScalerConfig>;
}

function harness(w: World) {
  const autoscaling = new AutoScalingClient(clientOptions);
  const ec2 = new EC2Client(clientOptions);
  const sqs = new SQSClient(clientOptions);
  const [asMock, ec2Mock, sqsMock] = [mockClient(autoscaling), mockClient(ec2), mockClient(sqs)];
  const members = w.members ?? [];
  // The group's tags and distribution as the scaler's own calls leave them (a second delivery sees the first's record).
  const tags = { ...(w.tags ?? {}) };
  let onDemand = w.onDemandPercent ?? 25;
  asMock.on(DescribeAutoScalingGroupsCommand, { AutoScalingGroupNames: [GROUP] }).callsFake(() => ({
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
        Tags: Object.entries(tags).map(([Key, Value]) => ({
          Key,
          Value,
          ResourceId: GROUP,
          ResourceType: "auto-scaling-group",
          PropagateAtLaunch: false,
        })),
        ...(onDemand === "none"
          ? {}
          : {
              MixedInstancesPolicy: {
                InstancesDistribution: { OnDemandBaseCapacity: 1, OnDemandPercentageAboveBaseCapacity: onDemand, OnDemandAllocationStrategy: "prioritized" },
                LaunchTemplate: { LaunchTemplateSpecification: { LaunchTemplateId: "lt-0123456789abcdef0", Version: "3" } },
              },
            }),
      },
    ],
  }));
  asMock.on(SetInstanceProtectionCommand).resolves({});
  asMock.on(SetDesiredCapacityCommand).resolves({});
  asMock.on(CreateOrUpdateTagsCommand).callsFake((input: CreateOrUpdateTagsCommandInput) => {
    for (const t of input.Tags ?? []) tags[t.Key ?? ""] = t.Value ?? "";
    return {};
  });
  asMock.on(DeleteTagsCommand).resolves({});
  asMock
    .on(UpdateAutoScalingGroupCommand)
    .callsFake((input: { MixedInstancesPolicy?: { InstancesDistribution?: { OnDemandPercentageAboveBaseCapacity?: number } } }) => {
      onDemand = input.MixedInstancesPolicy?.InstancesDistribution?.OnDemandPercentageAboveBaseCapacity ?? onDemand;
      return {};
    });
  const elsewhere = w.elsewhere ?? {};
  ec2Mock.on(DescribeInstancesCommand).callsFake((input: DescribeInstancesCommandInput) => {
    const ids = input.InstanceIds ?? [];
    const unknown = ids.find((id) => !members.some((m) => m.id === id) && elsewhere[id] === undefined);
    if (unknown) throw Object.assign(new Error(`The instance ID '${unknown}' does not exist`), { name: "InvalidInstanceID.NotFound" });
    return {
      Reservations: [
        {
          Instances: ids.map((id) => {
            const m = members.find((x) => x.id === id);
            return {
              InstanceId: id,
              PrivateIpAddress: m?.ip ?? "10.0.9.9",
              LaunchTime: new Date(NOW - 7_200_000),
              Tags: [{ Key: "aws:autoscaling:groupName", Value: m ? GROUP : elsewhere[id] }],
            };
          }),
        },
      ],
    };
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
  const handler = createScalerHandler({ autoscaling, ec2, sqs, fetch, config: { ...CONFIG, ...w.config }, logger, metrics, now: () => NOW });
  const tick = () => handler(sqsEvent(sqsRecord({ check: "gpu-scaler", scheduledAt: new Date(NOW).toISOString() })));
  /** Messages on the scaler's queue, in one batch. */
  const deliver = (...bodies: Array<string | Record<string, unknown>>) => handler(sqsEvent(...bodies.map((b) => sqsRecord(b))));
  return { tick, deliver, asMock, ec2Mock, sqsMock, logger, metrics, fetched, tags, onDemand: () => onDemand };
}

/** EC2's event as EventBridge delivers it to the queue (the EC2 user guide's samples). */
function ec2Event(kind: "interruption" | "rebalance", instanceId: string, time: string): Record<string, unknown> {
  return {
    version: "0",
    id: `evt-${instanceId}-${time}`,
    "detail-type": kind === "interruption" ? "EC2 Spot Instance Interruption Warning" : "EC2 Instance Rebalance Recommendation",
    source: "aws.ec2",
    account: "123456789012",
    time,
    region: "us-east-1",
    resources: [`arn:aws:ec2:us-east-1:123456789012:instance/${instanceId}`],
    detail: kind === "interruption" ? { "instance-id": instanceId, "instance-action": "terminate" } : { "instance-id": instanceId },
  };
}

const minutesAgo = (m: number) => new Date(NOW - m * 60_000).toISOString().replace(/\.000Z$/, "Z");
const tagWrites = (h: ReturnType<typeof harness>) => h.asMock.commandCalls(CreateOrUpdateTagsCommand).flatMap((c) => c.args[0].input.Tags ?? []);
const distributionSet = (h: ReturnType<typeof harness>) =>
  h.asMock
    .commandCalls(UpdateAutoScalingGroupCommand)
    .map((c) => c.args[0].input.MixedInstancesPolicy?.InstancesDistribution?.OnDemandPercentageAboveBaseCapacity);
const SPOT_1 = "i-0a1b2c3d4e5f60001";
const SPOT_2 = "i-0a1b2c3d4e5f60002";
const ON_DEMAND = "i-0a1b2c3d4e5f60003";
const IN_SERVICE: Member[] = [
  { id: SPOT_1, ip: "10.0.1.1" },
  { id: SPOT_2, ip: "10.0.1.2" },
  { id: ON_DEMAND, ip: "10.0.1.3" },
];
const record = (id: string) => `encache:spot-interruption:${id}`;

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
    // Prepare: a message that reads everything and changes protection, tags, the distribution and capacity:
    // a member's interruption opening the breaker, a record old enough to prune, a busy member, a backlog.
    const h = harness({
      desired: 1,
      backlog: 3000,
      members: [{ id: SPOT_1, ip: "10.0.1.1", status: { active: 1, idleSeconds: 0 } }],
      elsewhere: { [SPOT_2]: GROUP },
      tags: { [record(ON_DEMAND)]: minutesAgo(5), [record("i-0a1b2c3d4e5f60009")]: minutesAgo(90) },
    });
    // Act
    await h.deliver(ec2Event("interruption", SPOT_2, minutesAgo(1)));
    // Assess
    const called = new Set([
      ...h.asMock.calls().map((c) => `autoscaling:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...h.ec2Mock.calls().map((c) => `ec2:${c.args[0].constructor.name.replace(/Command$/, "")}`),
      ...h.sqsMock.calls().map((c) => `sqs:${c.args[0].constructor.name.replace(/Command$/, "")}`),
    ]);
    expect([...called].sort()).to.deep.equal([...SCALER_IAM_ACTIONS].sort());
  });

  describe("the Spot breaker", () => {
    for (const kind of ["interruption", "rebalance"] as const) {
      it(`records a member's ${kind === "interruption" ? "interruption warning" : "rebalance recommendation"} as its own tag, valued the event's time`, async () => {
        // Prepare
        const h = harness({ desired: 3, backlog: 1500, members: IN_SERVICE });
        // Act
        const out = await h.deliver(ec2Event(kind, SPOT_1, minutesAgo(1)));
        // Assess
        expect(out.batchItemFailures).to.deep.equal([]);
        expect(tagWrites(h)).to.deep.equal([
          { ResourceId: GROUP, ResourceType: "auto-scaling-group", Key: record(SPOT_1), Value: minutesAgo(1), PropagateAtLaunch: false },
        ]);
        expect(h.logger.withStep("spot_interruption_recorded")[0]?.fields).to.include({ group: GROUP, instance_id: SPOT_1, kind, time: minutesAgo(1) });
        expect(h.metrics.count("SpotInterruptions")).to.equal(1);
        // One interruption does not open it (two do): the configured mix stays.
        expect(distributionSet(h)).to.deep.equal([]);
        expect(h.logger.withStep("gpu_fleet_scale_check")[0]?.fields).to.include({ spot_breaker: "closed", spot_interruptions_in_window: 1 });
      });
    }

    it("a duplicate delivery records the interruption once", async () => {
      // Prepare
      const h = harness({ desired: 3, backlog: 1500, members: IN_SERVICE });
      const event = ec2Event("interruption", SPOT_1, minutesAgo(1));
      // Act: delivered again after the first was handled
      await h.deliver(event);
      const again = await h.deliver(event);
      // Assess
      expect(again.batchItemFailures).to.deep.equal([]);
      expect(tagWrites(h).map((t) => t.Key)).to.deep.equal([record(SPOT_1)]);
      expect(h.logger.withStep("spot_interruption_duplicate")).to.have.length(1);
      expect(h.metrics.count("SpotInterruptions")).to.equal(1);
    });

    it("two deliveries at once write the same key and value: still one record", async () => {
      // Prepare
      const h = harness({ desired: 3, backlog: 1500, members: IN_SERVICE });
      const event = ec2Event("interruption", SPOT_1, minutesAgo(1));
      // Act: both records of one batch, handled in parallel, each before the other's write
      const out = await h.deliver(event, event);
      // Assess
      expect(out.batchItemFailures).to.deep.equal([]);
      expect(new Set(tagWrites(h).map((t) => `${t.Key}=${t.Value}`))).to.deep.equal(new Set([`${record(SPOT_1)}=${minutesAgo(1)}`]));
      expect(Object.keys(h.tags).filter((k) => k.startsWith("encache:spot-interruption:"))).to.deep.equal([record(SPOT_1)]);
    });

    describe("keeps only its group's instances", () => {
      const cases: Array<[string, World["elsewhere"], boolean]> = [
        ["another group's instance: ignored", { "i-0ffffffffffff0001": "another-group" }, false],
        ["an instance EC2 no longer knows: ignored", {}, false],
        ["a member that already left the group (its Auto Scaling tag names this group): recorded", { "i-0ffffffffffff0001": GROUP }, true],
      ];
      for (const [label, elsewhere, recorded] of cases) {
        it(label, async () => {
          // Prepare
          const h = harness({ desired: 3, backlog: 1500, members: IN_SERVICE, elsewhere });
          // Act
          const out = await h.deliver(ec2Event("interruption", "i-0ffffffffffff0001", minutesAgo(1)));
          // Assess
          expect(out.batchItemFailures).to.deep.equal([]);
          expect(tagWrites(h).map((t) => t.Key)).to.deep.equal(recorded ? [record("i-0ffffffffffff0001")] : []);
          expect(h.metrics.count("SpotInterruptionsIgnored")).to.equal(recorded ? 0 : 1);
          if (!recorded) expect(h.logger.withStep("spot_interruption_ignored")[0]?.fields).to.include({ reason: "not_a_member" });
        });
      }
    });

    it("opens at the N-th interruption within the window: the group goes on demand before it scales out", async () => {
      // Prepare: one interruption recorded 5 minutes ago, a backlog for one more instance
      const h = harness({ desired: 3, backlog: 2000, members: IN_SERVICE, tags: { [record(SPOT_2)]: minutesAgo(5) } });
      // Act
      const out = await h.deliver(ec2Event("rebalance", SPOT_1, minutesAgo(1)));
      // Assess
      expect(out.batchItemFailures).to.deep.equal([]);
      expect(h.asMock.commandCalls(UpdateAutoScalingGroupCommand).map((c) => c.args[0].input)).to.deep.equal([
        // The live distribution whole, the share changed: no other part of it can be reset by the update.
        {
          AutoScalingGroupName: GROUP,
          MixedInstancesPolicy: {
            InstancesDistribution: { OnDemandBaseCapacity: 1, OnDemandPercentageAboveBaseCapacity: 100, OnDemandAllocationStrategy: "prioritized" },
          },
        },
      ]);
      expect(h.logger.withStep("spot_breaker_opened")[0]?.fields).to.include({
        group: GROUP,
        interruptions: 2,
        previous_on_demand_percent: 25,
        on_demand_percent: 100,
        until: new Date(NOW - 60_000 + 30 * 60_000).toISOString(),
      });
      expect(h.metrics.count("SpotBreakerTrips")).to.equal(1);
      const order = h.asMock.calls().map((c) => c.args[0].constructor.name);
      expect(order.indexOf("UpdateAutoScalingGroupCommand")).to.be.below(order.indexOf("SetDesiredCapacityCommand"));
    });

    describe("each tick sets the share the breaker wants, and only when the group's differs", () => {
      const cases: Array<[string, World, number[], string | undefined]> = [
        [
          "open, the group already on demand: nothing to set",
          { desired: 1, onDemandPercent: 100, tags: { [record(SPOT_1)]: minutesAgo(9), [record(SPOT_2)]: minutesAgo(2) } },
          [],
          undefined,
        ],
        [
          "the cool-down over (the second interruption 30 minutes ago): back to the configured mix",
          { desired: 1, onDemandPercent: 100, tags: { [record(SPOT_1)]: minutesAgo(40), [record(SPOT_2)]: minutesAgo(30) } },
          [25],
          "spot_breaker_closed",
        ],
        ["closed, the mix drifted from the configured one: set back", { desired: 1, onDemandPercent: 50 }, [25], "gpu_fleet_distribution_set"],
        ["closed, the configured mix: nothing to set", { desired: 1 }, [], undefined],
        ["no Spot configured: the scaler leaves the distribution alone", { desired: 1, onDemandPercent: 100, config: { spotPercent: 0 } }, [], undefined],
        ["a group without a mixed instances policy: nothing it could set", { desired: 1, onDemandPercent: "none" }, [], "gpu_fleet_no_mixed_instances_policy"],
      ];
      for (const [label, world, set, step] of cases) {
        it(label, async () => {
          // Prepare
          const h = harness(world);
          // Act
          const out = await h.tick();
          // Assess
          expect(out.batchItemFailures).to.deep.equal([]);
          expect(distributionSet(h)).to.deep.equal(set);
          if (step) expect(h.logger.steps()).to.include(step);
          expect(h.metrics.count("SpotBreakerTrips")).to.equal(0);
        });
      }
    });

    it("restores the mix once the cool-down is over, with the records still on the group until they age out", async () => {
      // Prepare
      const h = harness({ desired: 1, onDemandPercent: 100, tags: { [record(SPOT_1)]: minutesAgo(40), [record(SPOT_2)]: minutesAgo(31) } });
      // Act
      await h.tick();
      // Assess
      expect(h.onDemand()).to.equal(25);
      expect(h.logger.withStep("spot_breaker_closed")[0]?.fields).to.include({ previous_on_demand_percent: 100, on_demand_percent: 25 });
      expect(h.asMock.commandCalls(DeleteTagsCommand)).to.have.length(0);
    });

    it("prunes records older than window + cool-down, in one DeleteTags of those keys", async () => {
      // Prepare
      const h = harness({ desired: 1, tags: { [record(SPOT_1)]: minutesAgo(46), [record(SPOT_2)]: minutesAgo(50), [record(ON_DEMAND)]: minutesAgo(44) } });
      // Act
      await h.tick();
      // Assess
      expect(h.asMock.commandCalls(DeleteTagsCommand).map((c) => c.args[0].input.Tags?.map((t) => t.Key))).to.deep.equal([[record(SPOT_1), record(SPOT_2)]]);
    });

    it("does not write an interruption too old to matter (a late delivery)", async () => {
      const h = harness({ desired: 3, backlog: 1500, members: IN_SERVICE });
      await h.deliver(ec2Event("interruption", SPOT_1, minutesAgo(50)));
      expect(tagWrites(h)).to.deep.equal([]);
      expect(h.logger.steps()).to.include("spot_interruption_stale");
    });

    it("ignores an interruption when the fleet runs no Spot", async () => {
      const h = harness({ desired: 3, members: IN_SERVICE, config: { spotPercent: 0 } });
      await h.deliver(ec2Event("interruption", SPOT_1, minutesAgo(1)));
      expect(tagWrites(h)).to.deep.equal([]);
      expect(h.logger.withStep("spot_interruption_ignored")[0]?.fields).to.include({ reason: "no_spot" });
    });

    it("logs an EC2 event that is not as documented, records nothing, and still ticks", async () => {
      const h = harness({ desired: 0, backlog: 600, members: [] });
      const out = await h.deliver({ source: "aws.ec2", "detail-type": "EC2 Spot Instance Interruption Warning", time: minutesAgo(1), detail: {} });
      expect(out.batchItemFailures).to.deep.equal([]);
      expect(h.logger.withStep("spot_event_malformed")[0]?.fields.reason).to.match(/instance-id/);
      expect(tagWrites(h).map((t) => t.Key)).to.deep.equal(["encache:scaled-out-at"]);
    });

    describe("a failing call fails the message, so SQS brings the interruption back", () => {
      const cases: Array<[string, (h: ReturnType<typeof harness>) => void]> = [
        ["CreateOrUpdateTags (the record)", (h) => h.asMock.on(CreateOrUpdateTagsCommand).rejects(new Error("throttled"))],
        ["UpdateAutoScalingGroup (on demand)", (h) => h.asMock.on(UpdateAutoScalingGroupCommand).rejects(new Error("throttled"))],
        ["DeleteTags (the prune)", (h) => h.asMock.on(DeleteTagsCommand).rejects(new Error("throttled"))],
        [
          "DescribeInstances (whose instance it is)",
          (h) => h.ec2Mock.on(DescribeInstancesCommand).rejects(Object.assign(new Error("Rate exceeded"), { name: "RequestLimitExceeded" })),
        ],
      ];
      for (const [call, breakIt] of cases) {
        it(call, async () => {
          // Prepare: the second interruption of a member that already left, and a record to prune
          const h = harness({
            desired: 1,
            elsewhere: { [SPOT_1]: GROUP },
            tags: { [record(SPOT_2)]: minutesAgo(5), [record("i-0a1b2c3d4e5f60009")]: minutesAgo(90) },
          });
          breakIt(h);
          // Act
          const out = await h.deliver(ec2Event("interruption", SPOT_1, minutesAgo(1)));
          // Assess
          expect(out.batchItemFailures).to.have.length(1);
        });
      }

      it("and the retry, after the record was written, opens the breaker without a second record", async () => {
        // Prepare: the distribution change fails once
        const h = harness({ desired: 1, members: IN_SERVICE, tags: { [record(SPOT_2)]: minutesAgo(5) } });
        h.asMock.on(UpdateAutoScalingGroupCommand).rejectsOnce(new Error("throttled")).resolves({});
        const event = ec2Event("interruption", SPOT_1, minutesAgo(1));
        // Act
        const first = await h.deliver(event);
        const retry = await h.deliver(event);
        // Assess
        expect([first.batchItemFailures.length, retry.batchItemFailures.length]).to.deep.equal([1, 0]);
        expect(tagWrites(h).map((t) => t.Key)).to.deep.equal([record(SPOT_1)]);
        expect(distributionSet(h)).to.deep.equal([100, 100]);
        expect(h.metrics.count("SpotBreakerTrips")).to.equal(1);
      });
    });
  });
});
