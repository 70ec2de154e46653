/**
 * Sending the same request again after the SDK gave up on it (its attempts, or its retry quota, ran
 * out). For a call whose effect may already have applied and whose answer decides what happens
 * next, failing now leaves that unknowable to whoever tries again later; the same request again is
 * either harmless (DeleteMessage of one receipt handle) or resolvable by its writer's identity (a
 * conditional write with this attempt's token). So it is re-sent a few times, with a growing pause.
 */
export interface ResendPolicy {
  /** Sends in all, the first included. */
  rounds: number;
  baseDelayMs: number;
  sleep: (ms: number) => Promise<void>;
  /** The longest pause between two sends; unset, the pause keeps doubling. */
  maxDelayMs?: number;
  /**
   * Checked before each re-send (after its pause): false stops re-sending and the last error is
   * thrown. A caller with a deadline (a Lambda invocation's remaining time) keeps a reserve this way.
   */
  continueWhile?: () => boolean;
}

export const DEFAULT_RESEND: ResendPolicy = {
  rounds: 4,
  baseDelayMs: 100,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Errors worth sending the same request again for: throttling, server faults and anything that
 * never got an HTTP answer (a reset, a timeout). A client fault (validation, access, a missing
 * resource, a failed condition) would fail the same way again.
 */
export function isRetryableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const e = error as Error & { $fault?: string; $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
  if (e.$retryable !== undefined || e.$fault === "server") return true;
  if (/Throttl|RequestLimitExceeded|ProvisionedThroughputExceeded|TooManyRequests/.test(e.name)) return true;
  return e.$metadata?.httpStatusCode === undefined && e.$fault !== "client";
}

/** `send()` until it succeeds, fails with an error not worth repeating, or has been sent `policy.rounds` times. */
export async function withResends<T>(send: () => Promise<T>, policy: ResendPolicy = DEFAULT_RESEND): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await send();
    } catch (error) {
      if (round >= policy.rounds || !isRetryableError(error)) throw error;
      const pause = policy.baseDelayMs * 2 ** (round - 1);
      await policy.sleep(policy.maxDelayMs === undefined ? pause : Math.min(pause, policy.maxDelayMs));
      if (policy.continueWhile && !policy.continueWhile()) throw error;
    }
  }
}
