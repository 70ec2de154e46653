import { expect } from "chai";
import { parseStackConfig } from "../../../infra/config";
import { FLEET_NAME_DEFAULTS, fleetConfigSchema, fleetCrossFieldIssues, HOUSEKEEPING_SCHEDULES } from "../../../infra/parts/fleet.config";
import { devConfig, scopedStackConfig, withValue } from "../helpers/stack-config";

const fleetSection = (stack: string): unknown => scopedStackConfig(stack).fleet;

describe("fleet stack config (infra/parts/fleet.config.ts)", () => {
  for (const stack of ["dev", "prod"]) {
    it(`accepts the ${stack} stack's encache:fleet`, () => {
      const parsed = fleetConfigSchema.parse(fleetSection(stack));
      expect(parsed.housekeeping.batchSize).to.equal(1);
      expect(Object.keys(parsed.schedules)).to.include.members(HOUSEKEEPING_SCHEDULES.map((s) => s.key));
    });
  }

  it("defaults the retention to the seed's 7 days and the termination batch to its 5 workers", () => {
    const raw = structuredClone(fleetSection("dev")) as Record<string, Record<string, unknown>>;
    delete raw.jobRetentionDays;
    delete raw.termination!.batchSize;
    const parsed = fleetConfigSchema.parse(raw);
    expect(parsed.jobRetentionDays).to.equal(7);
    expect(parsed.termination.batchSize).to.equal(5);
  });

  const bad: Array<{ case: string; key: string; value: unknown; message: RegExp }> = [
    {
      case: "a termination queue visibility below 6 × timeout",
      key: "fleet.termination.queueVisibilityTimeoutSeconds",
      value: 100,
      message: /must be at least 6 × termination.timeoutSeconds/,
    },
    {
      case: "a housekeeping queue visibility below 6 × timeout",
      key: "fleet.housekeeping.queueVisibilityTimeoutSeconds",
      value: 600,
      message: /6 × housekeeping.timeoutSeconds/,
    },
    { case: "a housekeeping batch above 1", key: "fleet.housekeeping.batchSize", value: 10, message: /must be 1/ },
    {
      case: "a time margin as long as the timeout",
      key: "fleet.housekeeping.timeMarginSeconds",
      value: 300,
      message: /must be below housekeeping.timeoutSeconds/,
    },
    { case: "a schedule that is not rate() or cron()", key: "fleet.schedules.staleSsm", value: "every hour", message: /must be rate/ },
    { case: "a missing max runtime", key: "fleet.maxRuntimeMinutes", value: undefined, message: /is required/ },
    { case: "a concurrency of 1 (ESM minimum is 2)", key: "fleet.termination.maxConcurrency", value: 1, message: /2/ },
    {
      case: "a price keyed by something that is not an instance type",
      key: "fleet.instancePricesUsdPerHour",
      value: { big: 1 },
      message: /instancePricesUsdPerHour\.big: Invalid key/,
    },
  ];
  for (const c of bad) {
    it(`rejects ${c.case}, naming encache:${c.key}`, () => {
      expect(() => parseStackConfig(withValue(devConfig(), c.key, c.value)))
        .to.throw()
        .that.satisfies((e: Error) => e.message.includes(`encache:${c.key}`) && c.message.test(e.message));
    });
  }

  it("defaults the names operators of runs-fleet rely on, and takes a stack's own", () => {
    // Prepare: the runner path is the stack's (derived from the environment before this schema runs).
    const raw = structuredClone(fleetSection("dev")) as Record<string, unknown>;
    const runnerParameterPath = "/runs-fleet/dev/runners";
    const own = {
      managedTagKey: "encache-dev:managed",
      managedTagValue: "yes",
      poolTagKey: "encache-dev:pool",
      runnerParameterPath: "/encache-dev/runners",
      metricsNamespace: "Encache/Fleet dev",
    };

    // Act
    const defaulted = fleetConfigSchema.parse({ ...raw, names: { runnerParameterPath } }).names;
    const configured = fleetConfigSchema.parse({ ...raw, names: own }).names;

    // Assess
    expect(defaulted).to.deep.equal({ ...FLEET_NAME_DEFAULTS, runnerParameterPath });
    expect(configured).to.deep.equal(own);
  });

  const badNames: Array<[string, Record<string, string>, RegExp]> = [
    ["a managed tag key in the reserved aws: prefix", { managedTagKey: "aws:managed" }, /names\.managedTagKey.*EC2 tag key/],
    ["a managed tag key over 128 characters", { managedTagKey: "k".repeat(129) }, /names\.managedTagKey/],
    ["an empty managed tag value", { managedTagValue: "" }, /names\.managedTagValue/],
    ["a relative runner path", { runnerParameterPath: "runs-fleet/runners" }, /names\.runnerParameterPath.*absolute SSM path/],
    ["a runner path with a trailing slash", { runnerParameterPath: "/runs-fleet/runners/" }, /names\.runnerParameterPath/],
    ["a metric namespace in the reserved AWS/ prefix", { metricsNamespace: "AWS/Fleet" }, /names\.metricsNamespace.*CloudWatch namespace/],
    ["a metric namespace starting with a colon", { metricsNamespace: ":Fleet" }, /names\.metricsNamespace/],
  ];
  for (const [title, names, message] of badNames) {
    it(`rejects ${title}`, () => {
      const raw = { ...(structuredClone(fleetSection("dev")) as Record<string, unknown>), names: { runnerParameterPath: "/runs-fleet/dev/runners", ...names } };
      const result = fleetConfigSchema.safeParse(raw);
      expect(result.success).to.equal(false);
      const issues = result.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("\n");
      expect(issues).to.match(message);
    });
  }

  it("fleetCrossFieldIssues is empty for consistent sizing", () => {
    const sizing = { queueVisibilityTimeoutSeconds: 180, timeoutSeconds: 30, batchingWindowSeconds: 0, batchSize: 5 };
    expect(fleetCrossFieldIssues({ termination: sizing, housekeeping: { ...sizing, timeMarginSeconds: 10 } })).to.deep.equal([]);
  });

  it("fleetCrossFieldIssues counts the batching window", () => {
    const sizing = { queueVisibilityTimeoutSeconds: 180, timeoutSeconds: 30, batchingWindowSeconds: 1, batchSize: 5 };
    expect(fleetCrossFieldIssues({ termination: sizing, housekeeping: { ...sizing, timeMarginSeconds: 10 } }).map((i) => i.path.join("."))).to.deep.equal([
      "termination.queueVisibilityTimeoutSeconds",
      "housekeeping.queueVisibilityTimeoutSeconds",
    ]);
  });
});
