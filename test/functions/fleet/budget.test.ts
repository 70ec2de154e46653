import { expect } from "chai";
import { budgetFrom, chunks } from "../../../functions/fleet/budget";
import { contextWithRemaining } from "../helpers/fleet-deps";

describe("fleet time budget", () => {
  it("without a Lambda context (a local run) is never exhausted", () => {
    expect(budgetFrom(undefined, 10_000).exhausted()).to.equal(false);
  });

  const cases: Array<{ remaining: number; exhausted: boolean }> = [
    { remaining: 10_001, exhausted: false },
    { remaining: 10_000, exhausted: false },
    { remaining: 9_999, exhausted: true },
  ];
  for (const c of cases) {
    it(`with a 10 s margin and ${c.remaining} ms left is ${c.exhausted ? "" : "not "}exhausted (only less than the margin is)`, () => {
      expect(
        budgetFrom(
          contextWithRemaining(() => c.remaining),
          10_000,
        ).exhausted(),
      ).to.equal(c.exhausted);
    });
  }

  it("reads the remaining time on each check, not once", () => {
    // Prepare
    let remaining = 60_000;
    const budget = budgetFrom(
      contextWithRemaining(() => remaining),
      10_000,
    );
    // Act
    const before = budget.exhausted();
    remaining = 5_000;
    // Assess
    expect([before, budget.exhausted()]).to.deep.equal([false, true]);
  });

  it("chunks splits into pieces of at most the size, in order, the last one shorter", () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).to.deep.equal([[1, 2], [3, 4], [5]]);
    expect(chunks([], 25)).to.deep.equal([]);
  });
});
