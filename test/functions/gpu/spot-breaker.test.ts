import { expect } from "chai";
import { SPOT_INTERRUPTION_TAG_PREFIX, spotInterruptionTag } from "../../../functions/gpu/group-tags";
import { interruptionTagCap, onDemandPercentWanted, type SpotBreakerSettings, spotBreaker } from "../../../functions/gpu/spot-breaker";

const NOW = Date.parse("2026-11-25T12:00:00Z");
const MIN = 60_000;
/** The defaults: 2 interruptions within 15 minutes, 30 minutes on demand. */
const DEFAULTS: SpotBreakerSettings = { interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 };

/** Interruption tags at these minutes before now (instance `i-<n>` for the n-th). */
const at = (...minutesAgo: number[]): Record<string, string> =>
  Object.fromEntries(minutesAgo.map((m, i) => [spotInterruptionTag(`i-${i + 1}`), new Date(NOW - m * MIN).toISOString()]));

/** The rule as stated, over every record: some N within W, and now before the N-th plus C (the latest such end). */
function naive(minutesAgo: number[], s: SpotBreakerSettings): { open: boolean; untilMs?: number } {
  const times = minutesAgo.map((m) => NOW - m * MIN).sort((a, b) => a - b);
  const ends = times.flatMap((t, k) =>
    k >= s.interruptions - 1 && t - times[k - s.interruptions + 1]! <= s.windowMinutes * MIN ? [t + s.cooldownMinutes * MIN] : [],
  );
  const untilMs = ends.length > 0 ? Math.max(...ends) : undefined;
  return { open: untilMs !== undefined && NOW < untilMs, ...(untilMs !== undefined ? { untilMs } : {}) };
}

