import { setTimeout as delay } from "node:timers/promises";

/**
 * The local run's simulated clock. With `--speed n`, one real second is n simulated seconds:
 * schedules fire n times sooner, SQS timers run n times faster (the SQS clock proxy), boot
 * delays and task durations are given in simulated time, and the Lambda sandboxes read this
 * clock through `Date`, so ages they compute (an orphan's runtime, a parameter's age) agree
 * with the timers around them.
 */
export class SimClock {
  constructor(
    readonly speed: number,
    readonly t0: number = Date.now(),
  ) {
    if (!(speed >= 1) || !Number.isFinite(speed)) throw new Error(`speed must be a number ≥ 1 (got ${speed})`);
  }

  /** Simulated epoch milliseconds. */
  now(): number {
    return this.t0 + (Date.now() - this.t0) * this.speed;
  }

  /** Real milliseconds that a simulated duration takes. */
  real(simMs: number): number {
    return simMs / this.speed;
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts (a sleep that a stop cuts short); `ref: false` lets the process exit meanwhile. */
export async function sleepUnless(ms: number, signal: AbortSignal, ref = true): Promise<boolean> {
  try {
    await delay(ms, undefined, { signal, ref });
    return true;
  } catch {
    return false;
  }
}

/** Runs `tick` every `ms` (from the end of the last one) until `signal` aborts; resolves once the loop ends. */
export async function everyUntil(ms: number, signal: AbortSignal, tick: () => Promise<void>, ref = true): Promise<void> {
  while ((await sleepUnless(ms, signal, ref)) && !signal.aborted) await tick();
}

/** Resolves with the promise's value, or with "timeout" after ms. */
export async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  const expired = new AbortController();
  try {
    return await Promise.race([promise, delay(ms, "timeout" as const, { signal: expired.signal })]);
  } finally {
    expired.abort();
  }
}
