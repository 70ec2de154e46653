import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type Message } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { JobContext } from "../../../functions/worker/handlers";
import { createWorker } from "../../../functions/worker/worker";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message, WORK_URL } from "../helpers/worker-deps";
import { arrangeQueue, deleted, gate, mockedWorkerDeps, runUntil, visibilityCalls } from "../helpers/worker-harness";

describe("worker: the receive loop's promises (idle window, grace period, waking, what reaches the handler)", function () {
  this.timeout(15_000);
  useFakeTime();

  it("hands the handler its job, the message id and an abort signal whose reason says the task is stopping", async () => {
    // Prepare
    const seen: JobContext[] = [];
    const held = gate();
    const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { held: (ctx) => (seen.push(ctx), held.handler(ctx)) } });
    const m = message(job("held", { job_id: "j-ctx" }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => held.started() === 1, 3000, "the job");
    const inFlight = worker.inFlight;

    // Act
    worker.stop();
    await until(running);

    // Assess
    expect(inFlight).to.equal(1);
    expect(worker.inFlight).to.equal(0);
    expect(seen[0]!.messageId).to.equal(m.MessageId);
    expect(seen[0]!.job.job_id).to.equal("j-ctx");
    expect(seen[0]!.signal.reason).to.be.instanceOf(Error);
    expect(seen[0]!.signal.reason).to.include({ name: "ShutdownAbort", message: "task is stopping: job given back to the queue" });
    expect(t.logger.withStep("shutdown_started")[0]!.fields.reason).to.equal("stop");
  });

  it("hands the handler an empty message id when SQS gave none", async () => {
    const ids: string[] = [];
    const t = mockedWorkerDeps({ handlers: { quick: async ({ messageId }) => void ids.push(messageId) } });
    const { MessageId: _none, ...anonymous } = message(job("quick"));
    arrangeQueue(t, [[anonymous]]);

    await runUntil(t, () => ids.length === 1, "the job");

    expect(ids).to.deep.equal([""]);
  });

  it("starts nothing from an empty receive (SQS leaves Messages out)", async () => {
    const t = mockedWorkerDeps();
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(20);
      return {};
    });

    const worker = await runUntil(t, () => t.sqsMock.commandCalls(ReceiveMessageCommand).length >= 3, "three polls");

    expect(worker.stats.received).to.equal(0);
    expect(t.sqsMock.commandCalls(SendMessageCommand)).to.deep.equal([]);
  });

  it("starts nothing after a failed poll, and gives nothing back from a poll that failed at stop()", async () => {
    // Prepare: the first poll fails; the second is in flight at stop() and fails too
    const t = mockedWorkerDeps();
    arrangeQueue(t, []);
    let calls = 0;
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      await sleep(calls === 1 ? 10 : 300);
      throw new Error("503");
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => calls === 2, 3000, "the second poll");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(worker.stats.received).to.equal(0);
    expect(t.sqsMock.commandCalls(ChangeMessageVisibilityCommand)).to.deep.equal([]);
    expect(t.sqsMock.commandCalls(SendMessageCommand)).to.deep.equal([]);
    expect(t.logger.withStep("shutdown_returned")).to.deep.equal([]);
  });

  it("on stop, reports a poll's messages it could not make visible again", async () => {
    // Prepare: the poll in flight at stop() brings two messages; one give-back fails
    const t = mockedWorkerDeps({ handlers: { quick: () => Promise.resolve() } });
    arrangeQueue(t, []);
    const late = [message(job("quick")), message(job("quick"))];
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(200);
      return { Messages: late };
    });
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake((input: { ReceiptHandle?: string }) => {
      if (input.ReceiptHandle === late[1]!.ReceiptHandle) throw new Error("AccessDenied");
      return {};
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await advance(20);

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(t.logger.withStep("shutdown_returned").map((e) => e.fields)).to.deep.equal([
      { step: "shutdown_returned", messages: 2, visible_again: 1, message_ids: late.map((m) => m.MessageId) },
    ]);
    expect(t.logger.withStep("visibility_change_failed").map((e) => e.fields.purpose)).to.deep.equal(["give_back"]);
  });

  it("counts the grace period from stop(), not from the end of the poll that was in flight", async () => {
    // Prepare: N = 2; a job that needs 550 ms more at stop(), a 400 ms grace, and a poll answering 300 ms after stop()
    const t = mockedWorkerDeps({
      config: { concurrency: 2, shutdownGraceMs: 400, abortSettleMs: 50 },
      handlers: {
        slow: async ({ signal }) =>
          void (await Promise.race([sleep(560), new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))))])),
      },
    });
    const m = message(job("slow", { estimated_seconds: 100 }));
    arrangeQueue(t, []);
    let calls = 0;
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      if (calls === 1) return { Messages: [m] };
      await sleep(310);
      return { Messages: [] };
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => calls === 2, 3000, "the poll in flight");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess: aborted at stop() + 400 ms and given back, not finished at stop() + 550 ms
    expect(deleted(t)).to.deep.equal([]);
    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 200],
      [m.ReceiptHandle, 0],
    ]);
  });

  it("starts the idle window when the last job ends, not when the first of several does", async () => {
    // Prepare: N = 2, jobs of 100 ms and 400 ms started together, a 500 ms window
    const ended: number[] = [];
    const t = mockedWorkerDeps({
      config: { concurrency: 2, idleWindowMs: 500 },
      handlers: {
        timed: async ({ job: j }) => {
          await sleep((j.payload as { ms: number }).ms);
          ended.push(Date.now());
        },
      },
    });
    const { receivedAt } = arrangeQueue(t, [[message(job("timed", { payload: { ms: 100 } })), message(job("timed", { payload: { ms: 400 } }))]]);

    // Act
    await runUntil(t, () => ended.length === 2 && receivedAt.some((at) => at > ended[1]!), "a poll after the window");

    // Assess
    const lastEnd = ended[1]!;
    expect(receivedAt.find((at) => at > lastEnd)! - lastEnd).to.be.at.least(490);
  });

  it("a quarantined message after a job's idle window is not work: no second window before the next job", async () => {
    // Prepare: a job, then (after its window) garbage, then a job
    const t = mockedWorkerDeps({ config: { idleWindowMs: 300 }, handlers: { quick: () => Promise.resolve() } });
    const { receivedAt } = arrangeQueue(t, [[message(job("quick"))], [message("{garbage")], [message(job("quick"))]]);

    // Act
    await runUntil(t, () => deleted(t).length === 3, "the job, the quarantine and the job");

    // Assess: the third receive follows the second at once
    expect(receivedAt[2]! - receivedAt[1]!).to.be.below(100);
  });

  it("reports no deferred messages for polls outside an idle window, even one landing as the window ends", async () => {
    // Prepare: the second poll answers at once, the moment the window ends
    const t = mockedWorkerDeps({ config: { idleWindowMs: 300 }, handlers: { quick: () => Promise.resolve() } });
    arrangeQueue(t, [[message(job("quick"))], [message(job("quick"))]]);

    // Act
    await runUntil(t, () => deleted(t).length === 2, "both jobs");

    // Assess
    expect(t.logger.withStep("idle_window_deferred")).to.deep.equal([]);
  });

  it("keeps polling for a free slot while a job started from an in-flight poll runs inside the idle window", async () => {
    // Prepare: N = 2; the first job ends while the second slot's poll is in flight; that poll brings a 400 ms job
    const started: number[] = [];
    const ended: number[] = [];
    const t = mockedWorkerDeps({
      config: { concurrency: 2, idleWindowMs: 2000 },
      handlers: {
        timed: async ({ job: j }) => {
          started.push(Date.now());
          await sleep((j.payload as { ms: number }).ms);
          ended.push(Date.now());
        },
      },
    });
    const receivedAt: number[] = [];
    let calls = 0;
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      receivedAt.push(Date.now());
      if (calls === 1) return { Messages: [message(job("timed", { payload: { ms: 50 } }))] };
      await sleep(calls === 2 ? 100 : 20);
      return { Messages: calls === 2 ? [message(job("timed", { payload: { ms: 400 } }))] : [] };
    });
    const worker = createWorker(t.deps);

    // Act
    const running = worker.run();
    try {
      await waitFor(() => ended.length === 2, 3000, "the deferred job");
    } finally {
      worker.stop("test");
      await until(running);
    }

    // Assess: polls while the deferred job ran (the task was protected, not idle)
    expect(t.logger.withStep("idle_window_deferred").map((e) => e.fields)).to.have.length(1);
    expect(receivedAt.filter((at) => at > started[1]! && at < ended[1]!)).to.have.length.at.least(5);
  });

  it("stops polling as soon as protection has been held maxProtectedMs", async () => {
    // Prepare: N = 2, a long job, empty polls of 20 ms each
    const long = gate();
    let jobStart = 0;
    const t = mockedWorkerDeps({ config: { concurrency: 2, maxProtectedMs: 100 }, handlers: { long: (ctx) => ((jobStart = Date.now()), long.handler(ctx)) } });
    const { receivedAt } = arrangeQueue(t, [[message(job("long"))]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    try {
      await waitFor(() => long.started() === 1, 3000, "the long job");

      // Act
      await advance(300);
    } finally {
      long.open();
      worker.stop("test");
      await until(running);
    }

    // Assess: the poll that brought the job, then polls at +0, +20, …, +80; none once 100 ms were reached
    const whileHeld = receivedAt.filter((at) => at >= jobStart && at < jobStart + 300);
    expect(whileHeld.map((at) => at - jobStart)).to.deep.equal([0, 0, 20, 40, 60, 80]);
  });

  it("a job ending while the loop is mid-poll raises nothing unhandled, and the loop wakes after a poll's failure pause cut short", async () => {
    // Prepare: N = 2. Job A runs while the next poll fails (a 1 s pause); A's end cuts the pause
    // short; the next poll brings B and C, filling both slots; the old pause timer must not
    // leave the loop unable to wake once B and C end.
    const a = gate();
    const bc = gate();
    const t = mockedWorkerDeps({ config: { concurrency: 2 }, handlers: { a: a.handler, bc: bc.handler } });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const polls: Message[][] = [[message(job("a"))], [], [message(job("bc")), message(job("bc"))]];
    let calls = 0;
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      if (calls === 2) {
        await sleep(10);
        throw new Error("503");
      }
      const batch = polls[calls - 1];
      if (!batch) await sleep(20);
      return { Messages: batch ?? [] };
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    let pollsAfterBc: number | undefined;
    try {
      await waitFor(() => a.started() === 1 && calls === 2, 3000, "job A and the failing poll");
      await advance(100);
      a.open();
      await waitFor(() => bc.started() === 2, 3000, "jobs B and C");
      await advance(1200); // past the first pause's timer

      // Act
      const before = calls;
      bc.open();
      await waitFor(() => calls > before + 1, 3000, "polls after B and C");
      pollsAfterBc = calls - before;
    } finally {
      worker.stop("test");
      await until(running);
      process.off("unhandledRejection", onUnhandled);
    }

    // Assess
    expect(pollsAfterBc ?? 0).to.be.at.least(2);
    expect(deleted(t)).to.have.length(3);
    expect(unhandled).to.deep.equal([]);
  });

  it("N = 2 jobs ending while the loop polls raise nothing unhandled", async () => {
    const t = mockedWorkerDeps({ config: { concurrency: 2 }, handlers: { quick: () => sleep(5) } });
    arrangeQueue(t, [[message(job("quick")), message(job("quick"))], [message(job("quick"))]]);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      await runUntil(t, () => deleted(t).length === 3, "three jobs");
      await advance(20);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }

    expect(unhandled).to.deep.equal([]);
  });

  it("quarantines a malformed message: deletes it from the work queue by its receipt handle, and counts it", async () => {
    const t = mockedWorkerDeps();
    const m = message("{nope");
    arrangeQueue(t, [[m]]);

    const worker = await runUntil(t, () => deleted(t).length === 1, "the delete");

    expect(t.sqsMock.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input)).to.deep.equal([{ QueueUrl: WORK_URL, ReceiptHandle: m.ReceiptHandle }]);
    expect(worker.stats).to.deep.include({ quarantined: 1, received: 1 });
  });

  it("logs a quarantine that failed with its reason, and a quarantined message it could not delete", async () => {
    // Prepare: the first quarantine's send fails; the second's delete fails
    const t = mockedWorkerDeps();
    const first = message("{nope");
    const second = message("[]");
    arrangeQueue(t, [[first], [second]]);
    t.sqsMock.on(SendMessageCommand).rejectsOnce(new Error("throttled")).resolves({});
    t.sqsMock.on(DeleteMessageCommand).rejects(new Error("AccessDenied"));

    // Act
    await runUntil(t, () => t.logger.withStep("delete_failed").length === 1, "the failed delete");

    // Assess
    expect(t.logger.withStep("quarantine_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "quarantine_failed", message_id: first.MessageId, reason: "body is not JSON", error: "Error: throttled" }],
    ]);
    expect(t.logger.withStep("delete_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "delete_failed", message_id: second.MessageId, error: "Error: AccessDenied" }],
    ]);
  });

  it("logs a failed retry visibility and a failed heartbeat with their purposes, and no extension that did not happen", async () => {
    // Prepare: every visibility change after the first fails; the job overruns its 1 s window, then fails
    const t = mockedWorkerDeps({
      config: { heartbeatMs: 100, retryDelaySeconds: 9 },
      handlers: { boom: () => sleep(1000).then(() => Promise.reject(new Error("exit 2"))) },
    });
    const m = message(job("boom", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(ChangeMessageVisibilityCommand).resolvesOnce({}).rejects(new Error("throttled"));

    // Act
    await runUntil(t, () => t.logger.withStep("job_failed").length === 1, "the failure");

    // Assess
    const purposes = t.logger.withStep("visibility_change_failed").map((e) => [e.fields.purpose, e.fields.seconds]);
    expect(purposes.at(-1)).to.deep.equal(["retry", 9]);
    expect(purposes.slice(0, -1).length).to.be.at.least(1);
    expect(purposes.slice(0, -1).every(([purpose, seconds]) => purpose === "heartbeat" && seconds === 1)).to.equal(true);
    expect(t.logger.withStep("visibility_extended")).to.deep.equal([]);
  });
  it("reports nothing deferred when the poll in flight as the task goes idle comes back empty", async () => {
    // Prepare: N = 2; the first job ends while the second slot's poll is in flight; that poll brings nothing
    const t = mockedWorkerDeps({ config: { concurrency: 2, idleWindowMs: 800 }, handlers: { quick: () => sleep(20) } });
    let calls = 0;
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      if (calls === 1) return { Messages: [message(job("quick"))] };
      await sleep(calls === 2 ? 100 : 20);
      return { Messages: [] };
    });

    // Act
    await runUntil(t, () => calls >= 3, "the poll after the window");

    // Assess
    expect(t.logger.withStep("idle_window_deferred")).to.deep.equal([]);
  });

  it("gives an aborted handler abortSettleMs to stop: a job that returns its own message names itself", async () => {
    // Prepare: the handler needs 30 ms to clean up after its abort
    const t = mockedWorkerDeps({
      config: { shutdownGraceMs: 50, abortSettleMs: 200 },
      handlers: {
        tidy: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => void sleep(30).then(() => reject(new Error("stopped"))))),
      },
    });
    const m = message(job("tidy", { job_id: "j-tidy" }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => visibilityCalls(t).length === 1, 3000, "the job");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(t.logger.withStep("job_returned").map((e) => e.fields)).to.deep.equal([
      { step: "job_returned", job_id: "j-tidy", message_id: m.MessageId, visible_again: true },
    ]);
  });
  it("waits out the idle window in one sleep, not by spinning", async () => {
    // Prepare: a job, then a 300 ms window; every pass of the loop asks how long protection was held
    const t = mockedWorkerDeps({ config: { idleWindowMs: 300 }, handlers: { quick: () => Promise.resolve() } });
    arrangeQueue(t, [[message(job("quick"))], [message(job("quick"))]]);
    const protection = t.deps.protection;
    const heldForMs = protection.heldForMs.bind(protection);
    const passes: number[] = [];
    protection.heldForMs = (now?: number) => (passes.push(Date.now()), heldForMs(now));

    // Act
    await runUntil(t, () => deleted(t).length === 2, "both jobs");

    // Assess: a handful of passes in all (a pass per poll, one to start the window's sleep, one
    // after it), where a loop spinning through the window would make one every millisecond
    expect(passes.length).to.be.below(10);
  });
});
