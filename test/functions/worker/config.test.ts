import { expect } from "chai";
import { executableSchema, executablesSchema, JOB_TYPE, MAX_SHUTDOWN_GRACE_SECONDS, parseWorkerConfig } from "../../../functions/worker/config";
import { SHUTDOWN_MARGIN_SECONDS, WORKER_STOP_TIMEOUT_SECONDS } from "../../../infra/parts/worker.config";
import { EnvConfigError } from "../../../functions/shared/env";

const base = {
  WORK_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker-dlq",
  WORKER_JOBS_TABLE: "worker-jobs-1a2b3c",
};

describe("worker: environment (functions/worker/config.ts)", () => {
  it("applies defaults and converts seconds to milliseconds", () => {
    const c = parseWorkerConfig({ ...base, WORKER_IDLE_WINDOW_SECONDS: "15", WORKER_HEARTBEAT_SECONDS: "60" });
    expect(c).to.deep.include({ concurrency: 1, waitTimeSeconds: 20, idleWindowMs: 15_000, heartbeatMs: 60_000, shutdownGraceMs: 100_000, agentUri: undefined, scratchDir: "/scratch" });
  });

  it("accepts a grace period of 105 s, the stack config's bound (stop timeout 120 s − 15 s)", () => {
    expect(parseWorkerConfig({ ...base, WORKER_SHUTDOWN_GRACE_SECONDS: "105" }).shutdownGraceMs).to.equal(105_000);
    expect(WORKER_STOP_TIMEOUT_SECONDS - SHUTDOWN_MARGIN_SECONDS).to.equal(MAX_SHUTDOWN_GRACE_SECONDS);
  });

  it("reads the allow-list as JSON", () => {
    const c = parseWorkerConfig({ ...base, WORKER_EXECUTABLES: '{"payload-digest":{"command":"/usr/bin/sha256sum","args":["-"]}}' });
    expect(c.executables).to.deep.equal({ "payload-digest": { command: "/usr/bin/sha256sum", args: ["-"] } });
  });

  const bad: Array<[string, Record<string, string>, RegExp]> = [
    ["a missing queue URL", { QUARANTINE_QUEUE_URL: base.QUARANTINE_QUEUE_URL }, /WORK_QUEUE_URL is required/],
    ["N above 10", { ...base, WORKER_CONCURRENCY: "11" }, /WORKER_CONCURRENCY is invalid/],
    ["a long poll over 20 s", { ...base, WORKER_WAIT_TIME_SECONDS: "21" }, /WORKER_WAIT_TIME_SECONDS/],
    ["a grace period reaching the stop timeout", { ...base, WORKER_SHUTDOWN_GRACE_SECONDS: "120" }, /WORKER_SHUTDOWN_GRACE_SECONDS/],
    ["a grace period leaving no room for the give-backs (106 s)", { ...base, WORKER_SHUTDOWN_GRACE_SECONDS: "106" }, /WORKER_SHUTDOWN_GRACE_SECONDS/],
    ["an allow-list that is not JSON", { ...base, WORKER_EXECUTABLES: "sha256sum" }, /WORKER_EXECUTABLES/],
    ["a relative executable", { ...base, WORKER_EXECUTABLES: '{"x":{"command":"sha256sum"}}' }, /WORKER_EXECUTABLES/],
    ["a job type with a slash", { ...base, WORKER_EXECUTABLES: '{"../x":{"command":"/bin/true"}}' }, /WORKER_EXECUTABLES/],
    ["an agent URI that is not a URL", { ...base, ECS_AGENT_URI: "169.254.170.2" }, /ECS_AGENT_URI/],
    ["a missing job ledger table", { WORK_QUEUE_URL: base.WORK_QUEUE_URL, QUARANTINE_QUEUE_URL: base.QUARANTINE_QUEUE_URL }, /WORKER_JOBS_TABLE is required/],
    ["a metadata URI that is not a URL", { ...base, ECS_CONTAINER_METADATA_URI_V4: "169.254.170.2/v4" }, /ECS_CONTAINER_METADATA_URI_V4/],
  ];
  for (const [name, env, reason] of bad) {
    it(`rejects ${name}`, () => {
      expect(() => parseWorkerConfig(env)).to.throw(EnvConfigError, reason);
    });
  }
  it("reads every variable, in milliseconds where the worker counts in ms", () => {
    const c = parseWorkerConfig({
      ...base,
      WORKER_CONCURRENCY: "4",
      WORKER_WAIT_TIME_SECONDS: "10",
      WORKER_IDLE_WINDOW_SECONDS: "30",
      WORKER_MAX_PROTECTED_SECONDS: "7200",
      WORKER_DEFAULT_VISIBILITY_SECONDS: "1800",
      WORKER_MAX_VISIBILITY_SECONDS: "43200",
      WORKER_HEARTBEAT_SECONDS: "120",
      WORKER_RETRY_DELAY_SECONDS: "90",
      WORKER_SHUTDOWN_GRACE_SECONDS: "60",
      TASK_PROTECTION_EXPIRES_MINUTES: "120",
      WORKER_SCRATCH_DIR: "/data/scratch",
      ECS_AGENT_URI: "http://169.254.170.2/api/task-1",
      ECS_CONTAINER_METADATA_URI_V4: "http://169.254.170.2/v4/task-1",
    });
    expect(c).to.deep.equal({
      workQueueUrl: base.WORK_QUEUE_URL,
      quarantineQueueUrl: base.QUARANTINE_QUEUE_URL,
      concurrency: 4,
      waitTimeSeconds: 10,
      idleWindowMs: 30_000,
      maxProtectedMs: 7_200_000,
      defaultVisibilitySeconds: 1800,
      maxVisibilitySeconds: 43_200,
      heartbeatMs: 120_000,
      retryDelaySeconds: 90,
      shutdownGraceMs: 60_000,
      abortSettleMs: 5000,
      protectionExpiresMinutes: 120,
      executables: {},
      scratchDir: "/data/scratch",
      agentUri: "http://169.254.170.2/api/task-1",
      jobsTable: base.WORKER_JOBS_TABLE,
      metadataUri: "http://169.254.170.2/v4/task-1",
    });
  });

  it("caps the default visibility at the maximum", () => {
    const c = parseWorkerConfig({ ...base, WORKER_DEFAULT_VISIBILITY_SECONDS: "900", WORKER_MAX_VISIBILITY_SECONDS: "600" });
    expect([c.defaultVisibilitySeconds, c.maxVisibilitySeconds]).to.deep.equal([600, 600]);
  });

  it("gives an allow-listed executable no arguments unless it names some", () => {
    const c = parseWorkerConfig({ ...base, WORKER_EXECUTABLES: '{"noop":{"command":"/bin/true"}}' });
    expect(c.executables).to.deep.equal({ noop: { command: "/bin/true", args: [] } });
  });

  const commands: Array<[string, boolean]> = [
    ["/usr/bin/sha256sum", true],
    ["/opt/My_Tool-2.1/run", true],
    ["/", false],
    ["bin/true", false],
    ["x/bin/true", false],
    ["/bin/sh -c", false],
    ["/bin/true;rm", false],
    ["/bin/$(id)", false],
  ];
  for (const [command, ok] of commands) {
    it(`${ok ? "accepts" : "refuses"} the executable path ${JSON.stringify(command)}`, () => {
      const parsed = executableSchema.safeParse({ command });
      expect(parsed.success).to.equal(ok);
      if (!ok) expect(parsed.error?.issues[0]?.message).to.equal("must be an absolute path");
    });
  }

  const types: Array<[string, boolean]> = [
    ["a", true],
    ["payload-digest", true],
    ["x9-", true],
    [`a${"b".repeat(63)}`, true],
    [`a${"b".repeat(64)}`, false],
    ["9lives", false],
    ["-x", false],
    ["Resize", false],
    ["x_y", false],
    ["x/", false],
    ["", false],
  ];
  for (const [type, ok] of types) {
    it(`${ok ? "accepts" : "refuses"} the job type ${JSON.stringify(type.length > 20 ? `${type.slice(0, 8)}… (${type.length} chars)` : type)}`, () => {
      expect(JOB_TYPE.test(type)).to.equal(ok);
      const parsed = executablesSchema.safeParse({ [type]: { command: "/bin/true" } });
      expect(parsed.success).to.equal(ok);
      if (!ok) expect(JSON.stringify(parsed.error?.issues)).to.include("job types are lowercase letters, digits and dashes");
    });
  }

  const messages: Array<[string, Record<string, string>, string]> = [
    ["an allow-list that is not JSON", { WORKER_EXECUTABLES: "sha256sum" }, "must be a JSON object"],
    ["a relative scratch directory", { WORKER_SCRATCH_DIR: "scratch" }, "must be an absolute path"],
  ];
  for (const [name, env, message] of messages) {
    it(`says why it rejects ${name}`, () => {
      expect(() => parseWorkerConfig({ ...base, ...env })).to.throw(EnvConfigError, message);
    });
  }
});
