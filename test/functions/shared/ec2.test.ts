import { expect } from "chai";
import { instancesOf } from "../../../functions/shared/ec2";
import { instance } from "../helpers/fleet-tasks";

describe("shared/ec2 instancesOf (one DescribeInstances page)", () => {
  const cases: Array<{ title: string; page: Parameters<typeof instancesOf>[0]; expected: number[] }> = [
    {
      title: "flattens every reservation's instances, in order",
      page: { Reservations: [{ Instances: [instance(1, 5), instance(2, 5)] }, { Instances: [instance(3, 5)] }] },
      expected: [1, 2, 3],
    },
    { title: "a reservation without an Instances list adds none", page: { Reservations: [{}, { Instances: [instance(4, 5)] }] }, expected: [4] },
    { title: "a page without Reservations has no instances", page: {}, expected: [] },
    { title: "a page with an empty Reservations list has no instances", page: { Reservations: [] }, expected: [] },
  ];
  for (const c of cases) {
    it(c.title, () => {
      expect(instancesOf(c.page)).to.deep.equal(c.expected.map((n) => instance(n, 5)));
    });
  }
});
