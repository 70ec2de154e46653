import { expect } from "chai";
import { poolLaunchTemplateDefaults, resolvePoolLaunchTemplateArgs } from "../../../infra/components/pool-launch-template";

describe("PoolLaunchTemplate args", () => {
  it("fills the defaults", () => {
    expect(resolvePoolLaunchTemplateArgs({ instanceType: "m7i.large", membershipTags: { "encache:pool": "p" } })).to.deep.equal({
      ...poolLaunchTemplateDefaults,
      instanceType: "m7i.large",
      membershipTags: { "encache:pool": "p" },
    });
  });
  const invalid: Array<[string, Parameters<typeof resolvePoolLaunchTemplateArgs>[0], RegExp]> = [
    ["a malformed type", { instanceType: "big", membershipTags: { a: "b" } }, /instanceType "big"/],
    ["a private AMI parameter", { instanceType: "m7i.large", amiParameter: "/my/ami", membershipTags: { a: "b" } }, /amiParameter/],
    ["a tiny root volume", { instanceType: "m7i.large", rootVolumeGiB: 4, membershipTags: { a: "b" } }, /rootVolumeGiB/],
    ["no membership tags", { instanceType: "m7i.large", membershipTags: {} }, /membershipTags/],
  ];
  for (const [title, args, message] of invalid) {
    it(`rejects ${title}`, () => expect(() => resolvePoolLaunchTemplateArgs(args)).to.throw(message));
  }
});
