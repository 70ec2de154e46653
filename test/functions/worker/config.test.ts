import { expect } from "chai";
import { MAX_SHUTDOWN_GRACE_SECONDS, parseWorkerConfig } from "../../../functions/worker/config";
import { SHUTDOWN_MARGIN_SECONDS, WORKER_STOP_TIMEOUT_SECONDS } from "../../../infra/parts/worker.config";
import { EnvConfigError } from "../../../functions/shared/env";

const base = {
  WORK_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker-dlq",
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
  ];
  for (const [name, env, reason] of bad) {
    it(`rejects ${name}`, () => {
      expect(() => parseWorkerConfig(env)).to.throw(EnvConfigError, reason);
    });
  }
});
