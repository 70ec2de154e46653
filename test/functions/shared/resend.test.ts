import { expect } from "chai";
import { DEFAULT_RESEND, isRetryableError, type ResendPolicy, withResends } from "../../../functions/shared/resend";
import { conditionFailed } from "../helpers/dynamodb-errors";
import { advance, until, useFakeTime } from "../helpers/fake-time";

/** An error shaped as the SDK raises it once its own attempts are spent. */
function sdkError(name: string, fields: { $fault?: string; $retryable?: unknown; httpStatusCode?: number } = {}): Error {
  const { httpStatusCode, ...rest } = fields;
  return Object.assign(new Error(`${name} happened`), { name, ...rest, ...(httpStatusCode !== undefined ? { $metadata: { httpStatusCode } } : {}) });
}

/** A policy whose pauses are recorded and take no time. */
function recordingPolicy(rounds: number, baseDelayMs = 10): ResendPolicy & { pauses: number[] } {
  const pauses: number[] = [];
  return { rounds, baseDelayMs, pauses, sleep: async (ms) => void pauses.push(ms) };
}

/** A send that fails with `errors` in turn, then answers `value`; counts its calls. */
function scriptedSend<T>(errors: unknown[], value: T): { send: () => Promise<T>; calls: () => number } {
  let calls = 0;
  return {
    send: async () => {
      const error = errors[calls];
      calls += 1;
      if (error !== undefined) throw error;
      return value;
    },
    calls: () => calls,
  };
}

