import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../infra/bundle";
import { DEFAULT_ELASTIC_IP_QUOTA, natGatewayCount, zoneCount } from "../../infra/components/network";
import { parseStackConfig } from "../../infra/config";
import { configError, devConfig, stackConfig, withValue } from "./helpers/stack-config";

/** Config the validators once accepted and AWS rejects: each fails the plan naming its key. */
describe("stack config refuses what AWS would refuse", () => {
  const topic = (i: number) => `arn:aws:sns:us-east-1:123456789012:ops-${i}`;
  const cases: Array<{ title: string; edits: Array<[string, unknown]>; key: string; reason: RegExp }> = [
    {
      title: "a 256-CPU strategy task with 1536 MiB",
      edits: [
        ["retraining.strategy.cpu", 256],
        ["retraining.strategy.memoryMb", 1536],
      ],
      key: "encache:retraining.strategy.memoryMb",
      reason: /one of 512, 1024, 2048 MiB/,
    },
    {
      title: "a 256-CPU worker with 1536 MiB",
      edits: [
        ["worker.cpu", 256],
        ["worker.memoryMb", 1536],
      ],
      key: "encache:worker",
      reason: /one of 512, 1024, 2048 MiB/,
    },
    {
      title: "an ARM64 strategy on Fargate Spot",
      edits: [
        ["retraining.useSpot", true],
        ["retraining.strategy.cpuArchitecture", "ARM64"],
      ],
      key: "encache:retraining.strategy.cpuArchitecture",
      reason: /Fargate Spot runs no ARM64 tasks/,
    },
    {
      title: "a retraining cron without ? in day-of-month or day-of-week",
      edits: [["retraining.schedules", [{ modelName: "PascalStrategy", scheduleExpression: "cron(0 3 * * * *)" }]]],
      key: "encache:retraining.schedules[0].scheduleExpression",
      reason: /\? in exactly one/,
    },
    {
      title: "a housekeeping cron with ? in both day fields",
      edits: [["fleet.schedules.staleSsm", "cron(0 3 ? * ? *)"]],
      key: "encache:fleet.schedules.staleSsm",
      reason: /\? in exactly one/,
    },
    {
      title: "a one-off at() for recurring housekeeping",
      edits: [["fleet.schedules.oldJobs", "at(2027-01-01T00:00:00)"]],
      key: "encache:fleet.schedules.oldJobs",
      reason: /rate\(N unit\) or cron\(6 fields\)/,
    },
    {
      title: "five alarm topics (CloudWatch takes five, and the program adds the stack's alert topic)",
      edits: [["alarmActions", [1, 2, 3, 4, 5].map(topic)]],
      key: "encache:alarmActions",
      reason: /at most 4 topics.*adds the stack's alert topic/,
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.title}, naming ${c.key}`, () => {
      // Prepare
      let raw = devConfig();
      for (const [key, value] of c.edits) raw = withValue(raw, key, value);

      // Act
      const message = configError(raw).message;

      // Assess
      expect(message).to.include(c.key);
      expect(message).to.match(c.reason);
    });
  }

  it("accepts four alarm topics (the fifth action is the stack's alert topic)", () => {
    expect(parseStackConfig(withValue(devConfig(), "alarmActions", [1, 2, 3, 4].map(topic))).alarmActions).to.have.length(4);
  });
});

/** Elastic IPs: one per NAT gateway, from one regional quota that both stacks share when they share a region. */
describe("the Elastic IP quota the stacks take, as docs/deploy.md states it", () => {
  const eipsOf = (stack: string) => {
    const { network } = parseStackConfig(stackConfig(stack));
    return natGatewayCount(
      network.natGateways,
      zoneCount({ availabilityZoneNames: network.availabilityZoneIds, availabilityZones: network.availabilityZones }),
    );
  };

  const counts: Array<[NonNullable<Parameters<typeof natGatewayCount>[0]>, number, number]> = [
    ["Single", 2, 1],
    ["Single", 3, 1],
    ["OnePerAz", 2, 2],
    ["OnePerAz", 3, 3],
  ];
  for (const [strategy, zones, want] of counts) {
    it(`${strategy} over ${zones} zones takes ${want}`, () => expect(natGatewayCount(strategy, zones)).to.equal(want));
  }

  it("zones: the pinned ones, else availabilityZones, else awsx's 2", () => {
    expect(zoneCount({ availabilityZoneNames: ["a", "b", "c"], availabilityZones: 2 })).to.equal(3);
    expect(zoneCount({ availabilityZones: 3 })).to.equal(3);
    expect(zoneCount({})).to.equal(2);
  });

  it("the deploy checklist (docs/deploy.md) gives each stack's count and their sum against the default quota, from the committed stack files", () => {
    // Prepare
    const readme = fs.readFileSync(path.join(REPO_ROOT, "docs", "deploy.md"), "utf8");
    const stated = /Elastic IPs.*?dev takes (\d+) and prod (\d+): (\d+) of the default (\d+) per region/s.exec(readme);
    // Act
    const [dev, prod] = [eipsOf("dev"), eipsOf("prod")];
    // Assess
    expect(stated, "the Elastic IP bullet of docs/deploy.md is missing or reworded").to.not.equal(null);
    expect(stated!.slice(1).map(Number)).to.deep.equal([dev, prod, dev + prod, DEFAULT_ELASTIC_IP_QUOTA]);
    expect(dev + prod, "both stacks fit one region's default quota").to.be.at.most(DEFAULT_ELASTIC_IP_QUOTA);
  });
});
