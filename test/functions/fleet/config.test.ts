import { expect } from "chai";
import { parseHousekeepingConfig, parseTerminationConfig } from "../../../functions/fleet/config";

const URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";

describe("fleet env config", () => {
  const stack = { RUNS_FLEET_RUNNER_PARAMETER_PATH: "/runs-fleet/dev/runners" };
  const termination = { RUNS_FLEET_JOBS_TABLE: "jobs", RUNS_FLEET_TERMINATION_QUEUE_URL: URL, RUNS_FLEET_TERMINATION_DLQ_URL: URL, ...stack };
  const housekeeping = { RUNS_FLEET_JOBS_TABLE: "jobs", RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: URL, RUNS_FLEET_HOUSEKEEPING_DLQ_URL: URL, RUNS_FLEET_ENVIRONMENT: "dev", ...stack };

  it("termination: defaults the retention to the seed's 7 days", () => {
    expect(parseTerminationConfig(termination)).to.deep.equal({ jobsTable: "jobs", retentionDays: 7, queueUrl: URL, quarantineQueueUrl: URL, runnerParameterPath: "/runs-fleet/dev/runners" });
  });

  it("housekeeping: parses the JSON pools and price table", () => {
    const c = parseHousekeepingConfig({ ...housekeeping, RUNS_FLEET_POOLS: '["a","b"]', RUNS_FLEET_INSTANCE_PRICES: '{"c7g.large":0.07}', RUNS_FLEET_MAX_RUNTIME_MINUTES: "90" });
    expect(c).to.deep.include({ pools: ["a", "b"], instancePrices: { "c7g.large": 0.07 }, maxRuntimeMinutes: 90, ssmMinAgeMinutes: 15, timeMarginMs: 10_000 });
  });

  it("housekeeping: reads the runs-fleet names from the environment, defaulting the tags to the seed's", () => {
    const names = { RUNS_FLEET_MANAGED_TAG_KEY: "encache-dev:managed", RUNS_FLEET_MANAGED_TAG_VALUE: "yes", RUNS_FLEET_POOL_TAG_KEY: "encache-dev:pool", RUNS_FLEET_RUNNER_PARAMETER_PATH: "/encache-dev/runners" };
    expect(parseHousekeepingConfig({ ...housekeeping, ...names })).to.deep.include({
      managedTag: { key: "encache-dev:managed", value: "yes" },
      poolTagKey: "encache-dev:pool",
      runnerParameterPath: "/encache-dev/runners",
    });
    expect(parseHousekeepingConfig(housekeeping)).to.deep.include({
      managedTag: { key: "runs-fleet:managed", value: "true" },
      environmentTag: { key: "encache:environment", value: "dev" },
      poolTagKey: "runs-fleet:pool",
      runnerParameterPath: "/runs-fleet/dev/runners",
    });
  });

  const bad: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
    ["a missing table", { ...housekeeping, RUNS_FLEET_JOBS_TABLE: "" }, /RUNS_FLEET_JOBS_TABLE is required/],
    ["a relative runner path", { ...housekeeping, RUNS_FLEET_RUNNER_PARAMETER_PATH: "runners/" }, /RUNS_FLEET_RUNNER_PARAMETER_PATH is invalid/],
    // Both are per stack: a default would be shared by every stack in the account.
    ["no runner path", { ...housekeeping, RUNS_FLEET_RUNNER_PARAMETER_PATH: undefined }, /RUNS_FLEET_RUNNER_PARAMETER_PATH is required/],
    ["no environment", { ...housekeeping, RUNS_FLEET_ENVIRONMENT: undefined }, /RUNS_FLEET_ENVIRONMENT is required/],
    ["a bad queue URL", { ...housekeeping, RUNS_FLEET_HOUSEKEEPING_DLQ_URL: "queue" }, /RUNS_FLEET_HOUSEKEEPING_DLQ_URL is invalid/],
    ["pools that are not JSON", { ...housekeeping, RUNS_FLEET_POOLS: "a,b" }, /RUNS_FLEET_POOLS is invalid \(must be JSON/],
    ["a negative price", { ...housekeeping, RUNS_FLEET_INSTANCE_PRICES: '{"a":-1}' }, /RUNS_FLEET_INSTANCE_PRICES is invalid/],
    ["a zero retention", { ...housekeeping, RUNS_FLEET_JOB_RETENTION_DAYS: "0" }, /RUNS_FLEET_JOB_RETENTION_DAYS is invalid/],
    ["a runner path without its leading slash", { ...housekeeping, RUNS_FLEET_RUNNER_PARAMETER_PATH: "runs-fleet/dev/runners" }, /RUNS_FLEET_RUNNER_PARAMETER_PATH is invalid \(must be an absolute SSM path without a trailing slash;/],
    ["a runner path with a trailing slash", { ...housekeeping, RUNS_FLEET_RUNNER_PARAMETER_PATH: "/runs-fleet/dev/runners/" }, /RUNS_FLEET_RUNNER_PARAMETER_PATH is invalid \(must be an absolute SSM path without a trailing slash;/],
    ["an environment starting with a capital", { ...housekeeping, RUNS_FLEET_ENVIRONMENT: "Dev" }, /RUNS_FLEET_ENVIRONMENT is invalid \(must be the stack's environment name;/],
    ["an environment with a character after a valid name", { ...housekeeping, RUNS_FLEET_ENVIRONMENT: "dev_2" }, /RUNS_FLEET_ENVIRONMENT is invalid \(must be the stack's environment name;/],
  ];
  for (const [title, env, message] of bad) {
    it(`housekeeping: refuses ${title}, naming the variable`, () => {
      expect(() => parseHousekeepingConfig(env)).to.throw(message);
    });
  }

  it("termination: refuses a missing DLQ URL, naming the variable", () => {
    expect(() => parseTerminationConfig({ ...termination, RUNS_FLEET_TERMINATION_DLQ_URL: undefined })).to.throw(/RUNS_FLEET_TERMINATION_DLQ_URL is required/);
  });

  it("housekeeping: pools are whole names, and none are audited when RUNS_FLEET_POOLS is unset", () => {
    expect(parseHousekeepingConfig({ ...housekeeping, RUNS_FLEET_POOLS: '["default","gpu"]' }).pools).to.deep.equal(["default", "gpu"]);
    expect(parseHousekeepingConfig(housekeeping)).to.deep.include({ pools: [], instancePrices: {} });
  });
});
