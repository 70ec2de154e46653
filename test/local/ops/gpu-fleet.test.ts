/**
 * `ops gpu` in fleet mode (prod's): the hold tag and desired capacity on the stack's Auto Scaling
 * group, in moto, through the operator endpoint judging each call against the fleet grants bound as
 * the program binds them (infra/parts/operator.ts): the stack's group by name and environment tag,
 * and no tag key but the hold tag. The local platform plays instance mode (dev); this is the other mode.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AutoScalingClient, CreateAutoScalingGroupCommand, DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { CreateLaunchTemplateCommand, EC2Client } from "@aws-sdk/client-ec2";
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { statementsFor } from "../../../infra/iam/grants";
import { OperatorEndpoint } from "../../../local/aws/operator-endpoint";
import type { PolicyStatement } from "../../../local/aws/operator-iam";
import { DirectSends, MessageMoveTasks } from "../../../local/aws/sqs-move-tasks";
import { type OpsIo, runOps } from "../../../ops/cli";
import { OPERATOR_FLEET_GRANTS } from "../../../ops/iam";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const HOLD_TAG = "encache:gpu-hold";

/** The fleet grants as the program binds them for a stack (its group's ARN pattern and environment tag). */
function fleetStatements(groupName: string, environment: string): PolicyStatement[] {
  const group = {
    resource: `arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/${groupName}`,
    condition: { StringEquals: { "aws:ResourceTag/encache:environment": environment } },
  };
  return statementsFor(OPERATOR_FLEET_GRANTS, {
    "*": { resource: "*" },
    "stack-gpu-group": group,
    "stack-gpu-group-hold-tag": { ...group, condition: { ...group.condition, "ForAllValues:StringEquals": { "aws:TagKeys": [HOLD_TAG] } } },
  }) as PolicyStatement[];
}

