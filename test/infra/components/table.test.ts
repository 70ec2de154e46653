import { expect } from "chai";
import { validateTableArgs } from "../../../infra/components/table";

describe("shared components: Table and QueueSchedule validators (pure)", () => {
  describe("validateTableArgs", () => {
    it("accepts a table whose keys and index keys are all declared", () => {
      expect(() =>
        validateTableArgs({
          hashKey: "job_id",
          attributes: { job_id: "S", status: "S", completed_at: "N" },
          globalSecondaryIndexes: [{ name: "status-completed_at", hashKey: "status", rangeKey: "completed_at" }],
        }),
      ).to.not.throw();
    });
    const bad: Array<[string, Parameters<typeof validateTableArgs>[0], RegExp]> = [
      ["an undeclared hash key", { hashKey: "id", attributes: {} }, /"id" has no type/],
      ["an undeclared index key", { hashKey: "id", attributes: { id: "S" }, globalSecondaryIndexes: [{ name: "g", hashKey: "x" }] }, /"x" has no type/],
      ["a declared attribute no key uses", { hashKey: "id", attributes: { id: "S", extra: "S" } }, /"extra" is not a key/],
      [
        "duplicate index names",
        {
          hashKey: "id",
          attributes: { id: "S", a: "S" },
          globalSecondaryIndexes: [
            { name: "g", hashKey: "a" },
            { name: "g", hashKey: "a" },
          ],
        },
        /unique/,
      ],
    ];
    for (const [name, args, reason] of bad) it(`rejects ${name}`, () => expect(() => validateTableArgs(args)).to.throw(reason));
  });
});
