/**
 * Seeded randomness for the chaos run, so a failing run replays (`--seed`). Traffic draws from one
 * stream in a fixed order. Faults are drawn per caller and operation (the n-th RunTask of the
 * retraining launcher gets the same fate in every run of a seed), not from one shared stream: calls
 * of different functions interleave differently from run to run, and a shared stream would hand
 * each fault to whichever call happened to come next.
 */

/** mulberry32: tiny, fast, and good enough to pick faults and message shapes. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over the parts: a stable 32-bit seed for a named stream. */
export function streamSeed(...parts: Array<string | number>): number {
  let h = 0x811c9dc5;
  for (const ch of parts.join("\u0000")) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** [0, 1) */
  float(): number {
    return this.next();
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick: no items");
    return items[Math.floor(this.next() * items.length)] as T;
  }
  /** Fisher–Yates, in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }
}

/**
 * Per (caller, operation) streams: the n-th call of an operation by a caller draws from the n-th
 * position of its own stream.
 */
export class KeyedStreams {
  private readonly streams = new Map<string, Rng>();
  constructor(private readonly seed: number) {}
  for(...key: string[]): Rng {
    const name = key.join("/");
    let rng = this.streams.get(name);
    if (!rng) {
      rng = new Rng(streamSeed(this.seed, name));
      this.streams.set(name, rng);
    }
    return rng;
  }
}
