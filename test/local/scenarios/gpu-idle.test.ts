import { expect } from "chai";
import { ON_DEMAND_USD_PER_HOUR } from "../../../local/prices";
import type { LocalFunction, LocalInstance } from "../../../local/provision/topology-types";
import { gpuCost, gpuCostSettings, IDLE_CHECK_FUNCTION } from "../../../local/scenarios/gpu-idle";
import { sampleEnv } from "../../functions/helpers/env-samples";

/** A recording's idle check and GPU instance, as deployLocally reads them. */
const recorded = (over: { idleStopMinutes?: string; instanceType?: string } = {}): { functions: LocalFunction[]; instances: LocalInstance[] } => ({
  functions: [
    {
      urn: "urn:idle",
      logicalName: IDLE_CHECK_FUNCTION,
      name: "ingest-gpu-idle-1234567",
      arn: "arn:aws:lambda:us-east-1:123456789012:function:ingest-gpu-idle-1234567",
      codePath: "/dev/null",
      handler: "index.handler",
      environment: { ...sampleEnv("ingest GPU idle"), GPU_IDLE_STOP_MINUTES: over.idleStopMinutes ?? "30" },
      timeoutSeconds: 30,
      memoryMb: 256,
    },
  ],
  instances: [{ urn: "urn:gpu", logicalName: "ingest-gpu", id: "i-0123456789abcdef0", tags: {}, instanceType: over.instanceType ?? "g5.xlarge" }],
});

describe("local/scenarios/gpu-idle: the cost figures (pure)", () => {
  it("reads the idle window from the idle check's recorded environment and the type from the recorded instance, and prices it from the local table", () => {
    expect(gpuCostSettings(recorded({ idleStopMinutes: "45" }))).to.deep.equal({
      idleStopMinutes: 45,
      instanceType: "g5.xlarge",
      usdPerHour: ON_DEMAND_USD_PER_HOUR["g5.xlarge"],
    });
  });

  it("has no price when the table lacks the type", () => {
    expect(gpuCostSettings(recorded({ instanceType: "g6.xlarge" }), { "g5.xlarge": 1.006 }).usdPerHour).to.equal(undefined);
  });

  it("refuses a recording without the idle check (a fleet stack)", () => {
    expect(() => gpuCostSettings({ ...recorded(), functions: [] })).to.throw(/no ingest-gpu-idle function/);
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
