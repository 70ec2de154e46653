/**
 * The scenarios' key timings (local/scenarios/scenario.ts): wall milliseconds and the simulated
 * seconds they stood for, and the marks the HTML report draws them with.
 */
import { expect } from "chai";
import { keyTimings, timing } from "../../../local/scenarios/scenario";

describe("scenario timings", () => {
  describe("timing", () => {
    it("gives the wall milliseconds and the simulated seconds at the run's speed", () => {
      expect(timing(2_600, 60)).to.deep.equal({ wallMs: 2_600, simulatedSeconds: 156 });
      expect(timing(2_613, 60)).to.deep.equal({ wallMs: 2_613, simulatedSeconds: 156.8 });
      expect(timing(1_000, 1)).to.deep.equal({ wallMs: 1_000, simulatedSeconds: 1 });
    });

    it("keeps null for an event that never happened", () => {
      expect(timing(null, 60)).to.equal(null);
      expect(timing(undefined, 60)).to.equal(null);
    });

    it("serialises to exactly the two numbers --json promises", () => {
      expect(JSON.parse(JSON.stringify({ t: timing(1_234.6, 120) }))).to.deep.equal({ t: { wallMs: 1_235, simulatedSeconds: 148.2 } });
    });
  });

  describe("keyTimings", () => {
    it("builds the timings and the report's marks from the instants they run between", () => {
      // Prepare
      const started = 1_000_000;

      // Act
      const out = keyTimings(60, {
        "GPU serving": [started, started + 1_500],
        "GPU up → backlog drained": [started + 1_500, started + 4_100],
        "never happened": [started, null],
        "no anchor": [undefined, started + 10],
      });

      // Assess
      expect(out.timings).to.deep.equal({
        "GPU serving": { wallMs: 1_500, simulatedSeconds: 90 },
        "GPU up → backlog drained": { wallMs: 2_600, simulatedSeconds: 156 },
        "never happened": null,
        "no anchor": null,
      });
      expect(out.marks).to.deep.equal({
        "GPU serving": { fromMs: started, toMs: started + 1_500 },
        "GPU up → backlog drained": { fromMs: started + 1_500, toMs: started + 4_100 },
      });
    });

    it("counts an event seen before its anchor as at the anchor, never negative", () => {
      const out = keyTimings(60, { raced: [5_000, 4_990] });
      expect(out.timings.raced).to.deep.equal({ wallMs: 0, simulatedSeconds: 0 });
      expect(out.marks.raced).to.deep.equal({ fromMs: 5_000, toMs: 5_000 });
    });
  });
});
