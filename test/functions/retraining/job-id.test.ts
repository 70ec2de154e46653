import { expect } from "chai";
import { jobIdFor } from "../../../functions/retraining/job-id";

describe("retraining/launcher units", () => {
  describe("job id", () => {
    it("is a stable UUID v5 per message id", () => {
      expect(jobIdFor("m-1")).to.equal(jobIdFor("m-1")).and.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(jobIdFor("m-1")).to.not.equal(jobIdFor("m-2"));
    });
  });
});
