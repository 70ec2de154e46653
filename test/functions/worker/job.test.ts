import { expect } from "chai";
import { initialVisibilitySeconds, parseJob } from "../../../functions/worker/job";

describe("worker: job parsing and visibility (functions/worker/job.ts)", () => {
  it("parses a job with and without an estimate", () => {
    expect(parseJob('{"job_id":"j","type":"t","payload":{"a":1},"estimated_seconds":30}')).to.deep.equal({
      ok: true,
      job: { job_id: "j", type: "t", payload: { a: 1 }, estimated_seconds: 30 },
    });
    expect(parseJob('{"job_id":"j","type":"t","payload":null}').ok).to.equal(true);
  });

  const visibilities: Array<[string, number | undefined, number, number]> = [
    ["2 × the estimate", 90, 1000, 180],
    ["the estimate rounded up", 0.2, 100, 1],
    ["clamped to the maximum", 10_000, 1000, 3600],
    ["the default without an estimate", undefined, 1000, 900],
    ["at least one heartbeat extension (3 × 60 s) when 2 × the estimate is shorter", 10, 60_000, 180],
    ["the maximum when even the heartbeat extension exceeds it", 10, 3_600_000, 3600],
  ];
  for (const [name, estimate, heartbeatMs, expected] of visibilities) {
    it(`sets the initial visibility to ${name}`, () => {
      expect(initialVisibilitySeconds(estimate, { defaultVisibilitySeconds: 900, maxVisibilitySeconds: 3600, heartbeatMs })).to.equal(expected);
    });
  }
});
