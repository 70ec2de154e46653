import { expect } from "chai";
import { executableSchema, executablesSchema, JOB_TYPE, parseWorkerConfig } from "../../../functions/worker/config";
import { EnvConfigError } from "../../../functions/shared/env";
import { sampleEnv } from "../helpers/env-samples";

const base = sampleEnv("worker");

describe("worker: environment (functions/worker/config.ts)", () => {
  it("reads every variable, in milliseconds where the worker counts in ms, and ECS's own two", () => {
    // Act
    const c = parseWorkerConfig({
      ...base,
      ECS_AGENT_URI: "http://169.254.170.2/api/task-1",
      ECS_CONTAINER_METADATA_URI_V4: "http://169.254.170.2/v4/task-1",
    });

    // Assess
    expect(c).to.deep.equal({
      workQueueUrl: base.WORK_QUEUE_URL,
      quarantineQueueUrl: base.QUARANTINE_QUEUE_URL,
      concurrency: 4,
      waitTimeSeconds: 20,
      idleWindowMs: 30_000,
      maxProtectedMs: 14_400_000,
      defaultVisibilitySeconds: 900,
      maxVisibilitySeconds: 43_200,
      heartbeatMs: 60_000,
      retryDelaySeconds: 60,
      shutdownGraceMs: 100_000,
      abortSettleMs: 5000,
      protectionExpiresMinutes: 60,
      executables: { resize: { command: "/usr/bin/resize", args: ["--fast"] } },
      scratchDir: "/scratch",
      agentUri: "http://169.254.170.2/api/task-1",
      jobsTable: base.WORKER_JOBS_TABLE,
      metadataUri: "http://169.254.170.2/v4/task-1",
    });
  });

  it("leaves ECS's variables unset outside ECS", () => {
    expect(parseWorkerConfig(base)).to.include({ agentUri: undefined, metadataUri: undefined });
  });

  // Required and well-typed: N, the heartbeat and the grace are bounded by the stack schema (infra/parts/worker.config.ts).
  const bad: Array<[string, Record<string, string | undefined>, RegExp]> = [
    ["a missing queue URL", { WORK_QUEUE_URL: undefined }, /WORK_QUEUE_URL is required/],
    ["no N (the stack schema requires it; the worker has no default)", { WORKER_CONCURRENCY: undefined }, /WORKER_CONCURRENCY is required/],
    ["an N that is no whole number", { WORKER_CONCURRENCY: "two" }, /WORKER_CONCURRENCY is invalid/],
    ["an allow-list that is not JSON", { WORKER_EXECUTABLES: "sha256sum" }, /WORKER_EXECUTABLES/],
    ["a relative executable", { WORKER_EXECUTABLES: '{"x":{"command":"sha256sum"}}' }, /WORKER_EXECUTABLES/],
    ["a job type with a slash", { WORKER_EXECUTABLES: '{"../x":{"command":"/bin/true"}}' }, /WORKER_EXECUTABLES/],
    ["an agent URI that is not a URL", { ECS_AGENT_URI: "169.254.170.2" }, /ECS_AGENT_URI/],
    ["a missing job ledger table", { WORKER_JOBS_TABLE: undefined }, /WORKER_JOBS_TABLE is required/],
    ["a metadata URI that is not a URL", { ECS_CONTAINER_METADATA_URI_V4: "169.254.170.2/v4" }, /ECS_CONTAINER_METADATA_URI_V4/],
  ];
  for (const [name, env, reason] of bad) {
    it(`rejects ${name}`, () => {
      expect(() => parseWorkerConfig({ ...base, ...env })).to.throw(EnvConfigError, reason);
    });
  }

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
    ["an allow-list that is not JSON", { WORKER_EXECUTABLES: "sha256sum" }, "must be JSON"],
    ["a relative executable", { WORKER_EXECUTABLES: '{"x":{"command":"sha256sum"}}' }, "must be an absolute path"],
  ];
  for (const [name, env, message] of messages) {
    it(`says why it rejects ${name}`, () => {
      expect(() => parseWorkerConfig({ ...base, ...env })).to.throw(EnvConfigError, message);
    });
  }
});
