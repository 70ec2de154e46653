import { expect } from "chai";
import { parseWindowPayload, windowKey } from "../../../functions/ingest/payload";

describe("ingest/payload (pure)", () => {
  it("keeps a valid window whole, extra keys included", () => {
    const body = { sessionId: "s1", userId: "u1", windowIndex: 2, frameCount: 30, extra: { nested: true } };

    expect(parseWindowPayload(JSON.stringify(body))).to.deep.equal({ ok: true, payload: body });
  });

  // The reason goes into the quarantined copy's `quarantine-reason` attribute: it must name each
  // bad field, and say "body" when the problem is the whole document.
  const reasons: Array<[string, unknown, string]> = [
    ["a body that is not an object", [1], "schema: body: Invalid input: expected object, received array"],
    [
      "several bad fields, each named, separated by '; '",
      { userId: "", windowIndex: -1, frameCount: 0 },
      "schema: sessionId: Invalid input: expected string, received undefined; userId: Too small: expected string to have >=1 characters; windowIndex: Too small: expected number to be >=0",
    ],
  ];
  for (const [what, body, reason] of reasons) {
    it(`names the problem of ${what}`, () => {
      expect(parseWindowPayload(JSON.stringify(body))).to.deep.equal({ ok: false, reason });
    });
  }

  it("says a body that is not JSON is not JSON", () => {
    const parsed = parseWindowPayload("{oops");

    expect(parsed.ok).to.equal(false);
    expect(parsed.ok ? "" : parsed.reason).to.match(/^body is not JSON: /);
  });

  it("keys a window by its session and index (fixed vector)", () => {
    expect(windowKey({ sessionId: "s-9", windowIndex: 4 })).to.equal("s-9/4");
  });
});
