/**
 * The Auto Scaling proxy's group stand-in (local/aws/group-stand-in.ts): the pure rules as tables,
 * then the proxy in front of moto, called with the SDK as the scaler calls it. moto 5.2 fails an
 * UpdateAutoScalingGroup that carries only `MixedInstancesPolicy.InstancesDistribution` (Auto Scaling
 * changes just the parts given) and forgets a leaving instance at once.
 */
import {
  AutoScalingClient,
  CreateAutoScalingGroupCommand,
  DescribeAutoScalingGroupsCommand,
  UpdateAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import { CreateLaunchTemplateCommand, DescribeImagesCommand, DescribeSubnetsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { AutoScalingProxy } from "../../../local/aws/autoscaling-proxy";
import {
  amendDescription,
  changesMore,
  type Distribution,
  distributionUpdate,
  GroupDistributions,
  type TerminatingInstance,
} from "../../../local/aws/group-stand-in";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const PROD: Distribution = { onDemandBaseCapacity: 1, onDemandPercentageAboveBaseCapacity: 25, instanceTypes: ["g5.2xlarge", "g6.2xlarge"] };
const query = (o: Record<string, string>) => new URLSearchParams({ Action: "UpdateAutoScalingGroup", Version: "2011-01-01", AutoScalingGroupName: "g", ...o });
const PCT = "MixedInstancesPolicy.InstancesDistribution.OnDemandPercentageAboveBaseCapacity";

describe("the Auto Scaling proxy's group stand-in", () => {
  describe("distributionUpdate: the parts given change, the rest stays (as UpdateAutoScalingGroup does)", () => {
    const cases: Array<[string, Distribution | undefined, Record<string, string>, ReturnType<typeof distributionUpdate>]> = [
      ["no mixed instances policy in the call: not its business", PROD, { MaxSize: "4" }, undefined],
      ["the on-demand share only", PROD, { [PCT]: "100" }, { next: { ...PROD, onDemandPercentageAboveBaseCapacity: 100 } }],
      [
        "the base too",
        PROD,
        { [PCT]: "0", "MixedInstancesPolicy.InstancesDistribution.OnDemandBaseCapacity": "2" },
        { next: { ...PROD, onDemandBaseCapacity: 2, onDemandPercentageAboveBaseCapacity: 0 } },
      ],
      ["a share above 100", PROD, { [PCT]: "101" }, { error: `${PCT} must be an integer from 0 to 100 (got 101)` }],
      ["a share that is no integer", PROD, { [PCT]: "50.5" }, { error: `${PCT} must be an integer from 0 to 100 (got 50.5)` }],
      [
        "a part the stand-in does not keep",
        PROD,
        { "MixedInstancesPolicy.LaunchTemplate.Overrides.member.1.InstanceType": "g5.xlarge" },
        {
          error:
            "MixedInstancesPolicy.LaunchTemplate.Overrides.member.1.InstanceType: the local stand-in keeps only OnDemandBaseCapacity and OnDemandPercentageAboveBaseCapacity of a mixed instances policy",
        },
      ],
      [
        "a group without a policy",
        undefined,
        { [PCT]: "100" },
        { error: "the local stand-in knows no mixed instances policy of g: it keeps only the one the program declared" },
      ],
    ];
    for (const [label, current, params, want] of cases) {
      it(label, () => {
        expect(distributionUpdate(current, query(params))).to.deep.equal(want);
      });
    }
  });

  it("changesMore: whether moto still has something to do once the policy is taken out", () => {
    expect(changesMore(query({ [PCT]: "100" }))).to.equal(false);
    expect(changesMore(query({ [PCT]: "100", MaxSize: "2" }))).to.equal(true);
    expect(changesMore(query({ MaxSize: "2" }))).to.equal(true);
  });

  describe("amendDescription: moto's answer with each group's distribution and leaving instances", () => {
    // moto 5.2's answer for two groups (trimmed), the first with an instance, the second with none.
    const moto =
      "<DescribeAutoScalingGroupsResponse><DescribeAutoScalingGroupsResult><AutoScalingGroups>" +
      "<member><AutoScalingGroupName>a</AutoScalingGroupName><MinSize>0</MinSize><Instances><member><InstanceId>i-1</InstanceId><LifecycleState>InService</LifecycleState></member></Instances><Tags/></member>" +
      "<member><AutoScalingGroupName>b</AutoScalingGroupName><MinSize>0</MinSize><Instances/><Tags/></member>" +
      "</AutoScalingGroups></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>";
    const leaving: Record<string, TerminatingInstance[]> = {
      a: [{ instanceId: "i-9", instanceType: "g5.2xlarge" }],
      b: [{ instanceId: "i-8", instanceType: "g6.2xlarge" }],
    };

    it("adds the policy right after the group's name, and the leaving instances as Terminating:Wait", () => {
      // Act
      const xml = amendDescription(moto, (g) => ({ ...(g === "a" ? { distribution: PROD } : {}), terminating: leaving[g] ?? [] }));
      // Assess
      const [a, b] = xml.split("<AutoScalingGroupName>b</AutoScalingGroupName>");
      expect(a).to.contain(
        "<AutoScalingGroupName>a</AutoScalingGroupName><MixedInstancesPolicy><LaunchTemplate><Overrides><member><InstanceType>g5.2xlarge</InstanceType></member><member><InstanceType>g6.2xlarge</InstanceType></member></Overrides></LaunchTemplate><InstancesDistribution><OnDemandBaseCapacity>1</OnDemandBaseCapacity><OnDemandPercentageAboveBaseCapacity>25</OnDemandPercentageAboveBaseCapacity></InstancesDistribution></MixedInstancesPolicy>",
      );
      expect(a).to.contain(
        "<member><InstanceId>i-1</InstanceId><LifecycleState>InService</LifecycleState></member><member><InstanceId>i-9</InstanceId><InstanceType>g5.2xlarge</InstanceType><LifecycleState>Terminating:Wait</LifecycleState>",
      );
      expect(b).to.not.contain("MixedInstancesPolicy");
      expect(b).to.contain("<Instances><member><InstanceId>i-8</InstanceId>");
    });

    it("lists an instance moto still has only once", () => {
      const xml = amendDescription(moto, (g) => ({ terminating: g === "a" ? [{ instanceId: "i-1", instanceType: "g5.2xlarge" }] : [] }));
      expect(xml.split("<InstanceId>i-1</InstanceId>")).to.have.length(2);
    });
  });

  describe("the proxy in front of moto, called as the scaler calls it", function () {
    this.timeout(60_000);
    const GROUP = "encache-gpu-fleet-test";
    let proxy: AutoScalingProxy;
    let direct: AutoScalingClient;
    let viaProxy: AutoScalingClient;
    let distributions: GroupDistributions;
    let terminating: TerminatingInstance[];

    beforeEach(async () => {
      await resetMoto();
      const ec2 = new EC2Client({});
      const { Images } = await ec2.send(new DescribeImagesCommand({ Owners: ["amazon"] }));
      const { Subnets } = await ec2.send(new DescribeSubnetsCommand({}));
      await ec2.send(
        new CreateLaunchTemplateCommand({ LaunchTemplateName: "gpu", LaunchTemplateData: { ImageId: Images?.[0]?.ImageId, InstanceType: "g5.2xlarge" } }),
      );
      ec2.destroy();
      direct = new AutoScalingClient({});
      await direct.send(
        new CreateAutoScalingGroupCommand({
          AutoScalingGroupName: GROUP,
          LaunchTemplate: { LaunchTemplateName: "gpu", Version: "$Latest" },
          MinSize: 0,
          MaxSize: 4,
          DesiredCapacity: 0,
          VPCZoneIdentifier: Subnets?.[0]?.SubnetId,
        }),
      );
      distributions = new GroupDistributions([{ groupName: GROUP, spot: PROD }]);
      terminating = [];
      proxy = new AutoScalingProxy(motoEndpoint(), () => false, { distributions, terminating: (g) => (g === GROUP ? terminating : []) });
      viaProxy = new AutoScalingClient({ endpoint: await proxy.start() });
    });
    afterEach(async () => {
      viaProxy.destroy();
      direct.destroy();
      await proxy.stop();
    });

    const describeVia = async (client: AutoScalingClient) =>
      (await client.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [GROUP] }))).AutoScalingGroups?.[0];

    it("takes an UpdateAutoScalingGroup of the on-demand share alone, and describes the group with it", async () => {
      // Act
      await viaProxy.send(
        new UpdateAutoScalingGroupCommand({
          AutoScalingGroupName: GROUP,
          MixedInstancesPolicy: { InstancesDistribution: { OnDemandPercentageAboveBaseCapacity: 100 } },
        }),
      );
      const group = await describeVia(viaProxy);
      // Assess
      expect(group?.MixedInstancesPolicy?.InstancesDistribution).to.deep.equal({ OnDemandBaseCapacity: 1, OnDemandPercentageAboveBaseCapacity: 100 });
      expect(group?.MixedInstancesPolicy?.LaunchTemplate?.Overrides?.map((o) => o.InstanceType)).to.deep.equal(["g5.2xlarge", "g6.2xlarge"]);
      expect(distributions.of(GROUP)?.onDemandPercentageAboveBaseCapacity).to.equal(100);
      expect(group?.MaxSize).to.equal(4);
    });

    it("passes the rest of a mixed call on to moto (its max here), and a plain one untouched", async () => {
      await viaProxy.send(
        new UpdateAutoScalingGroupCommand({
          AutoScalingGroupName: GROUP,
          MaxSize: 2,
          MixedInstancesPolicy: { InstancesDistribution: { OnDemandPercentageAboveBaseCapacity: 50 } },
        }),
      );
      await viaProxy.send(new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: GROUP, MinSize: 1 }));
      const group = await describeVia(direct);
      expect([group?.MinSize, group?.MaxSize]).to.deep.equal([1, 2]);
      expect(distributions.of(GROUP)?.onDemandPercentageAboveBaseCapacity).to.equal(50);
    });

    it("refuses what Auto Scaling would, changing nothing", async () => {
      const refused = await viaProxy
        .send(
          new UpdateAutoScalingGroupCommand({
            AutoScalingGroupName: GROUP,
            MixedInstancesPolicy: { InstancesDistribution: { OnDemandPercentageAboveBaseCapacity: 120 } },
          }),
        )
        .then(
          () => "accepted",
          (e: Error) => `${e.name}: ${e.message}`,
        );
      expect(refused).to.match(/^ValidationError: .*OnDemandPercentageAboveBaseCapacity must be an integer from 0 to 100/);
      expect(distributions.of(GROUP)?.onDemandPercentageAboveBaseCapacity).to.equal(25);
    });

    it("lists the instances leaving through the terminate hook as Terminating:Wait", async () => {
      terminating.push({ instanceId: "i-0a1b2c3d4e5f60009", instanceType: "g5.2xlarge" });
      const group = await describeVia(viaProxy);
      expect(group?.Instances?.map((i) => [i.InstanceId, i.LifecycleState])).to.deep.equal([["i-0a1b2c3d4e5f60009", "Terminating:Wait"]]);
    });
  });
});
