import { expect } from "chai";
import { readProtectionEnabled, refreshIntervalMs, TaskProtection } from "../../../functions/worker/protection";
import { RecordingLogger, RecordingMetrics } from "../helpers/telemetry";
import { DEAD_AGENT_URI, FakeEcsAgent } from "../helpers/ecs-agent";
import { advance, httpFetch, useFakeTime, waitFor } from "../helpers/fake-time";

describe("worker: task scale-in protection through the agent endpoint", function () {
  this.timeout(10_000);
  const agent = new FakeEcsAgent();
  let logger: RecordingLogger;
  let metrics: RecordingMetrics;

  before(() => agent.start());
  after(() => agent.stop());
  beforeEach(() => {
    agent.reset();
    logger = new RecordingLogger();
    metrics = new RecordingMetrics();
  });
  // Refreshes and retries run on fake time; the agent's HTTP is real, over node:http (see httpFetch).
  useFakeTime();

  const protection = (options: { agentUri?: string; refreshIntervalMs?: number; expiresInMinutes?: number; enableRetryMs?: number } = {}) =>
    new TaskProtection({
      agentUri: "agentUri" in options ? options.agentUri : agent.uri,
      expiresInMinutes: options.expiresInMinutes ?? 30,
      refreshIntervalMs: options.refreshIntervalMs,
      enableRetryMs: options.enableRetryMs,
      requestTimeoutMs: 500,
      fetch: httpFetch,
      logger,
      metrics,
    });

  it("PUTs {ProtectionEnabled, ExpiresInMinutes} to $ECS_AGENT_URI/task-protection/v1/state, then releases", async () => {
    const p = protection();

    await p.acquire();
    await p.release();

    expect(agent.requests.map((r) => [r.method, r.url, r.body])).to.deep.equal([
      ["PUT", "/api/task-1234/task-protection/v1/state", { ProtectionEnabled: true, ExpiresInMinutes: 30 }],
      ["PUT", "/api/task-1234/task-protection/v1/state", { ProtectionEnabled: false }],
    ]);
    expect(logger.withStep("task_protection_changed").map((e) => e.fields.enabled)).to.deep.equal([true, false]);
    expect([metrics.count("TaskProtectionEnabled"), metrics.count("TaskProtectionReleased")]).to.deep.equal([1, 1]);
  });

  it("two overlapping jobs give one protect and one unprotect, after both have finished", async () => {
    const p = protection();

    await p.acquire(); // job A starts
    await p.acquire(); // job B starts
    await p.release(); // A ends: B still works
    const afterFirstEnd = agent.puts();
    await p.release(); // B ends

    expect(afterFirstEnd).to.deep.equal([true]);
    expect(agent.puts()).to.deep.equal([true, false]);
    expect(p.holders).to.equal(0);
  });

  it("refreshes before expiry while a job is held, and stops refreshing once released", async () => {
    const p = protection({ refreshIntervalMs: 40 });

    await p.acquire();
    await waitFor(() => agent.puts().length >= 3, 2000, "two refreshes");
    await p.release();
    const count = agent.puts().length;
    await advance(120);

    expect(agent.puts().slice(0, 3)).to.deep.equal([true, true, true]);
    expect(agent.puts().at(-1)).to.equal(false);
    expect(agent.puts().length).to.equal(count);
    expect(agent.requests.filter((r) => r.body?.ProtectionEnabled).every((r) => r.body?.ExpiresInMinutes === 30)).to.equal(true);
  });

  const intervals: Array<[number, number]> = [
    [1, 48_000],
    [60, 2_880_000],
    [2880, 138_240_000],
  ];
  for (const [minutes, ms] of intervals) {
    it(`refreshes an expiry of ${minutes} min at 80 % (${ms} ms), before it lapses`, () => {
      expect(refreshIntervalMs(minutes)).to.equal(ms);
      expect(refreshIntervalMs(minutes)).to.be.below(minutes * 60_000);
    });
  }

  const failures: Array<[string, () => void, RegExp]> = [
    ["an HTTP 500", () => (agent.behaviour = { status: 500 }), /HTTP 500/],
    ["a 200 with a failure object", () => (agent.behaviour = "failure"), /TASK_NOT_VALID/],
    ["a reset connection", () => (agent.behaviour = "reset"), /fetch failed|socket|ECONNRESET|other side closed/i],
  ];
  for (const [name, arrange, reason] of failures) {
    it(`swallows ${name}: logged and counted, never thrown`, async () => {
      arrange();
      const p = protection();

      await p.acquire();
      await p.release();

      const failed = logger.withStep("task_protection_failed");
      expect(failed).to.have.length(2);
      expect(String(failed[0]!.fields.error)).to.match(reason);
      expect(metrics.count("TaskProtectionFailures")).to.equal(2);
      expect(logger.withStep("task_protection_changed")).to.have.length(0);
    });
  }

  it("retries a failed first protect on a short backoff, well before the refresh, until it succeeds", async () => {
    const p = protection({ refreshIntervalMs: 60_000, enableRetryMs: 50 });
    agent.failNext = 2;

    await p.acquire();
    // The refresh is 60 s away: only the retry can re-enable protection within these 2 s.
    await waitFor(() => agent.protectedNow, 2000, "protection re-enabled");
    const attempts = agent.puts().length;
    await advance(200);

    expect(attempts).to.equal(3);
    expect(agent.puts()).to.have.length(attempts);
    expect(logger.withStep("task_protection_changed")[0]!.fields).to.include({ enabled: true, reason: "retry" });
    await p.release();
    expect(agent.protectedNow).to.equal(false);
  });

  it("stops retrying a failed protect once the last job has ended", async () => {
    agent.behaviour = { status: 500 };
    const p = protection({ refreshIntervalMs: 60_000, enableRetryMs: 50 });

    await p.acquire();
    await p.release();
    await advance(200);

    expect(agent.puts()).to.deep.equal([true, false]);
  });

  it("swallows a refused connection (no agent listening)", async () => {
    const p = protection({ agentUri: DEAD_AGENT_URI });

    await p.acquire();
    await p.release();

    expect(logger.withStep("task_protection_failed")).to.have.length(2);
  });

  it("is a no-op outside ECS (no ECS_AGENT_URI)", async () => {
    const p = protection({ agentUri: undefined });

    await p.reconcile();
    await p.acquire();
    await p.release();

    expect(p.enabled).to.equal(false);
    expect(agent.requests).to.have.length(0);
    expect(logger.steps()).to.deep.equal(["task_protection_disabled"]);
  });

  it("at start-up, releases a protection left on by a previous container (GET, then PUT false)", async () => {
    agent.protectedNow = true;
    const p = protection();

    await p.reconcile();

    expect(agent.requests.map((r) => [r.method, r.body?.ProtectionEnabled])).to.deep.equal([
      ["GET", undefined],
      ["PUT", false],
    ]);
    expect(logger.withStep("task_protection_changed")[0]!.fields).to.include({ enabled: false, reason: "reconcile" });
  });

  it("at start-up, leaves an unprotected task alone", async () => {
    await protection().reconcile();
    expect(agent.requests.map((r) => r.method)).to.deep.equal(["GET"]);
  });

  it("releaseAll on shutdown drops every hold with a single unprotect", async () => {
    const p = protection();
    await p.acquire();
    await p.acquire();

    await p.releaseAll();

    expect(agent.puts()).to.deep.equal([true, false]);
    expect(p.holders).to.equal(0);
  });

  it("reads the agent's reply shape", () => {
    expect(readProtectionEnabled({ protection: { ProtectionEnabled: true } })).to.equal(true);
    expect(readProtectionEnabled({ protection: {} })).to.equal(undefined);
    expect(readProtectionEnabled("nope")).to.equal(undefined);
  });
});
