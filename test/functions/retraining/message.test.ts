import { expect } from "chai";
import { parseRetrainingMessage, strategyOf } from "../../../functions/retraining/message";

describe("retraining/launcher units", () => {
  describe("message", () => {
    it("accepts the seed's body and ignores extra keys", () => {
      expect(parseRetrainingMessage(JSON.stringify({ model_name: "PascalStrategy", trigger: "manual", extra: 1 }))).to.deep.equal({
        ok: true,
        message: { modelName: "PascalStrategy", trigger: "manual" },
      });
    });

    it("strategy is the model name's segment before the first '-', as written (the seed's text, not its tag example)", () => {
      expect(strategyOf("PascalStrategy")).to.equal("PascalStrategy");
      expect(strategyOf("PascalStrategy-btc-v2")).to.equal("PascalStrategy");
    });
  });
});
