import { expect } from "chai";
import { fargateSizeProblem, scheduleExpressionProblem } from "../../../policy/contract";

describe("the contract's AWS rules (policy/contract)", () => {
  describe("fargateSizeProblem: AWS's Fargate table", () => {
    const cases: Array<[number, number, boolean]> = [
      [256, 512, true],
      [256, 1024, true],
      [256, 2048, true],
      [256, 1536, false], // inside the 512-step range, but not a size AWS offers
      [512, 3072, true],
      [1024, 2048, true],
      [16_384, 122_880, true],
      [16_384, 36_864, false],
      [3072, 8192, false],
    ];
    for (const [cpu, memory, ok] of cases) {
      it(`${cpu} CPU with ${memory} MiB is ${ok ? "" : "not "}a Fargate size`, () => {
        expect(fargateSizeProblem(cpu, memory) === undefined).to.equal(ok);
      });
    }
  });

  describe("scheduleExpressionProblem: what EventBridge Scheduler accepts", () => {
    const cases: Array<[string, boolean, string | RegExp]> = [
      ["rate(5 minutes)", true, ""],
      ["rate(0 minutes)", true, /at least 1/],
      ["cron(0 3 * * ? *)", true, ""],
      ["cron(0 18 ? * MON-FRI *)", true, ""],
      ["cron(0 3 * * * *)", true, /\? in exactly one of day-of-month and day-of-week/],
      ["cron(0 3 ? * ? *)", true, /\? in exactly one/],
      ["cron(0 3 * *)", true, /must be rate/],
      ["at(2027-01-01T00:00:00)", true, ""],
      ["at(2027-01-01T00:00:00)", false, /must be rate\(N unit\) or cron\(6 fields\)/],
      ["every hour", true, /must be rate/],
    ];
    for (const [expression, allowAt, problem] of cases) {
      it(`${expression}${allowAt ? "" : " (no at)"}: ${problem === "" ? "accepted" : "refused"}`, () => {
        const found = scheduleExpressionProblem(expression, { allowAt });
        if (problem === "") expect(found).to.equal(undefined);
        else expect(found).to.match(problem as RegExp);
      });
    }
  });
});