describe("shared/resend", () => {
  describe("isRetryableError: only errors that may go differently next time are resent", () => {
    const cases: Array<{ why: string; error: unknown; retryable: boolean }> = [
      { why: "a connection reset, which never got an HTTP answer", error: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }), retryable: true },
      {
        why: "a timeout the SDK marked retryable, even with a client-fault status",
        error: sdkError("TimeoutError", { $retryable: {}, $fault: "client", httpStatusCode: 400 }),
        retryable: true,
      },
      { why: "a server fault with its HTTP status", error: sdkError("InternalServerError", { $fault: "server", httpStatusCode: 500 }), retryable: true },
      { why: "ThrottlingException", error: sdkError("ThrottlingException", { $fault: "client", httpStatusCode: 400 }), retryable: true },
      { why: "Throttling (the Query API's spelling)", error: sdkError("Throttling", { $fault: "client", httpStatusCode: 400 }), retryable: true },
      { why: "RequestLimitExceeded (EC2)", error: sdkError("RequestLimitExceeded", { $fault: "client", httpStatusCode: 503 }), retryable: true },
      {
        why: "ProvisionedThroughputExceededException (DynamoDB)",
        error: sdkError("ProvisionedThroughputExceededException", { $fault: "client", httpStatusCode: 400 }),
        retryable: true,
      },
      {
        why: "TooManyRequestsException (Lambda, SSM)",
        error: sdkError("TooManyRequestsException", { $fault: "client", httpStatusCode: 429 }),
        retryable: true,
      },
      { why: "a failed condition, which fails the same way again", error: conditionFailed(), retryable: false },
      {
        why: "a client fault that never got an HTTP status (a request the SDK refused to build)",
        error: sdkError("ValidationException", { $fault: "client" }),
        retryable: false,
      },
      { why: "an HTTP answer with no fault class (a 404 from a plain endpoint)", error: sdkError("NotFound", { httpStatusCode: 404 }), retryable: false },
      { why: "a missing resource", error: sdkError("ResourceNotFoundException", { $fault: "client", httpStatusCode: 400 }), retryable: false },
      { why: "a thrown string", error: "ECONNRESET", retryable: false },
      { why: "a thrown object that looks like a server fault but is no Error", error: { name: "InternalServerError", $fault: "server" }, retryable: false },
    ];
    for (const c of cases) {
      it(`${c.retryable ? "resends" : "does not resend"} ${c.why}`, () => {
        expect(isRetryableError(c.error)).to.equal(c.retryable);
      });
    }
  });

  describe("withResends", () => {
    it("answers the first send's result without resending", async () => {
      // Prepare
      const policy = recordingPolicy(4);
      const s = scriptedSend([], "sent");
      // Act
      const result = await withResends(s.send, policy);
      // Assess
      expect(result).to.equal("sent");
      expect(s.calls()).to.equal(1);
      expect(policy.pauses).to.deep.equal([]);
    });

    it("resends a retryable failure after a pause that doubles each round, and answers the send that succeeds", async () => {
      // Prepare
      const policy = recordingPolicy(4, 10);
      const reset = sdkError("TimeoutError", { $retryable: {} });
      const s = scriptedSend([reset, reset, reset], "third resend");
      // Act
      const result = await withResends(s.send, policy);
      // Assess
      expect(result).to.equal("third resend");
      expect(s.calls()).to.equal(4);
      expect(policy.pauses).to.deep.equal([10, 20, 40]);
    });

    it("sends `rounds` times in all, then throws the last failure", async () => {
      // Prepare
      const policy = recordingPolicy(3, 10);
      const errors = [1, 2, 3, 4].map((n) => sdkError("ThrottlingException", { $fault: "client", httpStatusCode: 400, $retryable: { n } }));
      const s = scriptedSend(errors, "never");
      // Act
      const thrown = await withResends(s.send, policy).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(thrown).to.equal(errors[2]);
      expect(s.calls()).to.equal(3);
      expect(policy.pauses).to.deep.equal([10, 20]);
    });

    it("caps the doubling pause at maxDelayMs", async () => {
      // Prepare
      const policy = { ...recordingPolicy(6, 100), maxDelayMs: 300 };
      const reset = sdkError("TimeoutError", { $retryable: {} });
      const s = scriptedSend([reset, reset, reset, reset, reset], "sixth send");
      // Act
      const result = await withResends(s.send, policy);
      // Assess
      expect(result).to.equal("sixth send");
      expect(policy.pauses).to.deep.equal([100, 200, 300, 300, 300]);
    });

    it("stops re-sending once continueWhile says no (checked after each pause), and throws the last failure", async () => {
      // Prepare: time for two re-sends, then none.
      let allowed = 2;
      const policy = { ...recordingPolicy(10, 10), continueWhile: () => allowed-- > 0 };
      const errors = [1, 2, 3, 4].map((n) => sdkError("TimeoutError", { $retryable: { n } }));
      const s = scriptedSend(errors, "never");
      // Act
      const thrown = await withResends(s.send, policy).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(thrown).to.equal(errors[2]);
      expect(s.calls()).to.equal(3);
      expect(policy.pauses).to.deep.equal([10, 20, 40]);
    });

    it("throws a failure not worth repeating at once, without resending it", async () => {
      // Prepare
      const policy = recordingPolicy(4);
      const failed = conditionFailed();
      const s = scriptedSend([failed], "never");
      // Act
      const thrown = await withResends(s.send, policy).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess
      expect(thrown).to.equal(failed);
      expect(s.calls()).to.equal(1);
      expect(policy.pauses).to.deep.equal([]);
    });

    describe("the default policy (fake time)", () => {
      useFakeTime();

      it("sends four times in all, pausing 100, 200 and 400 ms on the clock in between", async () => {
        // Prepare
        const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        const s = scriptedSend([reset, reset, reset, reset], "never");
        const sendsAt: number[] = [];
        const start = Date.now();
        const timed = () => {
          sendsAt.push(Date.now() - start);
          return s.send();
        };
        // Act: fake time moves to just before, then onto, each resend's due time.
        const outcome = withResends(timed).then(
          () => undefined,
          (e: unknown) => e,
        );
        const callsAt: Record<string, number> = {};
        for (const [label, ms] of [
          ["99", 99],
          ["100", 1],
          ["299", 199],
          ["300", 1],
          ["699", 399],
          ["700", 1],
        ] as const) {
          await advance(ms);
          callsAt[label] = s.calls();
        }
        // Assess
        expect(await until(outcome)).to.equal(reset);
        expect(callsAt).to.deep.equal({ "99": 1, "100": 2, "299": 2, "300": 3, "699": 3, "700": 4 });
        expect(sendsAt).to.deep.equal([0, 100, 300, 700]);
        expect(DEFAULT_RESEND).to.include({ rounds: 4, baseDelayMs: 100 });
      });
    });
  });
});