describe("ops gpu in fleet mode, on moto's Auto Scaling, judged by the fleet grants", function () {
  this.timeout(60_000);
  let endpoint: OperatorEndpoint;
  let url: string;
  let outputsFile: (group: string) => string;
  const asg = () => new AutoScalingClient({ region: "us-east-1", endpoint: motoEndpoint() });

  before(async () => {
    await resetMoto();
    const ec2 = new EC2Client({ region: "us-east-1", endpoint: motoEndpoint() });
    const sqs = new SQSClient({ region: "us-east-1", endpoint: motoEndpoint() });
    const lt = await ec2.send(
      new CreateLaunchTemplateCommand({ LaunchTemplateName: "gpu", LaunchTemplateData: { ImageId: "ami-12c6146b", InstanceType: "g5.2xlarge" } }),
    );
    for (const [name, env] of [
      ["encache-gpu-fleet-prod", "prod"],
      ["encache-gpu-fleet-dev", "dev"],
    ] as const) {
      await asg().send(
        new CreateAutoScalingGroupCommand({
          AutoScalingGroupName: name,
          MinSize: 0,
          MaxSize: 4,
          DesiredCapacity: 1,
          AvailabilityZones: ["us-east-1a"],
          LaunchTemplate: { LaunchTemplateId: lt.LaunchTemplate?.LaunchTemplateId ?? "", Version: "$Latest" },
          Tags: [{ Key: "encache:environment", Value: env, PropagateAtLaunch: false, ResourceId: name, ResourceType: "auto-scaling-group" }],
        }),
      );
    }
    const q = await sqs.send(new CreateQueueCommand({ QueueName: "ingest" }));
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.QueueUrl, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn ?? "";
    endpoint = new OperatorEndpoint({
      target: motoEndpoint(),
      region: "us-east-1",
      account: "123456789012",
      statements: () => fleetStatements("encache-gpu-fleet-prod", "prod"),
      moveTasks: new MessageMoveTasks({ sqs, queues: [], direct: new DirectSends() }),
      direct: new DirectSends(),
      queues: [{ name: "ingest", arn }],
      oldestAgeSeconds: () => null,
      ec2,
      autoscaling: asg(),
    });
    url = await endpoint.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ops-fleet-"));
    outputsFile = (group) => {
      const file = path.join(dir, `${group}.json`);
      fs.writeFileSync(
        file,
        JSON.stringify({
          opsQueues: { ingest: { url: `${url}/123456789012/ingest`, arn, kind: "source" } },
          clusterName: "platform-cluster",
          gpuFleetGroupName: group,
          opsGpu: { mode: "fleet", holdTag: HOLD_TAG, idleStopMinutes: 60 },
          operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-prod",
        }),
      );
      return file;
    };
  });

  after(async () => {
    await endpoint?.stop();
  });

  async function ops(args: string[], group = "encache-gpu-fleet-prod"): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const io: OpsIo = { out: (t) => (out += t), err: (t) => (err += t), tty: false, ask: async () => "" };
    const code = await runOps([...args, "--stack", "prod", "--outputs", outputsFile(group), "--endpoint", url], io);
    return { code, out, err };
  }

  it("holds the group with its tag, refuses a stop while held, releases, and stops at desired 0", async () => {
    // Act
    const held = await ops(["gpu", "hold", "--yes"]);
    const refused = await ops(["gpu", "stop", "--yes"]);
    const released = await ops(["gpu", "release", "--yes"]);
    const stopped = await ops(["gpu", "stop", "--yes", "--json"]);
    // Assess
    expect(held.code, held.err).to.equal(0);
    expect(held.out).to.match(/gpu \(fleet\) encache-gpu-fleet-prod: desired 1, in service \d+, max 4; held \(encache:gpu-hold=true\); idle stop after 60 min/);
    expect(refused.code).to.equal(1);
    expect(refused.err).to.include("the GPU is held");
    expect(released.code, released.err).to.equal(0);
    expect(stopped.code, stopped.err).to.equal(0);
    const group = await asg().send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: ["encache-gpu-fleet-prod"] }));
    expect(group.AutoScalingGroups?.[0]?.DesiredCapacity).to.equal(0);
    expect(group.AutoScalingGroups?.[0]?.Tags?.some((t) => t.Key === HOLD_TAG)).to.equal(false);
  });

  it("sizes the group by hand (gpu size N), refusing a size beyond its max", async () => {
    // Act
    const sized = await ops(["gpu", "size", "2", "--yes"]);
    const beyond = await ops(["gpu", "size", "5", "--yes"]);
    // Assess
    expect(sized.code, sized.err).to.equal(0);
    expect(sized.out).to.match(/gpu \(fleet\) encache-gpu-fleet-prod: desired 2, in service \d+, max 4/);
    expect(beyond.code).to.equal(1);
    expect(beyond.err).to.include("size 5: the group encache-gpu-fleet-prod takes 0 to 4 instances");
    const group = await asg().send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: ["encache-gpu-fleet-prod"] }));
    expect(group.AutoScalingGroups?.[0]?.DesiredCapacity).to.equal(2);
  });

  it("denies the other stack's group, naming the action", async () => {
    // Act
    const hold = await ops(["gpu", "hold", "--yes"], "encache-gpu-fleet-dev");
    const size = await ops(["gpu", "size", "2", "--yes"], "encache-gpu-fleet-dev");
    // Assess
    expect(size.code).to.equal(1);
    expect(size.err).to.match(/not authorized to perform: autoscaling:SetDesiredCapacity on resource: .*autoScalingGroupName\/encache-gpu-fleet-dev/);
    expect(hold.code).to.equal(1);
    expect(hold.err).to.match(
      /not authorized to perform: autoscaling:CreateOrUpdateTags on resource: arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:.*autoScalingGroupName\/encache-gpu-fleet-dev/,
    );
  });

  it("prod never defaults to acting: without --yes off a terminal nothing changes", async () => {
    // Prepare
    let err = "";
    // Act
    const code = await runOps(["gpu", "stop", "--stack", "prod", "--outputs", outputsFile("encache-gpu-fleet-prod"), "--endpoint", url], {
      out: () => undefined,
      err: (t) => (err += t),
      tty: false,
      ask: async () => "",
    });
    // Assess
    expect(code).to.equal(1);
    expect(err).to.include("needs --yes (prod never defaults to acting)");
  });
});
