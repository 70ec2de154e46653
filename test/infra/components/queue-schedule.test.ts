import { expect } from "chai";
import { queueScheduleDefaults, resolveQueueScheduleArgs } from "../../../infra/components/queue-schedule";

describe("shared components: Table and QueueSchedule validators (pure)", () => {
  describe("resolveQueueScheduleArgs", () => {
    it("defaults to 3 retries over an hour, in UTC", () => {
      expect(resolveQueueScheduleArgs({ scheduleExpression: "rate(5 minutes)" })).to.include(queueScheduleDefaults);
    });
    for (const timezone of ["UTC", "Europe/Berlin", "Asia/Kolkata"]) {
      it(`accepts the time zone ${timezone}`, () =>
        expect(resolveQueueScheduleArgs({ scheduleExpression: "cron(0 3 * * ? *)", timezone }).timezone).to.equal(timezone));
    }
    for (const e of ["rate(1 hour)", "rate(15 minutes)", "cron(0 3 * * ? *)", "at(2027-01-01T00:00:00)"]) {
      it(`accepts ${e}`, () => expect(resolveQueueScheduleArgs({ scheduleExpression: e }).scheduleExpression).to.equal(e));
    }
    const bad: Array<[string, Parameters<typeof resolveQueueScheduleArgs>[0], RegExp]> = [
      ["a five-field cron", { scheduleExpression: "cron(0 3 * * *)" }, /scheduleExpression/],
      ["rate(0 minutes)", { scheduleExpression: "rate(0 minutes)" }, /at least 1/],
      ["186 retries", { scheduleExpression: "rate(1 day)", maximumRetryAttempts: 186 }, /maximumRetryAttempts/],
      ["an event age under a minute", { scheduleExpression: "rate(1 day)", maximumEventAgeSeconds: 30 }, /maximumEventAgeSeconds/],
      [
        "a time zone that is no IANA name",
        { scheduleExpression: "cron(0 3 * * ? *)", timezone: "Central European" },
        /timezone: "Central European" is not an IANA time zone/,
      ],
      [
        "a time zone Scheduler would find too long",
        { scheduleExpression: "cron(0 3 * * ? *)", timezone: `A/${"b".repeat(49)}` },
        /timezone: must be at most 50 characters/,
      ],
    ];
    for (const [name, args, reason] of bad) it(`rejects ${name}`, () => expect(() => resolveQueueScheduleArgs(args)).to.throw(reason));
  });
});
