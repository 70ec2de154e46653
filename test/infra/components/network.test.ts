import { expect } from "chai";
import { vpcEndpointSpecs, vpcNaming } from "../../../infra/components/network";

describe("Network's VPC endpoints (vpcEndpointSpecs, pure)", () => {
  it("declares nothing by default", () => {
    expect(vpcEndpointSpecs({ region: "us-east-1" })).to.deep.equal([]);
  });

  it("makes S3 and DynamoDB gateway endpoints, leaving the route tables to awsx", () => {
    // Act
    const specs = vpcEndpointSpecs({ region: "eu-west-2", gatewayEndpoints: ["s3", "dynamodb"], tags: { a: "b" } });
    // Assess: no routeTableIds, so awsx's Auto strategy puts each in every route table it made.
    expect(specs).to.deep.equal([
      { serviceName: "com.amazonaws.eu-west-2.s3", vpcEndpointType: "Gateway", tags: { a: "b" } },
      { serviceName: "com.amazonaws.eu-west-2.dynamodb", vpcEndpointType: "Gateway", tags: { a: "b" } },
    ]);
  });

  it("makes interface endpoints with private DNS, leaving subnets and the security group to awsx", () => {
    const specs = vpcEndpointSpecs({ region: "us-east-1", interfaceEndpoints: ["sqs", "ecr.dkr"] });
    expect(specs).to.deep.equal([
      { serviceName: "com.amazonaws.us-east-1.sqs", vpcEndpointType: "Interface", privateDnsEnabled: true, tags: {} },
      { serviceName: "com.amazonaws.us-east-1.ecr.dkr", vpcEndpointType: "Interface", privateDnsEnabled: true, tags: {} },
    ]);
  });
});

describe("Network's awsx VPC name (vpcNaming, pure)", () => {
  const cases: Array<[string, string, string]> = [
    ["platform", "dev", "platform-vpc-dev"],
    ["platform", "prod", "platform-vpc-prod"],
  ];
  for (const [name, environment, want] of cases) {
    it(`${name} in ${environment} is ${want}, aliased to the name it had before the environment was in it`, () => {
      expect(vpcNaming(name, environment)).to.deep.equal({ name: want, aliases: [{ name: `${name}-vpc` }] });
    });
  }

  it("differs between stacks, so awsx's Name tags (all derived from it) do", () => {
    expect(vpcNaming("platform", "dev").name).to.not.equal(vpcNaming("platform", "prod").name);
  });
});