describe("gpu/spot-breaker (pure)", () => {
  describe("open or closed", () => {
    const cases: Array<[string, Record<string, string>, Partial<SpotBreakerSettings>, { open: boolean; untilMinutesFromNow?: number; inWindow: number }]> = [
      ["no interruption: closed", {}, {}, { open: false, inWindow: 0 }],
      ["one interruption: closed (the N-th is what opens it)", at(1), {}, { open: false, inWindow: 1 }],
      ["the second within 15 minutes of the first: open for 30 minutes from the second", at(10, 1), {}, { open: true, untilMinutesFromNow: 29, inWindow: 2 }],
      ["two exactly 15 minutes apart: within the window", at(16, 1), {}, { open: true, untilMinutesFromNow: 29, inWindow: 1 }],
      ["two 16 minutes apart: never within one window, closed", at(17, 1), {}, { open: false, inWindow: 1 }],
      ["opened 29 minutes ago: still open for a minute", at(35, 29), {}, { open: true, untilMinutesFromNow: 1, inWindow: 0 }],
      ["opened exactly 30 minutes ago: the cool-down is over", at(35, 30), {}, { open: false, inWindow: 0 }],
      ["a later trip extends the cool-down", at(40, 35, 5, 2), {}, { open: true, untilMinutesFromNow: 28, inWindow: 2 }],
      ["an interruption after an expired trip, alone: closed", at(50, 45, 1), {}, { open: false, inWindow: 1 }],
      ["three needed: two are not enough", at(10, 1), { interruptions: 3 }, { open: false, inWindow: 2 }],
      ["three needed, three within the window: open", at(14, 10, 1), { interruptions: 3 }, { open: true, untilMinutesFromNow: 29, inWindow: 3 }],
      ["one needed: any interruption opens it", at(5), { interruptions: 1 }, { open: true, untilMinutesFromNow: 25, inWindow: 1 }],
      ["a time ahead of the scaler's clock still counts", at(3, -1), {}, { open: true, untilMinutesFromNow: 31, inWindow: 1 }],
    ];
    for (const [label, tags, settings, want] of cases) {
      it(label, () => {
        // Prepare
        const s = { ...DEFAULTS, ...settings };
        // Act
        const state = spotBreaker(tags, NOW, s);
        // Assess
        expect(state.open).to.equal(want.open);
        expect(state.inWindow).to.equal(want.inWindow);
        if (want.untilMinutesFromNow !== undefined) expect(state.trip?.untilMs).to.equal(NOW + want.untilMinutesFromNow * MIN);
      });
    }
  });

  it("reports the trip: the time of its N-th interruption and how many fell within its window", () => {
    // Act
    const state = spotBreaker(at(14, 10, 1), NOW, DEFAULTS);
    // Assess
    expect(state.trip).to.deep.equal({ atMs: NOW - MIN, interruptions: 3, untilMs: NOW + 29 * MIN });
  });

  it("ignores the group's other tags", () => {
    const state = spotBreaker({ ...at(10, 1), "encache:gpu-hold": "true", "encache:scaled-out-at": new Date(NOW).toISOString() }, NOW, DEFAULTS);
    expect(state.recorded.map((r) => r.instanceId)).to.deep.equal(["i-1", "i-2"]);
  });

  describe("prunes what can no longer matter", () => {
    const cases: Array<[string, Record<string, string>, Partial<SpotBreakerSettings>, string[]]> = [
      ["nothing older than window + cool-down (45 minutes): nothing", at(44, 30, 1), {}, []],
      ["records older than 45 minutes", at(60, 46, 45, 1), {}, ["i-1", "i-2", "i-3"]],
      ["beyond the cap (4 with the defaults), the oldest first", at(40, 30, 20, 10, 5, 1), {}, ["i-1", "i-2"]],
      ["a value that is no time", { [spotInterruptionTag("i-bad")]: "yesterday", ...at(1) }, {}, ["i-bad"]],
      ["a key naming no instance", { [SPOT_INTERRUPTION_TAG_PREFIX]: new Date(NOW).toISOString() }, {}, [""]],
    ];
    for (const [label, tags, settings, pruned] of cases) {
      it(label, () => {
        // Act
        const state = spotBreaker(tags, NOW, { ...DEFAULTS, ...settings });
        // Assess
        expect(state.prune).to.deep.equal(pruned.map((id) => spotInterruptionTag(id)).sort());
        expect(state.recorded.filter((r) => state.prune.includes(r.key))).to.deep.equal([]);
      });
    }
  });

  describe("the cap decides as exactly as every record would", () => {
    // Every arrangement of interruptions at whole minutes over the last hour, judged with all its
    // records and with only what the breaker keeps: the same verdict, the same end.
    const settings: SpotBreakerSettings[] = [
      DEFAULTS,
      { interruptions: 3, windowMinutes: 10, cooldownMinutes: 25 },
      { interruptions: 2, windowMinutes: 7, cooldownMinutes: 30 },
    ];
    for (const s of settings) {
      it(`${s.interruptions} in ${s.windowMinutes} min, ${s.cooldownMinutes} min cool-down (cap ${interruptionTagCap(s)})`, () => {
        let seed = 7;
        const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
        for (let run = 0; run < 500; run += 1) {
          // Prepare
          const minutes = Array.from({ length: 2 + Math.floor(random() * 14) }, () => Math.floor(random() * 60));
          const tags = at(...minutes);
          const uncapped = naive(minutes, s);
          // Act
          const state = spotBreaker(tags, NOW, s);
          const again = spotBreaker(Object.fromEntries(state.recorded.map((r) => [r.key, tags[r.key]!])), NOW, s);
          // Assess
          expect(again.open, `minutes ago ${minutes.join(",")}`).to.equal(uncapped.open);
          if (uncapped.open) expect(again.trip?.untilMs).to.equal(uncapped.untilMs);
          expect(state.recorded.length).to.be.at.most(interruptionTagCap(s));
        }
      });
    }
  });

  it("caps at N + (N − 1) × ⌈C / W⌉", () => {
    expect(interruptionTagCap(DEFAULTS)).to.equal(4);
    expect(interruptionTagCap({ interruptions: 3, windowMinutes: 10, cooldownMinutes: 25 })).to.equal(9);
    expect(interruptionTagCap({ interruptions: 1, windowMinutes: 10, cooldownMinutes: 600 })).to.equal(1);
  });

  describe("the on-demand share above the base", () => {
    const cases: Array<[boolean, number, number]> = [
      [false, 75, 25],
      [true, 75, 100],
      [false, 100, 0],
      [true, 100, 100],
    ];
    for (const [open, spotPercent, wanted] of cases) {
      it(`breaker ${open ? "open" : "closed"}, spotPercent ${spotPercent}: ${wanted} %`, () => {
        expect(onDemandPercentWanted(open, spotPercent)).to.equal(wanted);
      });
    }
  });
});
