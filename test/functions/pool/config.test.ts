import { expect } from "chai";
import { parseRefillConfig } from "../../../functions/pool/config";
import { POOL_TAG, TABLE } from "../helpers/pool-fakes";
import { REFILL_DLQ, CLS } from "../helpers/pool-refill";

describe("pool refill", () => {
  describe("environment", () => {
    const env = {
      POOL_CLASSES: JSON.stringify([CLS]),
      CLAIM_TABLE_NAME: TABLE,
      POOL_TAG,
      QUARANTINE_QUEUE_URL: REFILL_DLQ,
    };
    it("parses POOL_CLASSES and defaults the lease", () => {
      expect(parseRefillConfig(env)).to.deep.equal({ classes: [CLS], claimTableName: TABLE, poolTag: POOL_TAG, leaseSeconds: 300, quarantineQueueUrl: REFILL_DLQ });
    });
    it("accepts a class with several instance types", () => {
      const cls = { ...CLS, instanceTypes: ["g5.xlarge", "g6.xlarge"] };
      expect(parseRefillConfig({ ...env, POOL_CLASSES: JSON.stringify([cls]) }).classes).to.deep.equal([cls]);
    });
    const bad: Array<[string, Record<string, string>, RegExp]> = [
      ["POOL_CLASSES not JSON", { POOL_CLASSES: "[" }, /POOL_CLASSES is invalid \(must be JSON; got "\["\)/],
      ["an empty class list", { POOL_CLASSES: "[]" }, /POOL_CLASSES/],
      ["a missing table", { CLAIM_TABLE_NAME: "" }, /CLAIM_TABLE_NAME is required/],
      ["a lease over an hour", { REFILL_LEASE_SECONDS: "3601" }, /REFILL_LEASE_SECONDS/],
    ];
    for (const [title, override, message] of bad) {
      it(`rejects ${title}`, () => {
        expect(() => parseRefillConfig({ ...env, ...override })).to.throw(message);
      });
    }
  });
});
