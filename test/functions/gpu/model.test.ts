import { expect } from "chai";
import { Limiter } from "../../../functions/gpu/model";

describe("gpu gateway: the model's concurrency limit (functions/gpu/model.ts)", () => {
  const cases = [
    { limit: 1, callers: 4 },
    { limit: 2, callers: 5 },
    { limit: 3, callers: 3 },
  ];
  for (const c of cases)
    it(`limit ${c.limit}, ${c.callers} callers: never more than ${c.limit} at once, turns in arrival order`, async () => {
      const limiter = new Limiter(c.limit);
      const order: number[] = [];
      const releases: Array<() => void> = [];
      const turns = Array.from({ length: c.callers }, (_, i) =>
        limiter.acquire().then((release) => {
          order.push(i);
          releases.push(release!);
        }),
      );
      await Promise.resolve();
      await Promise.resolve();
      expect(limiter.active).to.equal(Math.min(c.limit, c.callers));
      expect(limiter.waiting).to.equal(Math.max(0, c.callers - c.limit));
      while (order.length < c.callers) {
        const release = releases.shift()!;
        release();
        release(); // a second release is ignored
        await new Promise((r) => setImmediate(r));
        expect(limiter.active).to.be.at.most(c.limit);
      }
      await Promise.all(turns);
      expect(order).to.deep.equal(Array.from({ length: c.callers }, (_, i) => i));
    });

  it("turnAway sends every waiter away at once (undefined), keeps the holders, and later callers still queue", async () => {
    // Prepare: two slots held, three waiters
    const limiter = new Limiter(2);
    const held = await Promise.all([limiter.acquire(), limiter.acquire()]);
    const waiters = [limiter.acquire(), limiter.acquire(), limiter.acquire()];
    // Act
    const turnedAway = limiter.turnAway();
    // Assess
    expect(turnedAway).to.equal(3);
    expect(await Promise.all(waiters)).to.deep.equal([undefined, undefined, undefined]);
    expect(limiter.waiting).to.equal(0);
    expect(limiter.active).to.equal(2);
    const later = limiter.acquire();
    expect(limiter.waiting).to.equal(1);
    held[0]!();
    expect(await later).to.be.a("function");
    expect(limiter.active).to.equal(2);
  });

  it("refuses a limit below 1", () => {
    expect(() => new Limiter(0)).to.throw(/≥ 1/);
  });
});
