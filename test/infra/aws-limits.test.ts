import { expect } from "chai";
import { parseStackConfig } from "../../infra/config";
import { configError, devConfig, withValue } from "./helpers/stack-config";


/** Config the validators once accepted and AWS rejects: each fails the plan naming its key. */
describe("stack config refuses what AWS would refuse", () => {
  const topic = (i: number) => `arn:aws:sns:us-east-1:123456789012:ops-${i}`;
  const cases: Array<{ title: string; edits: Array<[string, unknown]>; key: string; reason: RegExp }> = [
    { title: "a 256-CPU strategy task with 1536 MiB", edits: [["retraining.strategy.cpu", 256], ["retraining.strategy.memoryMb", 1536]], key: "encache:retraining.strategy.memoryMb", reason: /one of 512, 1024, 2048 MiB/ },
    { title: "a 256-CPU worker with 1536 MiB", edits: [["worker.cpu", 256], ["worker.memoryMb", 1536]], key: "encache:worker", reason: /one of 512, 1024, 2048 MiB/ },
    { title: "an ARM64 strategy on Fargate Spot", edits: [["retraining.useSpot", true], ["retraining.strategy.cpuArchitecture", "ARM64"]], key: "encache:retraining.strategy.cpuArchitecture", reason: /Fargate Spot runs no ARM64 tasks/ },
    { title: "a retraining cron without ? in day-of-month or day-of-week", edits: [["retraining.schedules", [{ modelName: "PascalStrategy", scheduleExpression: "cron(0 3 * * * *)" }]]], key: "encache:retraining.schedules[0].scheduleExpression", reason: /\? in exactly one/ },
    { title: "a housekeeping cron with ? in both day fields", edits: [["fleet.schedules.staleSsm", "cron(0 3 ? * ? *)"]], key: "encache:fleet.schedules.staleSsm", reason: /\? in exactly one/ },
    { title: "a one-off at() for recurring housekeeping", edits: [["fleet.schedules.oldJobs", "at(2027-01-01T00:00:00)"]], key: "encache:fleet.schedules.oldJobs", reason: /rate\(N unit\) or cron\(6 fields\)/ },
    { title: "five alarm topics (CloudWatch takes five, and the program adds the stack's alert topic)", edits: [["alarmActions", [1, 2, 3, 4, 5].map(topic)]], key: "encache:alarmActions", reason: /at most 4 topics.*adds the stack's alert topic/ },
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
