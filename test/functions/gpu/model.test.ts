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
          releases.push(release);
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

  it("refuses a limit below 1", () => {
    expect(() => new Limiter(0)).to.throw(/≥ 1/);
  });
});
