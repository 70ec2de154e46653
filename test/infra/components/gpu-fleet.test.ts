import { expect } from "chai";
import { GROUP_METRICS, gpuFleetDefaults, resolveGpuFleetArgs } from "../../../infra/components/gpu-fleet";

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
