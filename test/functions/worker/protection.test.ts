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
  const uris: Array<[string, string]> = [
    ["one trailing slash", "/"],
    ["several trailing slashes", "//"],
  ];
  for (const [name, tail] of uris) {
    it(`appends the endpoint path to an ECS_AGENT_URI with ${name}`, async () => {
      const p = protection({ agentUri: agent.uri + tail });

      await p.acquire();

      expect(agent.requests.map((r) => r.url)).to.deep.equal(["/api/task-1234/task-protection/v1/state"]);
    });
  }

  it("sends JSON with its content type, and the start-up GET without a body", async () => {
    const p = protection();

    await p.reconcile();
    await p.acquire();

    expect(agent.requests.map((r) => [r.method, r.contentType, r.raw])).to.deep.equal([
      ["GET", "application/json", ""],
      ["PUT", "application/json", '{"ProtectionEnabled":true,"ExpiresInMinutes":30}'],
    ]);
  });

  const replies: Array<[string, { status: number; body: string }, RegExp | undefined]> = [
    ["an empty 200 as success", { status: 200, body: "" }, undefined],
    ["a 200 of JSON null as success", { status: 200, body: "null" }, undefined],
    ["a 200 of a JSON array as success", { status: 200, body: "[]" }, undefined],
    [
      "a 200 naming a failure as a failure, quoting it",
      { status: 200, body: '{"failure":{"Reason":"TASK_NOT_VALID"}}' },
      /^Error: agent reported failure: \{"Reason":"TASK_NOT_VALID"\}$/,
    ],
    ["an HTTP error as a failure, quoting at most 500 characters of its body", { status: 404, body: "x".repeat(600) }, new RegExp(`^Error: HTTP 404: x{500}$`)],
  ];
  for (const [name, reply, failure] of replies) {
    it(`reads ${name}`, async () => {
      agent.behaviour = reply;
      const p = protection();

      await p.acquire();

      const failed = logger.withStep("task_protection_failed").map((e) => String(e.fields.error));
      if (failure) {
        expect(failed).to.have.length(1);
        expect(failed[0]).to.match(failure);
        expect(logger.withStep("task_protection_changed")).to.deep.equal([]);
      } else {
        expect(failed).to.deep.equal([]);
        expect(logger.withStep("task_protection_changed")).to.have.length(1);
      }
    });
  }

  it("logs a failed call with its method, the state it asked for (PUT only) and the error, as a warning", async () => {
    agent.behaviour = { status: 503, body: "busy" };
    const p = protection();

    await p.reconcile();
    await p.acquire();
    await p.release();

    expect(logger.withStep("task_protection_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["warn", { step: "task_protection_failed", method: "GET", error: "Error: HTTP 503: busy" }],
      ["warn", { step: "task_protection_failed", method: "PUT", enabled: true, error: "Error: HTTP 503: busy" }],
      ["warn", { step: "task_protection_failed", method: "PUT", enabled: false, error: "Error: HTTP 503: busy" }],
    ]);
  });

  it("logs each change with its reason, the expiry only when enabling, and counts it", async () => {
    const p = protection();

    await p.acquire();
    await p.release();

    expect(logger.withStep("task_protection_changed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["info", { step: "task_protection_changed", enabled: true, reason: "job_started", expires_in_minutes: 30 }],
      ["info", { step: "task_protection_changed", enabled: false, reason: "idle" }],
    ]);
    expect(metrics.added).to.deep.equal([
      { name: "TaskProtectionEnabled", unit: "Count", value: 1 },
      { name: "TaskProtectionReleased", unit: "Count", value: 1 },
    ]);
  });

  it("logs a refresh at debug level only: not a change, not counted", async () => {
    const p = protection({ refreshIntervalMs: 40 });

    await p.acquire();
    await waitFor(() => agent.puts().length === 2, 2000, "one refresh");
    await advance(5);
    await p.releaseAll();

    expect(logger.withStep("task_protection_refreshed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["debug", { step: "task_protection_refreshed", expires_in_minutes: 30 }],
    ]);
    expect(logger.withStep("task_protection_changed").map((e) => e.fields.reason)).to.deep.equal(["job_started", "shutdown"]);
    expect(metrics.count("TaskProtectionEnabled")).to.equal(1);
  });

  it("measures how long protection has been held from the first job on, and 0 once released", async () => {
    const p = protection();
    const before = p.heldForMs();

    await p.acquire();
    await advance(200);
    await p.acquire(); // a second job does not restart the clock
    await advance(100);
    const held = p.heldForMs();
    await p.release();
    const oneLeft = p.heldForMs();
    await p.release();

    expect([before, held, oneLeft >= 300, p.heldForMs()]).to.deep.equal([0, 300, true, 0]);
    expect(p.heldForMs(Date.now() + 1000)).to.equal(0);
  });

  it("ignores a release nothing holds: no call, and the next job still protects the task", async () => {
    const p = protection();

    await p.release();
    await p.acquire();

    expect(agent.puts()).to.deep.equal([true]);
    expect(p.holders).to.equal(1);
  });

  it("at start-up, never releases a protection a job already holds", async () => {
    const p = protection();
    await p.acquire();

    await p.reconcile();

    expect(agent.requests.map((r) => [r.method, r.body?.ProtectionEnabled])).to.deep.equal([
      ["PUT", true],
      ["GET", undefined],
    ]);
  });

  it("releaseAll with nothing held makes no call", async () => {
    const p = protection();

    await p.releaseAll();

    expect(agent.requests).to.deep.equal([]);
  });

  it("refreshes at 80 % of the expiry by default (48 s for 1 min)", async () => {
    const p = protection({ expiresInMinutes: 1 });

    await p.acquire();
    await advance(47_900);
    const before = agent.puts().length;
    await advance(200);

    expect([before, agent.puts().length]).to.deep.equal([1, 2]);
    await p.releaseAll();
  });

  it("retries a failed enable after 15 s by default", async () => {
    agent.failNext = 1;
    const p = protection({ refreshIntervalMs: 600_000 });

    await p.acquire();
    await advance(14_900);
    const before = agent.puts().length;
    await advance(200);

    expect([before, agent.puts().length]).to.deep.equal([1, 2]);
    await p.releaseAll();
  });

  it("keeps retrying an enable that keeps failing, every enableRetryMs", async () => {
    agent.behaviour = { status: 500 };
    const p = protection({ refreshIntervalMs: 600_000, enableRetryMs: 120 });

    await p.acquire();
    await advance(250);

    expect(agent.puts()).to.deep.equal([true, true, true]);
    await p.releaseAll();
  });

  it("schedules one retry at a time while refreshes keep failing too", async () => {
    agent.behaviour = { status: 500 };
    const p = protection({ refreshIntervalMs: 50, enableRetryMs: 120 });

    await p.acquire();
    await advance(210);

    // the first enable, refreshes at 50, 100, 150, 200, and the one retry at 120
    expect(agent.puts()).to.have.length(6);
    await p.releaseAll();
  });

  it("drops a pending retry once a refresh has re-enabled protection", async () => {
    agent.failNext = 1;
    const p = protection({ refreshIntervalMs: 50, enableRetryMs: 120 });

    await p.acquire();
    await advance(130);

    // the failed enable, then refreshes at 50 and 100; no retry at 120
    expect(agent.puts()).to.have.length(3);
    expect(logger.withStep("task_protection_changed").map((e) => e.fields.reason)).to.deep.equal([]);
    await p.releaseAll();
  });

  it("skips a retry that was queued behind a slow call when the last job ended meanwhile", async () => {
    // Prepare: every answer takes 100 ms; the first enable fails, so a retry is due at 150 ms,
    // while the refresh sent at 140 ms is still on its way
    agent.delayMs = 100;
    agent.failNext = 1;
    const p = protection({ refreshIntervalMs: 140, enableRetryMs: 50 });
    void p.acquire();
    await advance(160);

    // Act: the job ends before the queued retry's turn
    const released = p.release();
    await advance(400);
    await released;

    // Assess: the failed enable, the refresh, the release; the retry never re-protects the task
    expect(agent.puts()).to.deep.equal([true, true, false]);
    expect(agent.protectedNow).to.equal(false);
  });

  const shapes: Array<[string, unknown, boolean | undefined]> = [
    ["protection on", { protection: { ProtectionEnabled: true } }, true],
    ["protection off", { protection: { ProtectionEnabled: false } }, false],
    ["a non-boolean state", { protection: { ProtectionEnabled: "true" } }, undefined],
    ["no protection object", {}, undefined],
    ["null", null, undefined],
    ["a failed call (nothing)", undefined, undefined],
  ];
  for (const [name, reply, expected] of shapes) {
    it(`reads the agent's reply shape: ${name}`, () => {
      expect(readProtectionEnabled(reply)).to.equal(expected);
    });
  }
  it("is enabled with an agent URI, and says why it is a no-op without one", async () => {
    const on = protection();
    const off = protection({ agentUri: undefined });

    await off.reconcile();

    expect([on.enabled, off.enabled]).to.deep.equal([true, false]);
    expect(logger.withStep("task_protection_disabled").map((e) => [e.level, e.fields])).to.deep.equal([
      ["info", { step: "task_protection_disabled", reason: "ECS_AGENT_URI is not set" }],
    ]);
  });

  it("releaseAll stops the refresh: no enable after the shutdown release", async () => {
    const p = protection({ refreshIntervalMs: 50 });
    await p.acquire();

    await p.releaseAll();
    await advance(200);

    expect(agent.puts()).to.deep.equal([true, false]);
  });

  it("gives up on an agent that does not answer after requestTimeoutMs", async () => {
    // Prepare: the agent holds every answer for a minute (of fake time: it never comes)
    agent.delayMs = 60_000;
    const p = new TaskProtection({ agentUri: agent.uri, expiresInMinutes: 30, requestTimeoutMs: 100, fetch: httpFetch, logger, metrics });
    const startedAt = performance.now();

    // Act
    await p.reconcile();

    // Assess: the timeout runs on real time
    expect(performance.now() - startedAt).to.be.below(2000);
    expect(String(logger.withStep("task_protection_failed")[0]!.fields.error)).to.match(/abort|timeout/i);
  });

  it("a new job whose enable fails gets a full retry backoff, even when an earlier job's retry was pending at its release", async () => {
    // Prepare: the first enable fails (retry due at +120 ms), its job ends at +10 ms, a new job starts at +20 ms and its enable fails too
    agent.failNext = 1;
    const p = protection({ refreshIntervalMs: 600_000, enableRetryMs: 120 });
    await p.acquire();
    await advance(10);
    await p.release();
    await advance(10);
    agent.failNext = 1;
    const secondAt = Date.now();
    await p.acquire();

    // Act
    await advance(200);

    // Assess: the retry comes 120 ms after the second job's enable, not at the first one's time
    const enables = agent.requests.filter((r) => r.body?.ProtectionEnabled === true).map((r) => r.at - secondAt);
    expect(enables.slice(1)).to.have.length(2);
    expect(enables[2]).to.be.at.least(115);
    await p.releaseAll();
  });

  it("a job released while its enable was failing leaves no retry behind for the next job", async () => {
    // Prepare: the enable answers after 50 ms with a failure, after the job already ended
    agent.delayMs = 50;
    agent.failNext = 1;
    const p = protection({ refreshIntervalMs: 600_000, enableRetryMs: 120 });
    void p.acquire();
    await advance(5);
    const released = p.release();
    await advance(150);
    await released;
    agent.failNext = 1; // the next job's enable fails too
    const secondAt = Date.now();
    void p.acquire();

    // Act
    await advance(300);

    // Assess: the next job's retry comes a full backoff after its own enable failed (at +50 ms)
    const enables = agent.requests.filter((r) => r.body?.ProtectionEnabled === true).map((r) => r.at - secondAt);
    expect(enables.filter((at) => at >= 0)).to.have.length(2);
    expect(enables.at(-1)).to.be.at.least(165);
    await p.releaseAll();
  });
});
