import { expect } from "chai";
import { jobIdFor } from "../../../functions/retraining/job-id";

describe("retraining/launcher units", () => {
  describe("job id", () => {
    it("is a stable UUID v5 per message id", () => {
      expect(jobIdFor("m-1"))
        .to.equal(jobIdFor("m-1"))
        .and.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(jobIdFor("m-1")).to.not.equal(jobIdFor("m-2"));
    });

    // Fixed vectors: RFC 4122 UUID v5 (SHA-1) in the namespace 6f1c7a4e-2b8d-4c0e-9a3f-5d7b1e2c4a68,
    // computed independently with Python's uuid.uuid5(namespace, name). A job id is persisted (state
    // record, task tags) and re-derived on every redelivery, so the derivation must never drift.
    const vectors: Array<[string, string]> = [
      ["m-1", "5ad93687-bc60-5d40-97b3-1bf1fca7fa16"],
      ["0b6f3c2e-1d4a-4f8e-9c7b-2a5d6e8f1b3c", "edf04181-082e-50d1-830f-85a8121261c6"],
      ["é", "b50957bb-893a-50bd-be35-95c3221f99df"],
    ];
    for (const [messageId, jobId] of vectors) {
      it(`is the UUID v5 of the message id in the launcher's namespace: ${JSON.stringify(messageId)} → ${jobId}`, () => {
        expect(jobIdFor(messageId)).to.equal(jobId);
      });
    }
  });
});
