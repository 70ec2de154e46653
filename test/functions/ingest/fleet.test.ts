import { AutoScalingClient, AutoScalingServiceException, DescribeAutoScalingGroupsCommand, SetDesiredCapacityCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, StartInstancesCommand } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityBatchCommand } from "@aws-sdk/client-sqs";
import { GetParameterCommand } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { createDlqHandler } from "../../../functions/ingest/dlq-handler";
import { describeFleet, ensureFleetCapacity, FleetGroupNotFoundError, type FleetTarget } from "../../../functions/ingest/fleet";
import { FLEET_DLQ_IAM_ACTIONS, FLEET_WINDOW_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { fleetTargetOf } from "../../../functions/ingest/runtime-deps";
import { createWindowHandler } from "../../../functions/ingest/window-handler";
import { type FakeInstance, fakeDescribeInstances, mockedIngestDeps } from "../helpers/ingest-deps";
import { sqsEvent, sqsRecord, validPayload } from "../helpers/sqs-events";
import { RecordingLogger } from "../helpers/telemetry";

const GROUP = "encache-gpu-fleet-prod";
const LB = "internal-encache-gpu-prod-123.elb.us-east-1.amazonaws.com";
const clientOptions = { region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } };

function fleetWorld(group: { desired: number; max?: number; inService?: string[]; pending?: string[] } | "missing") {
  const autoscaling = new AutoScalingClient(clientOptions);
  const asMock = mockClient(autoscaling);
  asMock.on(DescribeAutoScalingGroupsCommand).resolves({
    AutoScalingGroups:
      group === "missing"
        ? []
        : [
            {
              AutoScalingGroupName: GROUP,
              DesiredCapacity: group.desired,
              MinSize: 0,
              MaxSize: group.max ?? 4,
              DefaultCooldown: 300,
              AvailabilityZones: ["us-east-1a"],
              HealthCheckType: "ELB",
              CreatedTime: new Date(0),
              Instances: [
                ...(group.inService ?? []).map((id) => ({
                  InstanceId: id,
                  LifecycleState: "InService" as const,
                  ProtectedFromScaleIn: true,
                  AvailabilityZone: "us-east-1a",
                  HealthStatus: "Healthy",
                })),
                ...(group.pending ?? []).map((id) => ({
                  InstanceId: id,
                  LifecycleState: "Pending" as const,
                  ProtectedFromScaleIn: false,
                  AvailabilityZone: "us-east-1a",
                  HealthStatus: "Healthy",
                })),
              ],
              Tags: [{ Key: "encache:gpu-hold", Value: "true", ResourceId: GROUP, ResourceType: "auto-scaling-group", PropagateAtLaunch: false }],
            },
          ],
  });
  asMock.on(SetDesiredCapacityCommand).resolves({});
  const target: FleetTarget = { autoscaling, groupName: GROUP, serviceHost: LB };
  return { asMock, target };
}

const asError = (name: string) => new AutoScalingServiceException({ name, message: name, $fault: "client", $metadata: { httpStatusCode: 400 } });

