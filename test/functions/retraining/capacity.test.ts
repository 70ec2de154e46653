import { expect } from "chai";
import { LaunchSlots } from "../../../functions/retraining/capacity";

describe("retraining/launcher units", () => {
  describe("launch slots", () => {
    it("counts running tasks and this batch's launches against the cap, and a failed launch gives its slot back", () => {
      const slots = new LaunchSlots(1, 3);
      expect([slots.tryTake(), slots.tryTake(), slots.tryTake()]).to.deep.equal([true, true, false]);
      slots.release();
      expect(slots.tryTake()).to.equal(true);
      expect(slots.inUse).to.equal(3);
    });
  });
});
