import { expect } from "chai";
import type * as RefillEntry from "../../../functions/pool/refill";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { POOL_TAG, TABLE } from "../helpers/pool-fakes";
import { CLS, REFILL_DLQ } from "../helpers/pool-refill";

/** What the entry module parses at import, as the infra sets it. */
const ENV: Record<string, string> = {
  POOL_CLASSES: JSON.stringify([CLS]),
  CLAIM_TABLE_NAME: TABLE,
  POOL_TAG,
  POOL_TAG_KEY: "encache:pool",
  POOL_CLASS_TAG_KEY: "encache:pool-class",
  REFILL_LEASE_SECONDS: "90",
  QUARANTINE_QUEUE_URL: REFILL_DLQ,
};

describe("pool refill entry module", () => {
  const saved: Record<string, string | undefined> = {};
  let entry: typeof RefillEntry;

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    // Dynamic: the entry module parses process.env at import, as at a Lambda cold start.
    entry = await import("../../../functions/pool/refill.js");
  });

  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("wires the refill handler to the environment's config, the wall clock and AWS clients", () => {
    const deps = entry.defaultDeps(ENV);

    expect(deps.config).to.deep.equal({
      classes: [CLS],
      claimTableName: TABLE,
      poolTag: POOL_TAG,
      poolTagKey: "encache:pool",
      poolClassTagKey: "encache:pool-class",
      leaseSeconds: 90,
      quarantineQueueUrl: REFILL_DLQ,
    });
    expect(deps.clock).to.equal(Date.now);
    for (const client of [deps.ec2, deps.dynamodb, deps.sqs]) expect(client.send, "an AWS client").to.be.a("function");
    expect(deps.logger.info).to.be.a("function");
    expect(deps.metrics.publishStoredMetrics).to.be.a("function");
    expect(entry.handler).to.be.a("function");
    expect(entry.createHandler).to.equal(createRefillHandler);
  });
});
