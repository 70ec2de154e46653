import { expect } from "chai";
import { instanceIdsOf, simulateLaunchTimes } from "../../../local/aws/ec2-clock";

describe("local/aws/ec2-clock: launch times on the simulated clock", () => {
  it("maps each launchTime to t0 + (real − t0) × speed, leaving the rest of the XML alone", () => {
    // Prepare: t0 at noon; one instance launched 2 real seconds after it, one before it.
    const t0 = Date.parse("2026-11-24T12:00:00.000Z");
    const xml =
      "<item><instanceId>i-1</instanceId><launchTime>2026-11-24T12:00:02.000Z</launchTime></item><item><launchTime>2026-11-24T11:59:59.000Z</launchTime></item>";
    // Act
    const out = simulateLaunchTimes(xml, { t0Ms: t0, speed: 60 });
    // Assess
    expect(out).to.equal(
      "<item><instanceId>i-1</instanceId><launchTime>2026-11-24T12:02:00.000Z</launchTime></item><item><launchTime>2026-11-24T11:59:00.000Z</launchTime></item>",
    );
  });

  it("reports an instance's last start, not moto's first launch, and reads StartInstances bodies", () => {
    const t0 = Date.parse("2026-11-24T12:00:00.000Z");
    const xml = "<item><instanceId>i-0abc</instanceId><imageId>ami-1</imageId><launchTime>2026-11-24T11:00:00.000Z</launchTime></item>";
    const started = new Map([["i-0abc", t0 + 1000]]);
    expect(simulateLaunchTimes(xml, { t0Ms: t0, speed: 60 }, started)).to.contain("<launchTime>2026-11-24T12:01:00.000Z</launchTime>");
    expect(instanceIdsOf("StartInstances", "Action=StartInstances&Version=2016-11-15&InstanceId.1=i-0abc&InstanceId.2=i-0def")).to.deep.equal([
      "i-0abc",
      "i-0def",
    ]);
    expect(instanceIdsOf("StartInstances", "Action=StopInstances&InstanceId.1=i-0abc")).to.deep.equal([]);
  });

  it("keeps a value it cannot read", () => {
    expect(simulateLaunchTimes("<launchTime>soon</launchTime>", { t0Ms: 0, speed: 60 })).to.equal("<launchTime>soon</launchTime>");
  });
});
