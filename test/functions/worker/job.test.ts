import { expect } from "chai";
import { heartbeatExtensionSeconds, initialVisibilitySeconds, parseJob } from "../../../functions/worker/job";

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
  const rejected: Array<[string, string | undefined, string]> = [
    ["no body at all", undefined, "body is not JSON"],
    ["a body that is not JSON", "{", "body is not JSON"],
    ["a body that is not an object", "[]", "invalid job: (body) "],
    ["an empty job_id", '{"job_id":"","type":"t","payload":1}', "invalid job: job_id "],
    ["a job_id over 256 characters", JSON.stringify({ job_id: "j".repeat(257), type: "t", payload: 1 }), "invalid job: job_id "],
    ["an empty type", '{"job_id":"j","type":"","payload":1}', "invalid job: type "],
    ["a type over 64 characters", JSON.stringify({ job_id: "j", type: "t".repeat(65), payload: 1 }), "invalid job: type "],
    ["a zero estimate", '{"job_id":"j","type":"t","payload":1,"estimated_seconds":0}', "invalid job: estimated_seconds "],
    ["an estimate over 12 hours", '{"job_id":"j","type":"t","payload":1,"estimated_seconds":43201}', "invalid job: estimated_seconds "],
    ["a job without payload", '{"job_id":"j","type":"t"}', "invalid job: payload "],
  ];
  for (const [name, body, reason] of rejected) {
    it(`rejects ${name} with a reason naming the field`, () => {
      const parsed = parseJob(body);
      expect(parsed.ok).to.equal(false);
      expect(parsed.ok ? "" : parsed.reason.startsWith(reason), parsed.ok ? "" : parsed.reason).to.equal(true);
    });
  }

  it("accepts the longest job_id and type, and a 12-hour estimate", () => {
    const body = JSON.stringify({ job_id: "j".repeat(256), type: "t".repeat(64), payload: 1, estimated_seconds: 43_200 });
    expect(parseJob(body).ok).to.equal(true);
  });

  const extensions: Array<[number, number, number]> = [
    [60_000, 3600, 180],
    [1500, 3600, 5],
    [100, 3600, 1],
    [3_600_000, 3600, 3600],
  ];
  for (const [heartbeatMs, maxVisibilitySeconds, expected] of extensions) {
    it(`extends by 3 beats of ${heartbeatMs} ms, in whole seconds up to the maximum: ${expected} s`, () => {
      expect(heartbeatExtensionSeconds({ heartbeatMs, maxVisibilitySeconds })).to.equal(expected);
    });
  }
});