describe("ingest/fleet (fleet mode)", () => {
  describe("describeFleet", () => {
    it("reads desired, bounds, instances by lifecycle state and tags", async () => {
      const w = fleetWorld({ desired: 2, inService: ["i-1"], pending: ["i-2"] });
      const group = await describeFleet(w.target.autoscaling, GROUP);
      expect(group).to.deep.include({ name: GROUP, desired: 2, min: 0, max: 4, tags: { "encache:gpu-hold": "true" } });
      expect(group.inService.map((i) => i.instanceId)).to.deep.equal(["i-1"]);
      expect(group.instances.map((i) => `${i.instanceId}:${i.lifecycleState}:${i.protectedFromScaleIn}`)).to.deep.equal([
        "i-1:InService:true",
        "i-2:Pending:false",
      ]);
    });

    describe("reads the mixed instances policy's on-demand share above the base", () => {
      const cases: Array<[string, Record<string, unknown>, number | undefined]> = [
        ["as the policy gives it", { MixedInstancesPolicy: { InstancesDistribution: { OnDemandPercentageAboveBaseCapacity: 25 } } }, 25],
        ["Auto Scaling's default, 100, when the policy leaves it out", { MixedInstancesPolicy: { InstancesDistribution: {} } }, 100],
        ["none without a mixed instances policy", {}, undefined],
      ];
      for (const [label, policy, want] of cases) {
        it(label, async () => {
          // Prepare
          const w = fleetWorld({ desired: 0 });
          const [group] = ((await w.target.autoscaling.send(new DescribeAutoScalingGroupsCommand({}))).AutoScalingGroups ?? []).map((g) => ({
            ...g,
            ...policy,
          }));
          mockClient(w.target.autoscaling)
            .on(DescribeAutoScalingGroupsCommand)
            .resolves({ AutoScalingGroups: [group!] });
          // Act
          const described = await describeFleet(w.target.autoscaling, GROUP);
          // Assess
          expect(described.onDemandPercentAboveBase).to.equal(want);
        });
      }
    });

    it("throws FleetGroupNotFoundError for a group Auto Scaling does not know", async () => {
      const w = fleetWorld("missing");
      const thrown = await describeFleet(w.target.autoscaling, GROUP).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(thrown).to.be.instanceOf(FleetGroupNotFoundError);
    });
  });

  describe("ensureFleetCapacity: 'start the GPU' as 'want at least one'", () => {
    const cases: Array<[string, Parameters<typeof fleetWorld>[0], ((w: ReturnType<typeof fleetWorld>) => void) | undefined, string, number]> = [
      ["desired 0: raised to 1", { desired: 0 }, undefined, "attempted", 1],
      ["desired 1, nothing in service yet: left alone", { desired: 1, pending: ["i-1"] }, undefined, "skipped", 0],
      ["desired 3 (the scaler's): never lowered to 1", { desired: 3, inService: ["i-1"] }, undefined, "skipped", 0],
      ["max 0: nothing may run", { desired: 0, max: 0 }, undefined, "insufficient_capacity", 0],
      [
        "a scaling activity in progress: retried soon",
        { desired: 0 },
        (w) => w.asMock.on(SetDesiredCapacityCommand).rejects(asError("ScalingActivityInProgressFault")),
        "stopping",
        1,
      ],
      ["SetDesiredCapacity refused otherwise", { desired: 0 }, (w) => w.asMock.on(SetDesiredCapacityCommand).rejects(asError("AccessDenied")), "failed", 1],
      ["DescribeAutoScalingGroups fails", { desired: 0 }, (w) => w.asMock.on(DescribeAutoScalingGroupsCommand).rejects(asError("Throttling")), "failed", 0],
      ["the group does not exist", "missing", undefined, "failed", 0],
    ];
    for (const [what, group, breakIt, outcome, sets] of cases) {
      it(`${what}: ${outcome}`, async () => {
        // Prepare
        const w = fleetWorld(group);
        breakIt?.(w);
        const logger = new RecordingLogger();
        // Act
        const got = await ensureFleetCapacity(w.target, logger);
        // Assess
        expect(got).to.equal(outcome);
        const calls = w.asMock.commandCalls(SetDesiredCapacityCommand).map((c) => c.args[0].input);
        expect(calls).to.deep.equal(Array.from({ length: sets }, () => ({ AutoScalingGroupName: GROUP, DesiredCapacity: 1, HonorCooldown: false })));
      });
    }
  });

  describe("the consumers in fleet mode", () => {
    it("the DLQ consumer with nothing in service raises capacity to 1 (no EC2 start, no SSM read) and parks the message briefly", async () => {
      // Prepare
      const t = mockedIngestDeps();
      const w = fleetWorld({ desired: 0 });
      t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [{ Id: "0" }], Failed: [] });
      const record = sqsRecord(validPayload());
      // Act
      const out = await createDlqHandler({ ...t.deps, fleet: w.target })(sqsEvent(record));
      // Assess
      expect(out.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(w.asMock.commandCalls(SetDesiredCapacityCommand)).to.have.length(1);
      expect(t.ec2Mock.commandCalls(StartInstancesCommand)).to.have.length(0);
      expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(0);
      expect(t.ssmMock.commandCalls(GetParameterCommand)).to.have.length(0);
      expect(t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand)[0]?.args[0].input.Entries?.[0]?.VisibilityTimeout).to.equal(
        t.deps.config.bootParkSeconds,
      );
      expect(t.logger.steps()).to.include("gpu_fleet_capacity_raised");
    });

    it("the DLQ consumer with an instance in service posts the window to the load balancer", async () => {
      const t = mockedIngestDeps();
      const w = fleetWorld({ desired: 1, inService: ["i-1"] });
      const record = sqsRecord(validPayload());
      const out = await createDlqHandler({ ...t.deps, fleet: w.target })(sqsEvent(record));
      expect(out.batchItemFailures).to.deep.equal([]);
      expect(t.fetchCalls.map((c) => c.url)).to.deep.equal([`http://127.0.0.1:8080/gpu-at/${LB}`]);
      expect(w.asMock.commandCalls(SetDesiredCapacityCommand)).to.have.length(0);
    });

    describe("the DLQ consumer's boot park: the load balancer refuses a window while the fleet boots", () => {
      // The records factory sends at 1_700_000_000_000; a minute later the message is young.
      const NOW = 1_700_000_060_000;
      const running = (id: string, agoMs: number): FakeInstance => ({ id, state: "running", ip: "10.0.0.1", launchTime: new Date(NOW - agoMs) });
      const cases: Array<{ title: string; inService: string[]; instances: FakeInstance[] | "fails"; parked: boolean }> = [
        { title: "the only instance launched 2 minutes ago: parked for the boot park", inService: ["i-1"], instances: [running("i-1", 120_000)], parked: true },
        { title: "the only instance launched an hour ago: not parked", inService: ["i-1"], instances: [running("i-1", 3_600_000)], parked: false },
        {
          title: "one instance young, one serving for an hour: not parked (the fleet is not booting)",
          inService: ["i-1", "i-2"],
          instances: [running("i-1", 120_000), running("i-2", 3_600_000)],
          parked: false,
        },
        { title: "the launch times cannot be read: not parked, logged", inService: ["i-1"], instances: "fails", parked: false },
      ];
      for (const c of cases) {
        it(c.title, async () => {
          // Arrange
          const t = mockedIngestDeps({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
          const w = fleetWorld({ desired: 1, inService: c.inService });
          if (c.instances === "fails") t.ec2Mock.on(DescribeInstancesCommand).rejects(new Error("throttled"));
          else fakeDescribeInstances(t.ec2Mock, c.instances);
          t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [{ Id: "0" }], Failed: [] });
          const record = sqsRecord(validPayload());
          // Act
          const out = await createDlqHandler({ ...t.deps, fleet: w.target, now: () => NOW })(sqsEvent(record));
          // Assess
          expect(out.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
          const parked = t.sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand).flatMap((x) => x.args[0].input.Entries ?? []);
          expect(parked.map((e) => e.VisibilityTimeout)).to.deep.equal(c.parked ? [t.deps.config.bootParkSeconds] : []);
          if (c.parked) expect(t.logger.withStep("dlq_visibility_extended")[0]?.fields.reason).to.equal("gpu_booting");
          if (c.instances === "fails") expect(t.logger.steps()).to.include("gpu_fleet_launch_times_failed");
          expect(w.asMock.commandCalls(SetDesiredCapacityCommand)).to.have.length(0);
        });
      }

      it("reads the launch times once for a batch", async () => {
        const t = mockedIngestDeps({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
        const w = fleetWorld({ desired: 1, inService: ["i-1"] });
        fakeDescribeInstances(t.ec2Mock, [running("i-1", 120_000)]);
        t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
        await createDlqHandler({ ...t.deps, fleet: w.target, now: () => NOW })(sqsEvent(sqsRecord(validPayload()), sqsRecord(validPayload())));
        expect(t.ec2Mock.commandCalls(DescribeInstancesCommand)).to.have.length(1);
      });
    });

    it("the window consumer posts to the load balancer while anything is in service", async () => {
      const t = mockedIngestDeps();
      const w = fleetWorld({ desired: 2, inService: ["i-1", "i-2"] });
      const out = await createWindowHandler({ ...t.deps, fleet: w.target })(sqsEvent(sqsRecord(validPayload()), sqsRecord(validPayload({ windowIndex: 1 }))));
      expect(out.batchItemFailures).to.deep.equal([]);
      expect(t.fetchCalls.map((c) => c.url)).to.deep.equal([`http://127.0.0.1:8080/gpu-at/${LB}`, `http://127.0.0.1:8080/gpu-at/${LB}`]);
      expect(w.asMock.commandCalls(DescribeAutoScalingGroupsCommand)).to.have.length(1);
    });

    it("the window consumer with nothing in service fails the window and brings it back soon", async () => {
      const t = mockedIngestDeps();
      t.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [{ Id: "0" }], Failed: [] });
      const w = fleetWorld({ desired: 1, pending: ["i-1"] });
      const record = sqsRecord(validPayload());
      const out = await createWindowHandler({ ...t.deps, fleet: w.target })(sqsEvent(record));
      expect(out.batchItemFailures).to.deep.equal([{ itemIdentifier: record.messageId }]);
      expect(t.fetchCalls).to.deep.equal([]);
      expect(t.logger.withStep("window_retry_soon")[0]?.fields).to.include({ reason: "gpu_unavailable" });
    });
  });

  describe("fleetTargetOf: both fleet variables or neither", () => {
    it("neither: one instance", () => {
      expect(fleetTargetOf({})).to.equal(undefined);
    });
    it("both: the fleet", () => {
      expect(fleetTargetOf({ fleetGroupName: GROUP, fleetServiceHost: LB })).to.include({ groupName: GROUP, serviceHost: LB });
    });
    it("one without the other: an error naming both", () => {
      expect(() => fleetTargetOf({ fleetGroupName: GROUP })).to.throw(/GPU_FLEET_GROUP_NAME and GPU_FLEET_SERVICE_HOST/);
    });
  });

  it("the fleet grants name exactly the Auto Scaling calls the consumers make", () => {
    expect(FLEET_DLQ_IAM_ACTIONS.filter((a) => a.startsWith("autoscaling:")).sort()).to.deep.equal([
      "autoscaling:DescribeAutoScalingGroups",
      "autoscaling:SetDesiredCapacity",
    ]);
    expect(FLEET_WINDOW_IAM_ACTIONS.filter((a) => a.startsWith("autoscaling:"))).to.deep.equal(["autoscaling:DescribeAutoScalingGroups"]);
    expect(FLEET_DLQ_IAM_ACTIONS).to.not.include("ssm:GetParameter");
    expect(FLEET_DLQ_IAM_ACTIONS).to.not.include("ec2:StartInstances");
    // The in-service instances' launch times, for the boot park.
    expect(FLEET_DLQ_IAM_ACTIONS).to.include("ec2:DescribeInstances");
  });
});
