import { expect } from "chai";
import { gpuInstanceDefaults, resolveGpuInstanceArgs } from "../../../infra/components/gpu-instance";

describe("component validators and defaults (pure, no mocks)", () => {
  describe("resolveGpuInstanceArgs", () => {
    it("defaults the Name tag and the id parameter to the seed's", () => {
      const r = resolveGpuInstanceArgs({ instanceType: "g5.xlarge" });
      expect(r.nameTag).to.equal("encache-gpu-worker");
      expect(r.instanceIdParameter).to.equal("/encache/gpu/instance_id");
      expect(r.amiParameter).to.equal(gpuInstanceDefaults.amiParameter);
    });
    for (const t of ["g5.xlarge", "p4d.24xlarge", "g6e.2xlarge", "inf2.xlarge", "g4dn.metal"]) {
      it(`accepts ${t}`, () => expect(resolveGpuInstanceArgs({ instanceType: t }).instanceType).to.equal(t));
    }
    const bad: Array<[string, RegExp]> = [
      ["g5", /not an EC2 instance type/],
      ["G5.XLARGE", /not an EC2 instance type/],
      ["m5.large", /no GPU/],
      ["t3.micro", /no GPU/],
    ];
    for (const [t, reason] of bad) {
      it(`rejects ${t}`, () => expect(() => resolveGpuInstanceArgs({ instanceType: t })).to.throw(reason));
    }
  });
});
