import { expect } from "chai";
import { allowedAccountIdsProblem, parseStackConfig } from "../../infra/config";
import { carriesEnvironment, STACK_SCOPED_KEYS, withStackScopedDefaults } from "../../infra/stack-scope";
import { configError, devConfig, stackConfig, withValue } from "./helpers/stack-config";

describe("stack-scoped names (infra/stack-scope.ts)", () => {
  it("derives every unset scoped name from the environment", () => {
    // Prepare: the committed stacks leave all four unset.
    const [dev, prod] = [parseStackConfig(stackConfig("dev")), parseStackConfig(stackConfig("prod"))];
    // Assess
    expect([dev.gpu.nameTag, dev.gpu.instanceIdParameter, dev.pool.poolTag, dev.fleet.names.runnerParameterPath]).to.deep.equal([
      "encache-gpu-worker-dev",
      "/encache/dev/gpu/instance_id",
      "encache-warm-pool-dev",
      "/runs-fleet/dev/runners",
    ]);
    expect([prod.gpu.nameTag, prod.gpu.instanceIdParameter, prod.pool.poolTag, prod.fleet.names.runnerParameterPath]).to.deep.equal([
      "encache-gpu-worker-prod",
      "/encache/prod/gpu/instance_id",
      "encache-warm-pool-prod",
      "/runs-fleet/prod/runners",
    ]);
  });

  it("keeps a set value that carries the environment", () => {
    const cfg = parseStackConfig(withValue(devConfig(), "gpu.nameTag", "gpu-dev-a"));
    expect(cfg.gpu.nameTag).to.equal("gpu-dev-a");
  });

  for (const key of STACK_SCOPED_KEYS) {
    const dotted = key.path.join(".");
    it(`rejects a ${dotted} without the environment, naming encache:${dotted}`, () => {
      // Prepare: the value prod would also use, or a lookalike that only contains "dev" inside a word.
      const shared = key.derive("prod").replace("prod", "shared");
      // Act
      const err = configError(withValue(devConfig(), dotted, shared));
      // Assess
      const issue = err.issues.find((i) => i.key === `encache:${dotted}`);
      expect(issue?.reason).to.match(/must contain the environment "dev" as a word.*leave it unset/);
    });
  }

  const words: Array<[string, string, boolean]> = [
    ["encache-gpu-worker-dev", "dev", true],
    ["/encache/dev/gpu/instance_id", "dev", true],
    ["dev", "dev", true],
    ["dev.gpu", "dev", true],
    ["encache-devices", "dev", false],
    ["/encache/devops/gpu", "dev", false],
    ["encache-gpu-worker-prod", "dev", false],
    ["team-eu-1-pool", "eu-1", true],
  ];
  for (const [value, env, carries] of words) {
    it(`carriesEnvironment(${JSON.stringify(value)}, ${env}) is ${carries}`, () => expect(carriesEnvironment(value, env)).to.equal(carries));
  }

  it("leaves a config it cannot read for the schema to report", () => {
    expect(withStackScopedDefaults("x")).to.equal("x");
    expect(withStackScopedDefaults({ environment: 3 })).to.deep.equal({ environment: 3 });
    expect(withStackScopedDefaults({ environment: "dev", gpu: "not an object" })).to.deep.include({ gpu: "not an object" });
  });
});

describe("aws:allowedAccountIds (allowedAccountIdsProblem)", () => {
  const cases: Array<[string, string | undefined, RegExp | undefined]> = [
    ["one account", '["123456789012"]', undefined],
    ["two accounts", '["123456789012","210987654321"]', undefined],
    ["unset", undefined, /is required: name the account/],
    ["an empty list", "[]", /non-empty list/],
    ["a bare string", "123456789012", /non-empty list/],
    ["a number (YAML without quotes)", "[123456789012]", /12-digit account id as a string/],
    ["eleven digits", '["12345678901"]', /"12345678901": each must be a 12-digit/],
  ];
  for (const [title, value, problem] of cases) {
    it(`${problem ? "rejects" : "accepts"} ${title}`, () => {
      const got = allowedAccountIdsProblem(value);
      if (problem) expect(got).to.match(problem);
      else expect(got).to.equal(undefined);
    });
  }
});
