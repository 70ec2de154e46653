import { expect } from "chai";
import { parseScheduleExpression, type ScheduleExpression } from "../../../local/hosts/schedule-expression";

// Calendar used below (UTC): 2026-01-01 is a Thursday; Jan 31 and Feb 28 are Saturdays;
// Feb 1, Mar 1 and May 31 are Sundays; Aug 1 is a Saturday.

function cronOf(expr: string): Extract<ScheduleExpression, { kind: "cron" }> {
  const parsed = parseScheduleExpression(expr);
  if (parsed.kind !== "cron") throw new Error(`${expr} parsed as ${parsed.kind}`);
  return parsed;
}

describe("local runtime: schedule expressions (pure)", () => {
  describe("rate", () => {
    const cases: Array<[string, number]> = [
      ["rate(1 minute)", 60_000],
      ["rate(5 minutes)", 300_000],
      ["rate(1 hour)", 3_600_000],
      ["rate(6 hours)", 21_600_000],
      ["rate(1 day)", 86_400_000],
      ["rate(7 days)", 604_800_000],
    ];
    for (const [expr, everyMs] of cases) {
      it(`${expr} fires every ${everyMs} ms`, () => expect(parseScheduleExpression(expr)).to.deep.equal({ kind: "rate", everyMs }));
    }
  });

  describe("at", () => {
    it("at(2026-03-04T05:06:07) is that instant in UTC", () =>
      expect(parseScheduleExpression("at(2026-03-04T05:06:07)")).to.deep.equal({ kind: "at", at: new Date("2026-03-04T05:06:07Z") }));
  });

  describe("cron: next occurrence strictly after a time", () => {
    const cases: Array<[string, string, string | null]> = [
      // [expression, after, expected next]
      ["cron(0 10 * * ? *)", "2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z"],
      ["cron(0 10 * * ? *)", "2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z"],
      ["cron(15 12 * * ? *)", "2026-01-01T12:15:30Z", "2026-01-02T12:15:00Z"],
      ["cron(0 18 ? * MON-FRI *)", "2026-01-02T18:00:00Z", "2026-01-05T18:00:00Z"],
      ["cron(0 8 1 * ? *)", "2026-01-01T08:00:00Z", "2026-02-01T08:00:00Z"],
      ["cron(0/15 * * * ? *)", "2026-01-01T00:07:00Z", "2026-01-01T00:15:00Z"],
      ["cron(1/10 * * * ? *)", "2026-01-01T00:01:00Z", "2026-01-01T00:11:00Z"],
      ["cron(*/20 * * * ? *)", "2026-01-01T00:59:59Z", "2026-01-01T01:00:00Z"],
      ["cron(0,30 9-10 * * ? *)", "2026-01-01T09:45:00Z", "2026-01-01T10:00:00Z"],
      ["cron(0,30 9-10 * * ? *)", "2026-01-01T10:30:00Z", "2026-01-02T09:00:00Z"],
      ["cron(0 0 1-31/10 * ? *)", "2026-01-01T00:00:00Z", "2026-01-11T00:00:00Z"],
      ["cron(0 5/6 * * ? *)", "2026-01-01T17:00:00Z", "2026-01-01T23:00:00Z"],
      ["cron(0 0 25/5 * ? *)", "2026-01-01T00:00:00Z", "2026-01-25T00:00:00Z"],
      ["cron(0 0 25/5 * ? *)", "2026-01-30T00:00:00Z", "2026-02-25T00:00:00Z"],
      ["cron(0 0 1 1 ? 2027-2028)", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"],
      ["cron(0 12 31 * ? *)", "2026-02-01T00:00:00Z", "2026-03-31T12:00:00Z"],
      ["cron(0 0 29 FEB ? *)", "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z"],
      ["cron(0 0 ? JAN,MAR SUN 2026)", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"],
      ["cron(0 3 * * ? *)", "2026-12-31T03:00:00Z", "2027-01-01T03:00:00Z"],
      // L, W and # wildcards
      ["cron(0 0 L * ? *)", "2026-02-01T00:00:00Z", "2026-02-28T00:00:00Z"],
      ["cron(0 0 LW * ? *)", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00Z"],
      ["cron(0 0 1W * ? *)", "2026-07-31T00:00:00Z", "2026-08-03T00:00:00Z"],
      ["cron(0 0 15W * ? *)", "2026-02-01T00:00:00Z", "2026-02-16T00:00:00Z"],
      ["cron(0 0 31W * ? *)", "2026-05-01T00:00:00Z", "2026-05-29T00:00:00Z"],
      ["cron(0 0 ? * 3#2 *)", "2026-01-01T00:00:00Z", "2026-01-13T00:00:00Z"],
      ["cron(0 0 ? * FRI#1 *)", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"],
      ["cron(0 0 ? * 6L *)", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00Z"],
      ["cron(0 0 ? * L *)", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"],
      // The year field ran out.
      ["cron(0 0 1 1 ? 2025)", "2026-01-01T00:00:00Z", null],
    ];
    for (const [expr, after, expected] of cases) {
      it(`${expr} after ${after} → ${expected ?? "never"}`, () => {
        const next = cronOf(expr).next(new Date(after));
        expect(next?.toISOString() ?? null).to.equal(expected === null ? null : new Date(expected).toISOString());
      });
    }
  });

  describe("rejects what it cannot evaluate, naming the expression", () => {
    const bad: Array<[string, RegExp]> = [
      ["every 5 minutes", /expected rate/],
      ["rate(0 minutes)", /at least 1/],
      ["rate(5 weeks)", /expected rate/],
      ["rate(five minutes)", /expected rate/],
      ["at(2026-02-30T00:00:00)", /not a valid date/],
      ["at(2026-01-01 00:00:00)", /expected rate/],
      ["cron(0 10 * *)", /6 fields/],
      ["cron(0 10 * * * *)", /exactly one of day-of-month and day-of-week/],
      ["cron(0 10 ? * ? *)", /exactly one of day-of-month and day-of-week/],
      ["cron(? 10 * * ? *)", /\? is only allowed/],
      ["cron(60 * * * ? *)", /minutes: 60 is outside 0-59/],
      ["cron(0 24 * * ? *)", /hours: 24 is outside 0-23/],
      ["cron(0 0 10-5 * ? *)", /From value is larger than to value/],
      ["cron(0 0 * FOO ? *)", /\(FOO\) contains illegal characters/],
      ["cron(0 0 ? * 1/2 *)", /day-of-week: \/ is not allowed/],
      ["cron(0 0 ? * 3#1,6#3 *)", /must stand alone/],
      ["cron(0 0 ? * 3L,5 *)", /must stand alone/],
      ["cron(0 0 1,LW * ? *)", /must stand alone/],
      ["cron(0 0 ? * 3#6 *)", /1-5/],
      ["cron(0/0 * * * ? *)", /illegal stepping: 0/],
      ["cron(0 0 32 * ? *)", /day-of-month: 32 is outside 1-31/],
      ["cron(0 0 1 13 ? *)", /month: 13 is outside 1-12/],
      ["cron(0 0 ? * 0 *)", /day-of-week: 0 is outside 1-7/],
      ["cron(0 0 ? * 8 *)", /day-of-week: 8 is outside 1-7/],
      ["cron(0 0 1 1 ? 1969)", /year: 1969 is outside 1970-2199/],
      ["cron(0 0 1 1 ? 2200)", /year: 2200 is outside 1970-2199/],
    ];
    for (const [expr, reason] of bad) {
      it(`rejects ${expr}`, () => {
        expect(() => parseScheduleExpression(expr))
          .to.throw(reason)
          .with.property("message")
          .that.includes(`"${expr}"`);
      });
    }
  });
});
