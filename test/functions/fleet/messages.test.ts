import { expect } from "chai";
import { parseHousekeepingConfig, parseTerminationConfig } from "../../../functions/fleet/config";
import { instanceIdOfParameter, runnerConfigParameter } from "../../../functions/fleet/jobs";
import { HousekeepingMessageSchema, parseBody, rfc3339, TerminationMessageSchema } from "../../../functions/fleet/messages";
import { terminationMessage } from "../helpers/fleet-deps";

const URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";

describe("fleet messages", () => {
  it("accepts the seed's termination message and keeps an optional error", () => {
    const r = parseBody(TerminationMessageSchema, JSON.stringify(terminationMessage({ error: "x" })));
    expect(r.ok && r.value).to.deep.include({ job_id: "67890", status: "success", error: "x" });
  });

  it("accepts the scheduler's housekeeping message with <aws.scheduler.scheduled-time> filled in, params defaulting to {}", () => {
    const r = parseBody(HousekeepingMessageSchema, JSON.stringify({ task_type: "stale_ssm", timestamp: "2025-11-25T10:00:00Z" }));
    expect(r).to.deep.equal({ ok: true, value: { task_type: "stale_ssm", timestamp: "2025-11-25T10:00:00Z", params: {} } });
  });

  it("rfc3339 drops milliseconds so stored timestamps compare lexically", () => {
    expect(rfc3339(new Date("2025-11-25T10:02:03.456+01:00"))).to.equal("2025-11-25T09:02:03Z");
  });

  const names: Array<[string, string | null]> = [
    ["/runs-fleet/runners/i-0123456789abcdef0/config", "i-0123456789abcdef0"],
    ["/runs-fleet/runners/i-01234567/token", "i-01234567"],
    ["/runs-fleet/runners/README", null],
    ["/runs-fleet/runners/host-1/config", null],
    ["/other/i-0123456789abcdef0/config", null],
  ];
  for (const [name, id] of names) {
    it(`instanceIdOfParameter(${name}) = ${id}`, () => {
      expect(instanceIdOfParameter(name)).to.equal(id);
    });
  }

  it("runnerConfigParameter is the seed's path", () => {
    expect(runnerConfigParameter("i-1")).to.equal("/runs-fleet/runners/i-1/config");
  });
});

describe("fleet env config", () => {
  const termination = { RUNS_FLEET_JOBS_TABLE: "jobs", RUNS_FLEET_TERMINATION_QUEUE_URL: URL, RUNS_FLEET_TERMINATION_DLQ_URL: URL };
  const housekeeping = { RUNS_FLEET_JOBS_TABLE: "jobs", RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: URL, RUNS_FLEET_HOUSEKEEPING_DLQ_URL: URL };

  it("termination: defaults the retention to the seed's 7 days", () => {
    expect(parseTerminationConfig(termination)).to.deep.equal({ jobsTable: "jobs", retentionDays: 7, queueUrl: URL, quarantineQueueUrl: URL });
  });

  it("housekeeping: parses the JSON pools and price table", () => {
    const c = parseHousekeepingConfig({ ...housekeeping, RUNS_FLEET_POOLS: '["a","b"]', RUNS_FLEET_INSTANCE_PRICES: '{"c7g.large":0.07}', RUNS_FLEET_MAX_RUNTIME_MINUTES: "90" });
    expect(c).to.deep.include({ pools: ["a", "b"], instancePrices: { "c7g.large": 0.07 }, maxRuntimeMinutes: 90, ssmMinAgeMinutes: 15, timeMarginMs: 10_000 });
  });

  const bad: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
    ["a missing table", { ...housekeeping, RUNS_FLEET_JOBS_TABLE: "" }, /RUNS_FLEET_JOBS_TABLE is required/],
    ["a bad queue URL", { ...housekeeping, RUNS_FLEET_HOUSEKEEPING_DLQ_URL: "queue" }, /RUNS_FLEET_HOUSEKEEPING_DLQ_URL is invalid/],
    ["pools that are not JSON", { ...housekeeping, RUNS_FLEET_POOLS: "a,b" }, /RUNS_FLEET_POOLS is invalid \(must be JSON/],
    ["a negative price", { ...housekeeping, RUNS_FLEET_INSTANCE_PRICES: '{"a":-1}' }, /RUNS_FLEET_INSTANCE_PRICES is invalid/],
    ["a zero retention", { ...housekeeping, RUNS_FLEET_JOB_RETENTION_DAYS: "0" }, /RUNS_FLEET_JOB_RETENTION_DAYS is invalid/],
  ];
  for (const [title, env, message] of bad) {
    it(`housekeeping: refuses ${title}, naming the variable`, () => {
      expect(() => parseHousekeepingConfig(env)).to.throw(message);
    });
  }

  it("termination: refuses a missing DLQ URL, naming the variable", () => {
    expect(() => parseTerminationConfig({ ...termination, RUNS_FLEET_TERMINATION_DLQ_URL: undefined })).to.throw(/RUNS_FLEET_TERMINATION_DLQ_URL is required/);
  });
});
