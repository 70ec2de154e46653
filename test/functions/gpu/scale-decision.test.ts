import { expect } from "chai";
import { type FleetMember, scaleDecision, type ScaleInput } from "../../../functions/gpu/scale-decision";

const NOW = Date.parse("2026-11-25T12:00:00Z");
const idle = (id: string, idleSeconds: number, protectedFromScaleIn = false): FleetMember => ({
  instanceId: id,
  status: { active: 0, idleSeconds },
  launchTime: new Date(NOW - 7_200_000),
  protectedFromScaleIn,
});
const serving = (id: string, protectedFromScaleIn = true): FleetMember => ({
  instanceId: id,
  status: { active: 2, idleSeconds: 0 },
  launchTime: new Date(NOW - 7_200_000),
  protectedFromScaleIn,
});

/** Four instances wanted and in service, 500 windows per instance, 10 min cool-down, 30 min idle stop. */
const base: ScaleInput = {
  backlog: 0,
  group: { desired: 1, min: 0, max: 4 },
  members: [idle("i-1", 60)],
  nowMs: NOW,
  lastScaleOutMs: NOW - 3_600_000,
  windowsPerInstance: 500,
  scaleInCooldownSeconds: 600,
  idleStopMinutes: 30,
};

describe("gpu/scale-decision (pure)", () => {
  describe("desired capacity", () => {
    const cases: Array<[string, Partial<ScaleInput>, { desired: number; reason: string }]> = [
      ["from zero, one window queued: one instance", { backlog: 1, group: { desired: 0, min: 0, max: 4 }, members: [] }, { desired: 1, reason: "scale_out" }],
      [
        "from zero, 1,501 windows: ceil(1501 / 500) = 4",
        { backlog: 1501, group: { desired: 0, min: 0, max: 4 }, members: [] },
        { desired: 4, reason: "scale_out" },
      ],
      ["3,000 windows, max 4: bounded by max", { backlog: 3000 }, { desired: 4, reason: "scale_out" }],
      ["3,000 windows, max 1: stays at the one", { backlog: 3000, group: { desired: 1, min: 0, max: 1 } }, { desired: 1, reason: "steady" }],
      ["500 windows on one instance: steady", { backlog: 500 }, { desired: 1, reason: "steady" }],
      [
        "the backlog fell to one instance's worth, scaled out 5 min ago: cool-down",
        { backlog: 400, group: { desired: 4, min: 0, max: 4 }, lastScaleOutMs: NOW - 300_000 },
        { desired: 4, reason: "cooldown" },
      ],
      [
        "the same after the cool-down: scale in to what the backlog needs",
        { backlog: 400, group: { desired: 4, min: 0, max: 4 }, lastScaleOutMs: NOW - 600_000 },
        { desired: 1, reason: "scale_in" },
      ],
      ["nothing queued, one instance serving a window: busy", { members: [serving("i-1")] }, { desired: 1, reason: "busy" }],
      ["nothing queued, idle 29 min: wait", { members: [idle("i-1", 1740)] }, { desired: 1, reason: "idle_wait" }],
      ["nothing queued, idle 30 min: to zero", { members: [idle("i-1", 1800)] }, { desired: 0, reason: "idle_stop" }],
      [
        "the least idle member decides",
        { group: { desired: 2, min: 0, max: 4 }, members: [idle("i-1", 5000), idle("i-2", 100)] },
        { desired: 1, reason: "scale_in" },
      ],
      [
        "idle, 3 instances, scaled out 1 min ago: cool-down before going down to one",
        { group: { desired: 3, min: 0, max: 4 }, members: [idle("i-1", 60), idle("i-2", 60), idle("i-3", 60)], lastScaleOutMs: NOW - 60_000 },
        { desired: 3, reason: "cooldown" },
      ],
      ["a silent service judged by its running time (2 h)", { members: [{ ...idle("i-1", 0), status: undefined }] }, { desired: 0, reason: "idle_stop" }],
      ["held by tag: never below one", { hold: "true", members: [idle("i-1", 5000)] }, { desired: 1, reason: "held" }],
      ["held by tag from zero: raised to one", { hold: "true", group: { desired: 0, min: 0, max: 4 }, members: [] }, { desired: 1, reason: "held" }],
      ["a hold that ended: to zero", { hold: "2026-11-25T11:00:00Z", members: [idle("i-1", 5000)] }, { desired: 0, reason: "idle_stop" }],
      ["min 2: the idle stop goes to min, not 0", { group: { desired: 3, min: 2, max: 4 }, members: [idle("i-1", 5000)] }, { desired: 2, reason: "idle_stop" }],
      ["idleStopMinutes 0: one stays warm", { idleStopMinutes: 0, members: [idle("i-1", 99_999)] }, { desired: 1, reason: "steady" }],
      ["already at zero, nothing queued", { group: { desired: 0, min: 0, max: 4 }, members: [] }, { desired: 0, reason: "steady" }],
      [
        "wanted, none in service 31 min after the scale-out, nothing queued: give up (to zero)",
        { members: [], lastScaleOutMs: NOW - 1_860_000 },
        { desired: 0, reason: "idle_stop" },
      ],
      ["wanted, none in service, scale-out time unknown: wait", { members: [], lastScaleOutMs: undefined }, { desired: 1, reason: "idle_wait" }],
      ["max 0: nothing ever runs", { backlog: 10, group: { desired: 0, min: 0, max: 0 }, members: [] }, { desired: 0, reason: "steady" }],
    ];
    for (const [what, change, want] of cases) {
      it(`${what}: ${want.reason} → ${want.desired}`, () => {
        // Act
        const d = scaleDecision({ ...base, ...change });
        // Assess
        expect({ desired: d.desired, reason: d.reason }).to.deep.equal(want);
      });
    }
  });

  describe("scale-in protection follows the service", () => {
    it("protects an instance serving a window, unprotects an idle one, and leaves the rest alone", () => {
      // Prepare
      const members = [serving("i-busy", false), idle("i-idle", 10, true), serving("i-kept", true), idle("i-free", 10, false)];
      // Act
      const d = scaleDecision({ ...base, group: { desired: 4, min: 0, max: 4 }, members });
      // Assess
      expect(d.protection).to.deep.equal([
        { instanceId: "i-busy", protect: true },
        { instanceId: "i-idle", protect: false },
      ]);
    });

    it("does not protect a silent service (it may be hung), and lifts the protection it had", () => {
      const d = scaleDecision({ ...base, members: [{ ...idle("i-1", 0, true), status: undefined }] });
      expect(d.protection).to.deep.equal([{ instanceId: "i-1", protect: false }]);
    });
  });
});
