import fc from "fast-check";

/**
 * How the fuzz properties run. Every handler's property runs FUZZ_RUNS times; each run is one
 * generated event (an SQS batch of 1–10 records, up to 40 for the launcher, or a queue of adverts
 * for the pool's pickup). The seed is fixed so a run is the same every time; FUZZ_SEED replays
 * another one (fast-check prints the seed and the shrunk counterexample's path on failure).
 *
 * The default is small so the suite stays quick; the size is `FUZZ_RUNS=10000 npm run
 * test:fuzz`, which takes minutes on a 2-core machine (times per handler in each run's output).
 */
export const DEFAULT_FUZZ_RUNS = 500;
export const DEFAULT_FUZZ_SEED = 20_261_116;

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`${name} must be an integer (got ${JSON.stringify(raw)})`);
  return n;
}

export const FUZZ_RUNS = envInt("FUZZ_RUNS", DEFAULT_FUZZ_RUNS);
export const FUZZ_SEED = envInt("FUZZ_SEED", DEFAULT_FUZZ_SEED);

/** Mocha's per-test timeout for a property: generous, since a run of 10,000 events takes seconds. */
export const PROPERTY_TIMEOUT_MS = 600_000;

/**
 * Runs `property` FUZZ_RUNS times from FUZZ_SEED and reports the wall time. On failure the error
 * names the seed and path to replay (`FUZZ_SEED=<seed>`; fast-check's own report has the path).
 */
export async function checkProperty<Ts extends [unknown, ...unknown[]]>(name: string, property: fc.IAsyncPropertyWithHooks<Ts>): Promise<void> {
  const started = performance.now();
  try {
    await fc.assert(property, { numRuns: FUZZ_RUNS, seed: FUZZ_SEED });
  } catch (error) {
    // Counterexamples can hold 256 KiB bodies: keep the report readable.
    const full = error instanceof Error ? error.message : String(error);
    const cut = (text: string) => (text.length > 6000 ? `${text.slice(0, 3000)}\n…(${text.length - 6000} characters cut)…\n${text.slice(-3000)}` : text);
    const cause = error instanceof Error && error.cause instanceof Error ? `\nCaused by: ${cut(error.cause.message)}` : "";
    const message = `${cut(full)}${cause}`;
    // Mocha prints the cause too: cut it the same way.
    if (error instanceof Error) error.message = cut(full);
    throw new Error(`fuzz property "${name}" failed; replay with FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}\n${message}`, { cause: error });
  }
  const seconds = (performance.now() - started) / 1000;
  if (process.env.FUZZ_QUIET === undefined) console.log(`      ${name}: ${FUZZ_RUNS} events in ${seconds.toFixed(1)} s (seed ${FUZZ_SEED})`);
}
