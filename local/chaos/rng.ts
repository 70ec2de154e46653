/**
 * Seeded randomness for the chaos run, so a failing run replays (`--seed`). Traffic draws from one
 * stream in a fixed order. Faults are drawn per caller and operation (the n-th RunTask of the
 * retraining launcher gets the same fate in every run of a seed), not from one shared stream: calls
 * of different functions interleave differently from run to run, and a shared stream would hand
 * each fault to whichever call happened to come next.
 */

/** FNV-1a over the parts: a stable 32-bit seed for a named stream. */
function streamSeed(...parts: Array<string | number>): number {
  let h = 0x811c9dc5;
  for (const ch of parts.join("\u0000")) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: tiny, fast, and good enough to pick faults and message shapes. */
export class Rng {
  private a: number;
  constructor(seed: number) {
    this.a = seed >>> 0;
  }
  /** [0, 1) */
  float(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  chance(p: number): boolean {
    return this.float() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick: no items");
    return items[Math.floor(this.float() * items.length)] as T;
  }
  /** Fisher–Yates, in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }
}

/**
 * Per (caller, operation) streams: the n-th call of an operation by a caller draws from the n-th
 * position of its own stream.
 */
export function keyedStreams(seed: number): (...key: string[]) => Rng {
  const streams = new Map<string, Rng>();
  return (...key) => {
    const name = key.join("/");
    const rng = streams.get(name) ?? new Rng(streamSeed(seed, name));
    streams.set(name, rng);
    return rng;
  };
}
