import { request } from "node:http";
import { mock } from "node:test";

/**
 * Fake time for unit tests, with Node's `node:test` mock timers: `setTimeout`, `setInterval`
 * and `Date` are fake while a test runs, so a job that "runs 1.3 s" or an idle window of
 * 300 ms costs no real time. Real I/O (the fake ECS agent on 127.0.0.1) still runs: the
 * helpers below let the event loop turn (with the real `setImmediate`, which is not mocked)
 * before each step of fake time.
 *
 * Call `useFakeTime()` inside a `describe`: it installs the clock before each test and removes
 * it after. Mocha keeps its own references to the real timers, so its timeouts still work.
 */
export function useFakeTime(start = Date.UTC(2026, 0, 1)): void {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout", "setInterval", "Date"], now: start }));
  afterEach(() => mock.timers.reset());
}

const realSetImmediate = setImmediate;

/** Lets pending promise callbacks and I/O run: a few real event-loop turns, no fake time. */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((r) => realSetImmediate(r));
}

/** Fake-time steps, small enough that every timer in the tests fires close to its due time. */
const STEP_MS = 5;

/** Moves fake time on by `ms`, letting the event loop turn between steps. */
export async function advance(ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= STEP_MS) {
    await settle();
    mock.timers.tick(Math.min(STEP_MS, left));
  }
  await settle();
}

/** Sleeps `ms` of (fake, while `useFakeTime` is on) time: the length of a job, a slow SQS call. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Moves fake time on until `check` holds; fails after `timeoutMs` of fake time. */
export async function waitFor(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  for (let waited = 0; !check(); waited += STEP_MS) {
    if (waited > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms (fake time) waiting for ${what}`);
    await advance(STEP_MS);
  }
}

/** Moves fake time on until `promise` settles (a worker's shutdown waits on timers). */
export async function until<T>(promise: Promise<T>, timeoutMs = 10_000, what = "the promise"): Promise<T> {
  let done = false;
  const tracked = promise.finally(() => (done = true));
  tracked.catch(() => undefined);
  await waitFor(() => done, timeoutMs, what);
  return tracked;
}

/**
 * `fetch` for TaskProtection's `fetch` option under fake time, over `node:http`. The global
 * fetch (undici) schedules its own timers with the global `setTimeout`; under mock timers those
 * land in the fake clock and, when undici touches them after the clock was reset, corrupt the
 * next test's timers. `node:http` and `AbortSignal.timeout` keep to Node's internal, real timers.
 */
export function httpFetch(url: string, init: RequestInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: init.method, headers: init.headers as Record<string, string>, signal: init.signal ?? undefined, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0 })));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(typeof init.body === "string" ? init.body : undefined);
  });
}
