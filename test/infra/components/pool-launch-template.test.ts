import { expect } from "chai";
import { amiResolvedAtLaunch, poolLaunchTemplateDefaults, resolvePoolLaunchTemplateArgs } from "../../../infra/components/pool-launch-template";

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
  it("names the AMI by its SSM parameter, for EC2 to resolve at each launch", () => {
    expect(amiResolvedAtLaunch("/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64")).to.equal(
      "resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
    );
  });
});
