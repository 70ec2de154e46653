import { expect } from "chai";
import { parseHousekeepingConfig, parseTerminationConfig } from "../../../functions/fleet/config";
import { ENV_SAMPLES, sampleEnv } from "../helpers/env-samples";

describe("fleet env config", () => {
  const termination = sampleEnv("fleet termination");
  const housekeeping = sampleEnv("fleet housekeeping");

  it("termination: reads every variable the program sets", () => {
    expect(parseTerminationConfig(termination)).to.deep.equal(ENV_SAMPLES.find((c) => c.name === "fleet termination")!.values);
  });

  it("housekeeping: reads the JSON pools and price table, and the runs-fleet names as tags", () => {
    // Act
    const c = parseHousekeepingConfig(housekeeping);

    // Assess
    expect(c).to.deep.include({
      pools: ["default"],
      instancePrices: { "c7g.xlarge": 0.145 },
      maxRuntimeMinutes: 360,
      ssmMinAgeMinutes: 15,
      timeMarginMs: 15_000,
      managedTag: { key: "runs-fleet:managed", value: "true" },
      poolTagKey: "runs-fleet:pool",
      runnerParameterPath: "/runs-fleet/dev/runners",
    });
  });

  it("housekeeping: takes the environment tag's key from its environment, not a constant", () => {
    const c = parseHousekeepingConfig({ ...housekeeping, RUNS_FLEET_ENVIRONMENT_TAG_KEY: "acme:stage", RUNS_FLEET_ENVIRONMENT: "prod" });
    expect(c.environmentTag).to.deep.equal({ key: "acme:stage", value: "prod" });
  });

  const bad: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
    ["a missing table", { ...housekeeping, RUNS_FLEET_JOBS_TABLE: "" }, /RUNS_FLEET_JOBS_TABLE is required/],
    // Per stack: a default would be shared by every stack in the account.
    ["no runner path", { ...housekeeping, RUNS_FLEET_RUNNER_PARAMETER_PATH: undefined }, /RUNS_FLEET_RUNNER_PARAMETER_PATH is required/],
    ["no environment", { ...housekeeping, RUNS_FLEET_ENVIRONMENT: undefined }, /RUNS_FLEET_ENVIRONMENT is required/],
    // The stack schema holds the seed's names; the function has no default of its own.
    ["no managed tag key", { ...housekeeping, RUNS_FLEET_MANAGED_TAG_KEY: undefined }, /RUNS_FLEET_MANAGED_TAG_KEY is required/],
    ["pools that are not JSON", { ...housekeeping, RUNS_FLEET_POOLS: "a,b" }, /RUNS_FLEET_POOLS is invalid \(must be JSON/],
    ["a price that is not a number", { ...housekeeping, RUNS_FLEET_INSTANCE_PRICES: '{"c7g.large":"cheap"}' }, /RUNS_FLEET_INSTANCE_PRICES is invalid/],
    ["a retention that is not a whole number", { ...termination, RUNS_FLEET_JOB_RETENTION_DAYS: "7d" }, /RUNS_FLEET_JOB_RETENTION_DAYS is invalid/],
  ];
  for (const [title, env, message] of bad) {
    it(`refuses ${title}, naming the variable`, () => {
      const parse = "RUNS_FLEET_HOUSEKEEPING_QUEUE_URL" in env ? parseHousekeepingConfig : parseTerminationConfig;
      expect(() => parse(env)).to.throw(message);
    });
  }
});
