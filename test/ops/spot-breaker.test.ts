/**
 * `ops status` (and `ops gpu status`) show the GPU fleet's Spot breaker: open or closed, the
 * interruptions recorded in its window, and until when it is open, read from the group's tags with
 * the stack's breaker settings (the `opsGpu.spotBreaker` output), by the scaler's own rule.
 */
import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { spotInterruptionTag } from "../../functions/gpu/group-tags";
import { opsClients } from "../../ops/aws";
import { readGpu } from "../../ops/gpu";
import { parseOutputs, type StackOutputs } from "../../ops/outputs";
import { renderStatus, type StatusReport } from "../../ops/status";

const NOW = Date.parse("2026-11-25T12:00:00Z");
const GROUP = "encache-gpu-fleet-prod";
const ago = (minutes: number) => new Date(NOW - minutes * 60_000).toISOString();

function outputs(spotBreaker: boolean): StackOutputs {
  return parseOutputs(
    JSON.stringify({
      opsQueues: {
        ingest: { url: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest", arn: "arn:aws:sqs:us-east-1:123456789012:ingest", kind: "source" },
      },
      clusterName: "cluster",
      gpuFleetGroupName: GROUP,
      opsGpu: {
        mode: "fleet",
        holdTag: "encache:gpu-hold",
        idleStopMinutes: 60,
        ...(spotBreaker ? { spotBreaker: { interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 } } : {}),
      },
      operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-prod",
    }),
    "test",
  );
}

describe("ops: the GPU fleet's Spot breaker", () => {
  let asg: ReturnType<typeof mockClient>;
  const withTags = (tags: Record<string, string>) =>
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: GROUP,
          DesiredCapacity: 3,
          MinSize: 0,
          MaxSize: 4,
          DefaultCooldown: 300,
          AvailabilityZones: [],
          HealthCheckType: "ELB",
          CreatedTime: new Date(NOW),
          Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value, ResourceId: GROUP, ResourceType: "auto-scaling-group" })),
        },
      ],
    });

  beforeEach(() => {
    asg = mockClient(AutoScalingClient);
  });
  afterEach(() => asg.restore());

  const cases: Array<[string, Record<string, string>, { open: boolean; until: string | null; inWindow: number; text: string }]> = [
    ["no interruption", {}, { open: false, until: null, inWindow: 0, text: "Spot breaker closed (0 interruptions in the last 15 min)" }],
    [
      "one interruption",
      { [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: ago(3) },
      { open: false, until: null, inWindow: 1, text: "Spot breaker closed (1 interruption in the last 15 min)" },
    ],
    [
      "two within 15 minutes",
      { [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: ago(10), [spotInterruptionTag("i-0a1b2c3d4e5f60002")]: ago(2) },
      {
        open: true,
        until: "2026-11-25T12:28:00.000Z",
        inWindow: 2,
        text: "Spot breaker OPEN until 2026-11-25T12:28:00.000Z (on demand only; 2 interruptions in the last 15 min)",
      },
    ],
    [
      "two, the cool-down over",
      { [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: ago(40), [spotInterruptionTag("i-0a1b2c3d4e5f60002")]: ago(31) },
      { open: false, until: null, inWindow: 0, text: "Spot breaker closed (0 interruptions in the last 15 min)" },
    ],
  ];
  for (const [label, tags, want] of cases) {
    it(`${label}: ${want.open ? "open" : "closed"}`, async () => {
      // Prepare
      withTags({ ...tags, "encache:gpu-hold": "true" });
      // Act
      const view = await readGpu(opsClients("us-east-1"), outputs(true), NOW);
      // Assess
      expect(view.spotBreaker).to.deep.include({ open: want.open, until: want.until, inWindow: want.inWindow });
      expect(view.summary).to.contain(want.text);
    });
  }

  it("lists the records in the status screen, oldest first", async () => {
    // Prepare
    withTags({ [spotInterruptionTag("i-0a1b2c3d4e5f60002")]: ago(2), [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: ago(10) });
    const gpu = await readGpu(opsClients("us-east-1"), outputs(true), NOW);
    const report: StatusReport = { stack: "prod", queues: [], gpu, worker: null, pools: [] };
    // Act
    const screen = renderStatus(report);
    // Assess
    expect(screen).to.contain("Spot breaker OPEN until 2026-11-25T12:28:00.000Z");
    expect(screen.split("\n").filter((l) => l.includes("spot interruption:"))).to.deep.equal([
      `  spot interruption: i-0a1b2c3d4e5f60001 at ${ago(10)}`,
      `  spot interruption: i-0a1b2c3d4e5f60002 at ${ago(2)}`,
    ]);
  });

  it("says nothing of a breaker on a stack without Spot (no spotBreaker output)", async () => {
    withTags({ [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: ago(2) });
    const view = await readGpu(opsClients("us-east-1"), outputs(false), NOW);
    expect(view.spotBreaker).to.equal(undefined);
    expect(view.summary).to.not.contain("Spot breaker");
  });
});
