import { expect } from "chai";
import { gpuCost, gpuCostSettings } from "../../local/scenarios/gpu-idle";

describe("local/scenarios/gpu-idle: the cost figures (pure)", () => {
  it("reads the idle window, the type and its price from the stack's encache:gpu", () => {
    const config = { "encache:gpu": JSON.stringify({ instanceType: "g5.xlarge", idleStopMinutes: 30, pricesUsdPerHour: { "g5.xlarge": 1.006, "g5.2xlarge": 1.212 } }) };
    expect(gpuCostSettings(config)).to.deep.equal({ idleStopMinutes: 30, instanceType: "g5.xlarge", usdPerHour: 1.006 });
  });

  it("has no price when the table lacks the type", () => {
    expect(gpuCostSettings({ "encache:gpu": JSON.stringify({ instanceType: "g6.xlarge" }) }).usdPerHour).to.equal(undefined);
  });

  it("prices running time against always-on: 1 h of 3 h at $1.006/h", () => {
    expect(gpuCost(3600, 10_800, 1.006)).to.deep.equal({ runningSimSeconds: 3600, alwaysOnSimSeconds: 10_800, usd: 1.01, alwaysOnUsd: 3.02, savedShare: 0.667 });
  });

  it("gives no dollars without a price, but still the seconds", () => {
    expect(gpuCost(60, 120, undefined)).to.deep.include({ usd: null, alwaysOnUsd: null, runningSimSeconds: 60 });
  });
});
