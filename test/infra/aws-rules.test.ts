import { expect } from "chai";
import { fargateSizeProblem, SCHEDULE_TIMEZONE_MAX_LENGTH, scheduleExpressionProblem, scheduleTimezoneProblem } from "../../infra/aws-rules";

describe("AWS's rules on what the program declares (infra/aws-rules.ts)", () => {
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

  describe("scheduleTimezoneProblem: what EventBridge Scheduler takes as ScheduleExpressionTimezone (an IANA name, 1-50 characters)", () => {
    const cases: Array<[string, string, RegExp | undefined]> = [
      ["the default", "UTC", undefined],
      ["a region/city zone", "Europe/London", undefined],
      ["a three-part zone", "America/Argentina/Buenos_Aires", undefined],
      ["a zone with a dash", "America/Port-au-Prince", undefined],
      ["the empty string", "", /must not be empty/],
      ["a name one past Scheduler's 50 characters", `Europe/${"x".repeat(44)}`, /at most 50 characters/],
      ["IANA's current name where ICU keeps the old one", "Asia/Kolkata", undefined],
      ["an IANA link (backward file)", "US/Eastern", undefined],
      ["a fixed-offset Etc zone", "Etc/GMT+5", undefined],
      ["lower case, which ICU would take", "europe/london", /not spelt as IANA spells it; use Europe\/London/],
      ["a link in lower case", "us/eastern", /not spelt as IANA spells it; use America\/New_York/],
      ["utc in lower case", "utc", /use UTC/],
      ["a mixed-case slip", "Europe/LONDON", /use Europe\/London/],
      ["an offset", "+05:00", /is not an IANA time zone/],
      ["an unknown zone", "Mars/Olympus", /"Mars\/Olympus" is not an IANA time zone/],
      ["a path", "../etc/passwd", /is not an IANA time zone/],
    ];
    for (const [title, timezone, problem] of cases) {
      it(`${title} (${JSON.stringify(timezone)}): ${problem === undefined ? "accepted" : "refused"}`, () => {
        const found = scheduleTimezoneProblem(timezone);
        if (problem === undefined) expect(found).to.equal(undefined);
        else expect(found).to.match(problem);
      });
    }

    it("the length case is exactly one past the limit, and the limit is Scheduler's 50", () => {
      expect(SCHEDULE_TIMEZONE_MAX_LENGTH).to.equal(50);
      expect(`Europe/${"x".repeat(44)}`).to.have.length(SCHEDULE_TIMEZONE_MAX_LENGTH + 1);
    });
  });
});
