import { expect } from "chai";
import { GROUP_METRICS, gpuFleetDefaults, groupCapacityInputs, resolveGpuFleetArgs } from "../../../infra/components/gpu-fleet";

const valid = {
  groupName: "encache-gpu-fleet-prod",
  instanceTypes: ["g5.xlarge", "g6.xlarge"],
  maxSize: 4,
  servicePort: 8080,
  statusPath: "/status",
  drainSeconds: 90,
  environment: "prod",
};

describe("GpuFleet args (pure)", () => {
  it("fills the defaults: on-demand only, capacity-optimised, the Deep Learning AMI, 100 GiB, unprotected", () => {
    // Act
    const r = resolveGpuFleetArgs(valid);
    // Assess
    expect(r).to.deep.include({ ...gpuFleetDefaults, ...valid });
  });

  const rejected: Array<[string, Partial<typeof valid> & Record<string, unknown>, RegExp]> = [
    ["no instance type", { instanceTypes: [] }, /at least one type/],
    ["a malformed instance type", { instanceTypes: ["gpu-large"] }, /"gpu-large" is not an EC2 instance type/],
    ["a type named twice", { instanceTypes: ["g5.xlarge", "g5.xlarge"] }, /twice/],
    ["maxSize 0", { maxSize: 0 }, /maxSize must be an integer ≥ 1/],
    ["an on-demand base above max", { onDemandBaseCapacity: 5 }, /onDemandBaseCapacity must be at most maxSize/],
    ["a warm pool with Spot", { spotPercent: 50, warmPool: { minSize: 1 } }, /AWS refuses a warm pool/],
    ["a drain beyond the deregistration delay's 3600 s", { drainSeconds: 3601 }, /drainSeconds/],
    ["a group name with a space", { groupName: "gpu fleet" }, /not a valid Auto Scaling group name/],
  ];
  for (const [what, change, reason] of rejected) {
    it(`refuses ${what}`, () => {
      expect(() => resolveGpuFleetArgs({ ...valid, ...change })).to.throw(reason);
    });
  }

  it("publishes the metrics the dashboard draws", () => {
    expect(GROUP_METRICS).to.include.members(["GroupInServiceInstances", "GroupDesiredCapacity", "GroupPendingInstances"]);
  });
});

describe("GpuFleet group capacity inputs (pure)", () => {
  const template = { id: "lt-1", version: "3" };
  const spec = { launchTemplateId: "lt-1", version: "3" };
  const overrides = [{ instanceType: "g5.xlarge" }, { instanceType: "g6.xlarge" }];

  it("sizes the warm pool to minSize exactly: maxGroupPreparedCapacity = minSize (unset, AWS keeps max − desired)", () => {
    // Arrange
    const r = resolveGpuFleetArgs({ ...valid, instanceTypes: ["g5.xlarge"], warmPool: { minSize: 2 } });
    // Act
    const inputs = groupCapacityInputs(r, template);
    // Assess
    expect(inputs.warmPool).to.deep.equal({ poolState: "Stopped", minSize: 2, maxGroupPreparedCapacity: 2 });
    expect(inputs).to.deep.include({ launchTemplate: template, capacityRebalance: false });
    expect(inputs).not.to.have.property("mixedInstancesPolicy");
  });

  it("refuses a warm pool beside several types: the mixed policy they need is refused with a warm pool", () => {
    expect(() => resolveGpuFleetArgs({ ...valid, warmPool: { minSize: 1 } })).to.throw(/warmPool allows one instance type/);
  });

  it("with Spot, declares capacity-optimized as capacity-optimized-prioritized over the types in their order", () => {
    // Arrange
    const r = resolveGpuFleetArgs({ ...valid, spotPercent: 75, onDemandBaseCapacity: 1 });
    // Act
    const inputs = groupCapacityInputs(r, template);
    // Assess
    expect(inputs).to.deep.include({
      capacityRebalance: true,
      mixedInstancesPolicy: {
        instancesDistribution: {
          onDemandAllocationStrategy: "prioritized",
          onDemandBaseCapacity: 1,
          onDemandPercentageAboveBaseCapacity: 25,
          spotAllocationStrategy: "capacity-optimized-prioritized",
        },
        launchTemplate: { launchTemplateSpecification: spec, overrides },
      },
    });
    expect(inputs).not.to.have.property("launchTemplate");
  });

  it("keeps price-capacity-optimized as configured", () => {
    const r = resolveGpuFleetArgs({ ...valid, spotPercent: 50, spotAllocationStrategy: "price-capacity-optimized" });
    const inputs = groupCapacityInputs(r, template) as { mixedInstancesPolicy: { instancesDistribution: { spotAllocationStrategy: string } } };
    expect(inputs.mixedInstancesPolicy.instancesDistribution.spotAllocationStrategy).to.equal("price-capacity-optimized");
  });

  it("without Spot, declares several types as on-demand overrides in their order (100 % on-demand, prioritized)", () => {
    // Act
    const inputs = groupCapacityInputs(resolveGpuFleetArgs(valid), template);
    // Assess
    expect(inputs).to.deep.include({
      capacityRebalance: false,
      mixedInstancesPolicy: {
        instancesDistribution: { onDemandAllocationStrategy: "prioritized", onDemandBaseCapacity: 0, onDemandPercentageAboveBaseCapacity: 100 },
        launchTemplate: { launchTemplateSpecification: spec, overrides },
      },
    });
    expect(inputs).not.to.have.property("launchTemplate");
    expect(inputs).not.to.have.property("warmPool");
  });

  it("without Spot and one type, launches from the template alone", () => {
    const inputs = groupCapacityInputs(resolveGpuFleetArgs({ ...valid, instanceTypes: ["g5.xlarge"] }), template);
    expect(inputs).to.deep.equal({ capacityRebalance: false, launchTemplate: template });
  });
});
