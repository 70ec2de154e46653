import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { MetricsSink } from "../../../functions/shared/metrics";
import { createWorker } from "../../../functions/worker/worker";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message } from "../helpers/worker-deps";
import { arrangeQueue, deleted, gate, mockedWorkerDeps, runUntil } from "../helpers/worker-harness";

/** An error the SDK gives up on without an HTTP answer (a reset): one worth sending again. */
const reset = () => Object.assign(new Error("socket hang up"), { name: "ECONNRESET", $metadata: {} });

describe("worker: log steps, metrics and their flushes (docs/parts/worker.md, 'Log steps and metrics')", function () {
  this.timeout(15_000);
  useFakeTime();

  it("logs worker_started with its concurrency, idle window, protection state and job types", async () => {
    // Prepare
    const t = mockedWorkerDeps({
      config: { concurrency: 3, idleWindowMs: 1500 },
      handlers: { resize: () => Promise.resolve(), thumb: () => Promise.resolve() },
    });
    arrangeQueue(t, []);

    // Act
    await runUntil(t, () => t.sqsMock.commandCalls(ReceiveMessageCommand).length >= 1, "a poll");

    // Assess
    expect(t.logger.withStep("worker_started").map((e) => [e.level, e.fields])).to.deep.equal([
      ["info", { step: "worker_started", concurrency: 3, idle_window_ms: 1500, task_protection: false, job_types: ["resize", "thumb"] }],
    ]);
  });

  it("logs a job's start and success with its ids, receive count, visibility and duration, and counts it", async () => {
    // Prepare: the third delivery of a job that runs 250 ms
    const t = mockedWorkerDeps({ handlers: { resize: () => sleep(250) } });
    const m = message(job("resize", { job_id: "j-log", estimated_seconds: 100 }), 3);
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => t.logger.withStep("job_succeeded").length === 1, "the success");

    // Assess
    const ids = { job_id: "j-log", type: "resize", message_id: m.MessageId, receive_count: 3 };
    expect(t.logger.withStep("job_started").map((e) => [e.level, e.fields])).to.deep.equal([
      ["info", { step: "job_started", ...ids, visibility_seconds: 200 }],
    ]);
    expect(t.logger.withStep("job_succeeded").map((e) => [e.level, e.fields])).to.deep.equal([["info", { step: "job_succeeded", ...ids, duration_ms: 250 }]]);
    expect(t.metrics.added).to.deep.equal([
      { name: "JobsStarted", unit: "Count", value: 1 },
      { name: "JobsSucceeded", unit: "Count", value: 1 },
      { name: "JobDuration", unit: "Milliseconds", value: 250 },
    ]);
    expect(worker.stats).to.deep.equal({
      received: 1,
      succeeded: 1,
      failed: 0,
      quarantined: 0,
      returned: 0,
      alreadyCompleted: 0,
      heldElsewhere: 0,
      leasesLost: 0,
    });
  });

  it("logs a failed job as job_failed (warn) with its error, retry delay and duration, and counts it", async () => {
    // Prepare
    const t = mockedWorkerDeps({ config: { retryDelaySeconds: 45 }, handlers: { boom: () => sleep(120).then(() => Promise.reject(new Error("exit 3"))) } });
    const m = message(job("boom", { job_id: "j-boom", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);

    // Act
    await runUntil(t, () => t.logger.withStep("job_failed").length === 1, "the failure");

    // Assess
    expect(t.logger.withStep("job_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      [
        "warn",
        {
          step: "job_failed",
          job_id: "j-boom",
          type: "boom",
          message_id: m.MessageId,
          receive_count: 1,
          duration_ms: 120,
          error: "Error: exit 3",
          retry_in_seconds: 45,
        },
      ],
    ]);
    expect(t.metrics.added.filter((x) => x.name !== "JobsStarted")).to.deep.equal([
      { name: "JobsFailed", unit: "Count", value: 1 },
      { name: "JobDuration", unit: "Milliseconds", value: 120 },
    ]);
  });

  it("reads a receive count of 0 from a message without one", async () => {
    // Prepare
    const t = mockedWorkerDeps({ handlers: { resize: () => Promise.resolve() } });
    const { Attributes: _dropped, ...bare } = message(job("resize"));
    arrangeQueue(t, [[bare]]);

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess
    expect(t.logger.withStep("job_started")[0]!.fields.receive_count).to.equal(0);
  });

  it("publishes stored metrics after each job and at shutdown, and never an empty flush", async () => {
    // Prepare: a job, then a malformed message whose quarantine fails (nothing to count)
    const t = mockedWorkerDeps({ handlers: { resize: () => Promise.resolve() } });
    arrangeQueue(t, [[message(job("resize"))], [message("{garbage")]]);
    t.sqsMock.on(SendMessageCommand).rejects(new Error("throttled"));
    const worker = createWorker(t.deps);
    const running = worker.run();
    let afterJob: number;
    let afterFailedQuarantine: number;
    try {
      // Act
      await waitFor(() => t.logger.withStep("job_succeeded").length === 1, 3000, "the job");
      await advance(10);
      afterJob = t.metrics.published;
      await waitFor(() => t.logger.withStep("quarantine_failed").length === 1, 3000, "the failed quarantine");
      await advance(10);
      afterFailedQuarantine = t.metrics.published;
    } finally {
      worker.stop("test");
      await until(running);
    }

    // Assess
    expect([afterJob, afterFailedQuarantine, t.metrics.published]).to.deep.equal([1, 1, 2]);
  });

  it("logs the start and the end of shutdown with its reason, what was in flight, the stats and the unfinished jobs", async () => {
    // Prepare: one job still running at stop
    const held = gate();
    const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { held: held.handler } });
    arrangeQueue(t, [[message(job("held"))]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => held.started() === 1, 3000, "the job");

    // Act
    worker.stop("SIGTERM");
    worker.stop("SIGINT"); // a second signal changes nothing
    await until(running);

    // Assess
    expect(t.logger.withStep("shutdown_started").map((e) => [e.level, e.fields])).to.deep.equal([
      ["info", { step: "shutdown_started", reason: "SIGTERM", in_flight: 1 }],
    ]);
    expect(t.logger.withStep("shutdown_complete").map((e) => [e.level, e.fields])).to.deep.equal([
      [
        "info",
        {
          step: "shutdown_complete",
          received: 1,
          succeeded: 0,
          failed: 0,
          quarantined: 0,
          returned: 1,
          alreadyCompleted: 0,
          heldElsewhere: 0,
          leasesLost: 0,
          unfinished: 1,
        },
      ],
    ]);
    expect(t.logger.withStep("job_returned").map((e) => e.level)).to.deep.equal(["warn"]);
    expect(t.metrics.count("JobsReturned")).to.equal(1);
  });

  it("gives a finished job's delete up after the resend policy's rounds: logged as delete_failed, the job still a success", async () => {
    // Prepare: two sends in all, each reset
    const t = mockedWorkerDeps({ handlers: { resize: () => Promise.resolve() } });
    const m = message(job("resize", { job_id: "j-del" }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(DeleteMessageCommand).rejects(reset());
    t.deps.resend = { rounds: 2, baseDelayMs: 0, sleep: async () => undefined };

    // Act
    const worker = await runUntil(t, () => t.logger.withStep("job_succeeded").length === 1, "the job's end");

    // Assess
    expect(deleted(t)).to.deep.equal([m.ReceiptHandle, m.ReceiptHandle]);
    expect(t.logger.withStep("delete_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "delete_failed", job_id: "j-del", message_id: m.MessageId, error: "ECONNRESET: socket hang up" }],
    ]);
    expect(worker.stats.succeeded).to.equal(1);
  });

  it("logs a failed visibility change with its purpose, and a give-back that failed as not visible again (not counted returned)", async () => {
    // Prepare: every ChangeMessageVisibility fails; the job is still running at stop
    const held = gate();
    const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { held: held.handler } });
    const m = message(job("held", { job_id: "j-vis", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(ChangeMessageVisibilityCommand).rejects(new Error("AccessDenied"));
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => held.started() === 1, 3000, "the job");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(t.logger.withStep("visibility_change_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "visibility_change_failed", message_id: m.MessageId, purpose: "initial", seconds: 200, error: "Error: AccessDenied" }],
      ["error", { step: "visibility_change_failed", message_id: m.MessageId, purpose: "give_back", seconds: 0, error: "Error: AccessDenied" }],
    ]);
    expect(t.logger.withStep("job_returned").map((e) => e.fields)).to.deep.equal([
      { step: "job_returned", job_id: "j-vis", message_id: m.MessageId, visible_again: false },
    ]);
    expect(worker.stats.returned).to.equal(0);
  });

  it("logs a failed poll as receive_failed and pauses a second before the next one", async () => {
    // Prepare: the first poll fails at once
    const t = mockedWorkerDeps();
    const polledAt: number[] = [];
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      polledAt.push(Date.now());
      if (polledAt.length === 1) throw new Error("503");
      await sleep(20);
      return { Messages: [] };
    });

    // Act
    await runUntil(t, () => polledAt.length >= 2, "the second poll");

    // Assess
    expect(t.logger.withStep("receive_failed").map((e) => [e.level, e.fields])).to.deep.equal([["error", { step: "receive_failed", error: "Error: 503" }]]);
    expect(polledAt[1]! - polledAt[0]!).to.be.within(1000, 1010);
  });

  it("a poll that fails after stop() is part of the shutdown, not a failure: no receive_failed, no pause", async () => {
    // Prepare: the poll in flight at stop() then fails
    const t = mockedWorkerDeps();
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(100);
      throw new Error("connection closed");
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await advance(20);

    // Act
    const stoppedAt = Date.now();
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(t.logger.withStep("receive_failed")).to.deep.equal([]);
    expect(Date.now() - stoppedAt).to.be.below(500);
  });

  it("a job whose bookkeeping throws is logged as job_crashed and frees its slot", async () => {
    // Prepare: the metrics sink refuses the first JobsStarted (Powertools throws on a unit clash)
    const t = mockedWorkerDeps({ handlers: { resize: () => Promise.resolve() } });
    const first = message(job("resize"));
    arrangeQueue(t, [[first], [message(job("resize"))]]);
    const recording = t.deps.metrics;
    let refused = false;
    const refusing: MetricsSink = {
      addMetric: (name, unit, value) => {
        if (name === "JobsStarted" && !refused) {
          refused = true;
          throw new Error("metric unit clash");
        }
        return recording.addMetric(name, unit, value);
      },
      publishStoredMetrics: () => recording.publishStoredMetrics(),
    };
    t.deps.metrics = refusing;

    // Act
    await runUntil(t, () => t.logger.withStep("job_succeeded").length === 1, "the next job");

    // Assess
    expect(t.logger.withStep("job_crashed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "job_crashed", message_id: first.MessageId, error: "Error: metric unit clash" }],
    ]);
  });
});
