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
      POOL_TAG_KEY: "encache:pool",
      POOL_CLASS_TAG_KEY: "encache:pool-class",
      REFILL_LEASE_SECONDS: "300",
      QUARANTINE_QUEUE_URL: REFILL_DLQ,
    };
    it("parses POOL_CLASSES, the tag keys and the lease", () => {
      // Act
      const config = parseRefillConfig(env);

      // Assess
      expect(config).to.deep.equal({
        classes: [CLS],
        claimTableName: TABLE,
        poolTag: POOL_TAG,
        poolTagKey: "encache:pool",
        poolClassTagKey: "encache:pool-class",
        leaseSeconds: 300,
        quarantineQueueUrl: REFILL_DLQ,
      });
    });
    it("accepts a class with several instance types", () => {
      const cls = { ...CLS, instanceTypes: ["g5.xlarge", "g6.xlarge"] };
      expect(parseRefillConfig({ ...env, POOL_CLASSES: JSON.stringify([cls]) }).classes).to.deep.equal([cls]);
    });
    const bad: Array<[string, Record<string, string>, RegExp]> = [
      ["POOL_CLASSES not JSON", { POOL_CLASSES: "[" }, /POOL_CLASSES is invalid \(must be JSON; got "\["\)/],
      ["a class without its launch template", { POOL_CLASSES: JSON.stringify([{ ...CLS, launchTemplateId: undefined }]) }, /POOL_CLASSES is invalid/],
      ["a missing table", { CLAIM_TABLE_NAME: "" }, /CLAIM_TABLE_NAME is required/],
      ["a missing tag key", { POOL_TAG_KEY: "" }, /POOL_TAG_KEY is required/],
      ["a lease that is no whole number", { REFILL_LEASE_SECONDS: "5m" }, /REFILL_LEASE_SECONDS is invalid/],
    ];
    for (const [title, override, message] of bad) {
      it(`rejects ${title}`, () => {
        expect(() => parseRefillConfig({ ...env, ...override })).to.throw(message);
      });
    }
  });
});
