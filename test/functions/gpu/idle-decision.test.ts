import { expect } from "chai";
import { holdActive, idleDecision, type IdleInput } from "../../../functions/gpu/idle-decision";

const NOW = Date.parse("2026-11-24T12:00:00Z");
const base: IdleInput = {
  state: "running",
  launchTime: new Date(NOW - 7_200_000),
  queued: 0,
  status: { active: 0, idleSeconds: 1800 },
  nowMs: NOW,
  idleStopMinutes: 30,
};

describe("gpu/idle-decision (pure)", () => {
  const cases: Array<[string, Partial<IdleInput>, string]> = [
    ["idle for exactly the window", {}, "stop:service"],
    ["idle a second short of it", { status: { active: 0, idleSeconds: 1799 } }, "wait"],
    ["a window queued or parked", { queued: 1 }, "none:busy"],
    ["a window running on the GPU", { status: { active: 1, idleSeconds: 5000 } }, "none:busy"],
    ["stopped already", { state: "stopped" }, "none:not_running"],
    ["pending", { state: "pending" }, "none:not_running"],
    ["held on by tag", { hold: "true" }, "none:held"],
    ["held until later today", { hold: "2026-11-24T18:00:00Z" }, "none:held"],
    ["a hold that ended", { hold: "2026-11-24T11:00:00Z" }, "stop:service"],
    ["a silent service, running 2 h", { status: undefined }, "stop:running_time"],
    ["a silent service, running 10 min", { status: undefined, launchTime: new Date(NOW - 600_000) }, "wait"],
    ["a silent service and no launch time", { status: undefined, launchTime: undefined }, "wait"],
  ];
  for (const [what, change, want] of cases) {
    it(`${what}: ${want}`, () => {
      const d = idleDecision({ ...base, ...change });
      const got = d.action === "none" ? `none:${d.reason}` : d.action === "stop" ? `stop:${d.basis}` : "wait";
      expect(got).to.equal(want);
    });
  }

  it("reads holds: true/on, a future time; not a past time, garbage or nothing", () => {
    expect(["true", "ON", "2026-11-25T00:00:00Z", "2026-11-24T11:59:00Z", "someday", undefined].map((v) => holdActive(v, NOW))).to.deep.equal([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it("reads a hold tag value with stray spaces or capitals", () => {
    expect([" true ", "On\n", " TRUE"].map((v) => holdActive(v, NOW))).to.deep.equal([true, true, true]);
  });

  it("lets a hold end at its time: a hold until now no longer holds", () => {
    expect(holdActive(new Date(NOW).toISOString(), NOW)).to.equal(false);
    expect(holdActive(new Date(NOW + 1000).toISOString(), NOW)).to.equal(true);
  });
});
