/** local/aws/ec2-clock.ts in front of moto: a stop takes a while, and a start is refused meanwhile, as on EC2. */
import { DescribeInstancesCommand, EC2Client, RunInstancesCommand, StartInstancesCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { Ec2ClockProxy } from "../../../local/aws/ec2-clock";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

describe("local/aws/ec2-clock against moto", function () {
  this.timeout(60_000);
  let proxy: Ec2ClockProxy;
  let viaProxy: EC2Client;
  let direct: EC2Client;

  beforeEach(async () => {
    await resetMoto();
    proxy = new Ec2ClockProxy({ target: motoEndpoint(), clock: { t0Ms: Date.now(), speed: 1 }, stopDelayRealMs: 1500 });
    const endpoint = await proxy.start();
    viaProxy = new EC2Client({ region: "us-east-1", endpoint });
    direct = new EC2Client({ region: "us-east-1", endpoint: motoEndpoint() });
  });
  afterEach(() => proxy.stop());

  const stateVia = async (client: EC2Client, id: string) =>
    (await client.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations?.[0]?.Instances?.[0]?.State?.Name;

  it("reports `stopping` and refuses a start (IncorrectInstanceState) for the stop delay, then lets it start", async () => {
    // Prepare
    const run = await direct.send(new RunInstancesCommand({ ImageId: "ami-12c6146b", MinCount: 1, MaxCount: 1, InstanceType: "g5.xlarge" }));
    const id = run.Instances?.[0]?.InstanceId ?? "";
    // Act
    await viaProxy.send(new StopInstancesCommand({ InstanceIds: [id] }));
    const during = await stateVia(viaProxy, id);
    const inMoto = await stateVia(direct, id);
    const refusal = await viaProxy.send(new StartInstancesCommand({ InstanceIds: [id] })).then(
      () => "accepted",
      (e: Error) => e.name,
    );
    await new Promise((r) => setTimeout(r, 1600));
    const after = await stateVia(viaProxy, id);
    await viaProxy.send(new StartInstancesCommand({ InstanceIds: [id] }));
    // Assess
    expect([during, inMoto, refusal, after]).to.deep.equal(["stopping", "stopped", "IncorrectInstanceState", "stopped"]);
    expect(await stateVia(viaProxy, id)).to.equal("running");
  });
});
