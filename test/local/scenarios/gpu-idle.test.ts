import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import { stackConfigFrom } from "../../../infra/config";
import { readStackFiles } from "../../../plan/stack-files";
import { gpuCost, gpuCostSettings } from "../../../local/scenarios/gpu-idle";

describe("local/scenarios/gpu-idle: the cost figures (pure)", () => {
  it("reads the idle window, the type and its price from the dev stack file, through the program's config parser", () => {
    const config = stackConfigFrom(readStackFiles(REPO_ROOT, "dev").config);
    expect(gpuCostSettings(config.gpu)).to.deep.equal({ idleStopMinutes: 30, instanceType: "g5.xlarge", usdPerHour: 1.006 });
  });

  it("has no price when the table lacks the type", () => {
    expect(gpuCostSettings({ instanceType: "g6.xlarge", idleStopMinutes: 30 }, { "g5.xlarge": 1.006 }).usdPerHour).to.equal(undefined);
  });

  it("prices running time against always-on: 1 h of 3 h at $1.006/h", () => {
    expect(gpuCost(3600, 10_800, 1.006)).to.deep.equal({
      runningSimSeconds: 3600,
      alwaysOnSimSeconds: 10_800,
      usd: 1.01,
      alwaysOnUsd: 3.02,
      savedShare: 0.667,
    });
  });

  it("gives no dollars without a price, but still the seconds", () => {
    expect(gpuCost(60, 120, undefined)).to.deep.include({ usd: null, alwaysOnUsd: null, runningSimSeconds: 60 });
  });
});
