/**
 * `ops gpu size N`: the fleet group's desired capacity, set by hand (the remedy that needs no
 * scaler), with the confirmation every change has; in instance mode, a clear refusal and no call.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AutoScalingClient, DescribeAutoScalingGroupsCommand, SetDesiredCapacityCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "chai";
import { type OpsIo, runOps } from "../../ops/cli";
import { type GpuView, sizeRefusal } from "../../ops/gpu";

const HOLD = "encache:gpu-hold";
const GROUP = "encache-gpu-fleet-prod";

function outputsFile(mode: "instance" | "fleet"): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ops-gpu-")), "outputs.json");
  fs.writeFileSync(
    file,
    JSON.stringify({
      opsQueues: {
        ingest: { url: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest", arn: "arn:aws:sqs:us-east-1:123456789012:ingest", kind: "source" },
      },
      clusterName: "cluster",
      ...(mode === "fleet" ? { gpuFleetGroupName: GROUP } : { gpuInstanceId: "i-1" }),
      opsGpu: { mode, holdTag: HOLD, idleStopMinutes: 60 },
      operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-prod",
    }),
  );
  return file;
}

const fleetView = (over: Partial<GpuView> = {}): GpuView => ({
  mode: "fleet",
  target: GROUP,
  state: "",
  hold: null,
  holdActive: false,
  idleStopMinutes: 60,
  capacity: { desired: 1, min: 0, max: 4, inService: 1 },
  summary: "",
  ...over,
});

describe("ops gpu size: who may set what", () => {
  const cases: Array<{ case: string; view: GpuView; n: number; refused: RegExp | undefined }> = [
    { case: "within min and max", view: fleetView(), n: 2, refused: undefined },
    { case: "up to max", view: fleetView(), n: 4, refused: undefined },
    { case: "0 with no hold (a stop)", view: fleetView(), n: 0, refused: undefined },
    { case: "above max", view: fleetView(), n: 5, refused: /size 5: the group encache-gpu-fleet-prod takes 0 to 4 instances/ },
    { case: "below min", view: fleetView({ capacity: { desired: 2, min: 1, max: 4, inService: 2 } }), n: 0, refused: /takes 1 to 4/ },
    {
      case: "0 while held",
      view: fleetView({ hold: "true", holdActive: true }),
      n: 0,
      refused: /the GPU is held \(encache:gpu-hold=true\): `ops gpu release` first/,
    },
    { case: "N while held", view: fleetView({ hold: "true", holdActive: true }), n: 2, refused: undefined },
    {
      case: "instance mode",
      view: { ...fleetView(), mode: "instance", target: "i-1", capacity: undefined } as GpuView,
      n: 1,
      refused: /instance mode has one GPU instance and no group to size/,
    },
  ];
  for (const c of cases) {
    it(c.case, () => {
      // Act
      const why = sizeRefusal(c.view, HOLD, c.n);
      // Assess
      if (c.refused) expect(why).to.match(c.refused);
      else expect(why).to.equal(undefined);
    });
  }
});

describe("ops gpu size: the command", () => {
  let asg: ReturnType<typeof mockClient>;
  let ec2: ReturnType<typeof mockClient>;
  beforeEach(() => {
    asg = mockClient(AutoScalingClient);
    ec2 = mockClient(EC2Client);
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: GROUP,
          DesiredCapacity: 0,
          MinSize: 0,
          MaxSize: 4,
          DefaultCooldown: 300,
          AvailabilityZones: [],
          HealthCheckType: "EC2",
          CreatedTime: new Date(),
          Tags: [],
        },
      ],
    });
    asg.on(SetDesiredCapacityCommand).resolves({});
    ec2.on(DescribeInstancesCommand).resolves({ Reservations: [{ Instances: [{ InstanceId: "i-1", State: { Name: "running" } }] }] });
  });
  afterEach(() => {
    asg.restore();
    ec2.restore();
  });

  const runs: Array<{ case: string; mode: "instance" | "fleet"; argv: string[]; tty?: string; code: number; sets: number[]; err?: RegExp }> = [
    {
      case: "fleet, --yes: sets desired 2 now",
      mode: "fleet",
      argv: ["--yes"],
      code: 0,
      sets: [2],
      err: /the scaler sizes the group to the backlog at its next tick/,
    },
    {
      case: "fleet, prod, no terminal, no --yes: nothing changes",
      mode: "fleet",
      argv: [],
      code: 1,
      sets: [],
      err: /needs --yes \(prod never defaults to acting\)/,
    },
    { case: "fleet, prod, a terminal and a bare y: nothing changes", mode: "fleet", argv: [], tty: "y", code: 1, sets: [], err: /not confirmed/ },
    { case: "fleet, prod, the stack's name typed: sets it", mode: "fleet", argv: [], tty: "prod", code: 0, sets: [2] },
    {
      case: "instance mode: refused, says why, calls nothing that changes",
      mode: "instance",
      argv: ["--yes"],
      code: 1,
      sets: [],
      err: /instance mode has one GPU instance/,
    },
  ];
  for (const r of runs) {
    it(r.case, async () => {
      // Prepare
      let err = "";
      const io: OpsIo = { out: () => undefined, err: (t) => (err += t), tty: r.tty !== undefined, ask: async () => r.tty ?? "" };
      // Act
      const code = await runOps(["gpu", "size", "2", "--stack", "prod", "--outputs", outputsFile(r.mode), ...r.argv], io);
      // Assess
      expect(code, err).to.equal(r.code);
      expect(asg.commandCalls(SetDesiredCapacityCommand).map((c) => c.args[0].input)).to.deep.equal(
        r.sets.map((n) => ({ AutoScalingGroupName: GROUP, DesiredCapacity: n, HonorCooldown: false })),
      );
      if (r.err) expect(err).to.match(r.err);
    });
  }
});
