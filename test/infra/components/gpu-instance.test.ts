import { expect } from "chai";
import { gpuInstanceDefaults, resolveGpuInstanceArgs } from "../../../infra/components/gpu-instance";

const NAMES = { nameTag: "encache-gpu-worker-dev", instanceIdParameter: "/encache/dev/gpu/instance_id" };

describe("component validators and defaults (pure, no mocks)", () => {
  describe("resolveGpuInstanceArgs", () => {
    it("keeps the Name tag and the id parameter it is given, and defaults the AMI parameter", () => {
      const r = resolveGpuInstanceArgs({ instanceType: "g5.xlarge", ...NAMES });
      expect(r.nameTag).to.equal("encache-gpu-worker-dev");
      expect(r.instanceIdParameter).to.equal("/encache/dev/gpu/instance_id");
      expect(r.ami).to.equal(gpuInstanceDefaults.ami);
    });
    it("rejects a relative id parameter and an empty Name tag", () => {
      expect(() => resolveGpuInstanceArgs({ instanceType: "g5.xlarge", nameTag: "", instanceIdParameter: "encache/gpu" })).to.throw(
        /absolute SSM path.*nameTag must not be empty/,
      );
    });
    for (const t of ["g5.xlarge", "p4d.24xlarge", "g6e.2xlarge", "inf2.xlarge", "g4dn.metal"]) {
      it(`accepts ${t}`, () => expect(resolveGpuInstanceArgs({ instanceType: t, ...NAMES }).instanceType).to.equal(t));
    }
    const bad: Array<[string, RegExp]> = [
      ["g5", /not an EC2 instance type/],
      ["G5.XLARGE", /not an EC2 instance type/],
      ["m5.large", /no GPU/],
      ["t3.micro", /no GPU/],
    ];
    for (const [t, reason] of bad) {
      it(`rejects ${t}`, () => expect(() => resolveGpuInstanceArgs({ instanceType: t, ...NAMES })).to.throw(reason));
    }
  });
});
