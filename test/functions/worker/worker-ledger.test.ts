import { ChangeMessageVisibilityCommand, type ChangeMessageVisibilityCommandInput, DeleteMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { ConditionalOutcome } from "../../../functions/shared/conditional-write";
import { JobLedger, type LedgerStore, type LedgerWrite, MemoryLedgerStore } from "../../../functions/worker/ledger";
import { createWorker } from "../../../functions/worker/worker";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message } from "../helpers/worker-deps";
import { arrangeQueue, deleted, mockedWorkerDeps, runUntil, visibilityCalls } from "../helpers/worker-harness";

const lost = () => Object.assign(new Error("read ECONNRESET"), { name: "TimeoutError" });

/** The memory table, with faults the test arms per kind of write. */
class ArmedStore implements LedgerStore {
  readonly table = new MemoryLedgerStore();
  /** Writes that fail before they apply, by kind, while the count lasts. */
  readonly failing = { take: 0, renew: 0, complete: 0, release: 0, record: 0 };
  /** Writes that apply with their answer lost, each consumed by the first write of its kind (and job, when named). */
  readonly losing: Array<{ kind: keyof ArmedStore["failing"]; jobKey?: string }> = [];
  readonly kinds: string[] = [];

  static kindOf(w: LedgerWrite): keyof ArmedStore["failing"] {
    if (w.add?.runs) return "take";
    if (w.set.state === "completed") return "complete";
    if (w.set.lease_expires_at === 0) return "release";
    if (w.set.receipt_handle !== undefined) return "record";
    return "renew";
  }

  async write(w: LedgerWrite): Promise<ConditionalOutcome> {
    const kind = ArmedStore.kindOf(w);
    this.kinds.push(kind);
    if (this.failing[kind] > 0) {
      this.failing[kind] -= 1;
      throw lost();
    }
    const losing = this.losing.findIndex((l) => l.kind === kind && (l.jobKey === undefined || l.jobKey === w.jobKey));
    const out = await this.table.write(w);
    if (losing >= 0) {
      this.losing.splice(losing, 1);
      throw lost();
    }
    return out;
  }
}

/** Another task's ledger on the same table, on the same (fake) clock. */
const otherTask = (store: LedgerStore, holder = "task-b", leaseMs = 300) =>
  new JobLedger({ store, holder: () => Promise.resolve(holder), leaseMs, resend: { rounds: 1, baseDelayMs: 0, sleep: async () => undefined } });

describe("worker: the job ledger on each fault path", function () {
  this.timeout(15_000);
  useFakeTime();

  it("runs a job under a lease it took, completes it in the ledger, then deletes its message, and logs job_lease_taken with key and holder", async () => {
    // Prepare
    const ran: string[] = [];
    const t = mockedWorkerDeps({ holder: "task-a", handlers: { work: async ({ job: j }) => void ran.push(j.job_id) } });
    const m = message(job("work", { job_id: "j-1" }));
    arrangeQueue(t, [[m]]);

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess
    expect(ran).to.deep.equal(["j-1"]);
    expect(t.ledgerStore).to.be.instanceOf(MemoryLedgerStore);
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-1")).to.deep.include({
      state: "completed",
      outcome: "succeeded",
      holder: "task-a",
      runs: 1,
      receipt_handle: m.ReceiptHandle,
    });
    expect(t.logger.withStep("job_lease_taken").map((e) => e.fields)).to.deep.equal([
      { step: "job_lease_taken", job_key: "j-1", job_id: "j-1", message_id: m.MessageId, receive_count: 1, holder: "task-a", runs: 1, recovered: false },
    ]);
    expect(t.logger.withStep("job_completion_recovered"), "a completion answered at once is not a recovered one").to.deep.equal([]);
  });

  it("deletes a redelivered message of a completed job without running it, with this receive's handle, and logs job_already_completed", async () => {
    // Prepare: the first delivery ran and completed; its delete was lost, so the message comes back
    const ran: string[] = [];
    const t = mockedWorkerDeps({ holder: "task-a", handlers: { work: async ({ messageId }) => void ran.push(messageId) } });
    const body = job("work", { job_id: "j-done" });
    const first = message(body);
    const again = { ...first, ReceiptHandle: "rh-second-receive", Attributes: { ApproximateReceiveCount: "2" } };
    arrangeQueue(t, [[first], [again]]);
    t.sqsMock
      .on(DeleteMessageCommand, { ReceiptHandle: first.ReceiptHandle })
      .rejects(Object.assign(new Error("AccessDenied"), { name: "AccessDenied", $fault: "client" }));

    // Act
    const worker = await runUntil(
      t,
      () => t.logger.withStep("job_already_completed").length === 1 && deleted(t).includes(again.ReceiptHandle),
      "the second receive",
    );

    // Assess
    expect(ran).to.deep.equal([first.MessageId]);
    expect(deleted(t).at(-1)).to.equal(again.ReceiptHandle);
    expect(t.logger.withStep("job_already_completed").map((e) => e.fields)).to.deep.equal([
      {
        step: "job_already_completed",
        job_key: "j-done",
        job_id: "j-done",
        message_id: first.MessageId,
        receive_count: 2,
        holder: "task-a",
        completed_at: Date.UTC(2026, 0, 1),
        outcome: "succeeded",
      },
    ]);
    expect(worker.stats).to.deep.include({ succeeded: 1, alreadyCompleted: 1 });
    expect(t.metrics.count("JobsAlreadyCompleted")).to.equal(1);
  });

  it("leaves a message whose job another task holds: no run, no visibility change, no delete; its handle goes into the lease and job_held_elsewhere names the holder", async () => {
    // Prepare: task B holds j-held
    const t = mockedWorkerDeps({ holder: "task-a", handlers: { work: () => Promise.reject(new Error("must not run")) } });
    const b = otherTask(t.ledgerStore, "task-b", 60_000);
    await b.acquire("j-held", "rh-b");
    const m = message(job("work", { job_id: "j-held" }), 2);
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => t.logger.withStep("job_held_elsewhere").length === 1, "the held job");

    // Assess
    expect(visibilityCalls(t)).to.deep.equal([]);
    expect(deleted(t)).to.deep.equal([]);
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-held")).to.deep.include({ holder: "task-b", receipt_handle: m.ReceiptHandle, runs: 1 });
    expect(t.logger.withStep("job_held_elsewhere").map((e) => e.fields)).to.deep.equal([
      {
        step: "job_held_elsewhere",
        job_key: "j-held",
        job_id: "j-held",
        message_id: m.MessageId,
        receive_count: 2,
        holder: "task-b",
        lease_expires_at: Date.UTC(2026, 0, 1) + 60_000,
        receipt_handle_recorded: true,
      },
    ]);
    expect(worker.stats).to.deep.include({ heldElsewhere: 1, failed: 0, succeeded: 0 });
    expect(t.metrics.count("JobsHeldElsewhere")).to.equal(1);
  });

  it("a holder whose message was received again extends and deletes with the new receipt handle read back at its next beat", async () => {
    // Prepare: A runs j-long (1 s beats, 2 s); B receives the message mid-run and records rh-b
    const t = mockedWorkerDeps({ holder: "task-a", config: { heartbeatMs: 100 }, handlers: { work: () => sleep(2000) } });
    const m = message(job("work", { job_id: "j-long", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");
    await advance(500);

    // Act
    const held = await otherTask(t.ledgerStore).acquire("j-long", "rh-b");
    await waitFor(() => deleted(t).length === 1, 5000, "the delete");
    worker.stop("test");
    await until(running);

    // Assess: from the next beat on, every extension (1 s each: 3 × 100 ms rounded up) and the delete use rh-b
    expect(held).to.deep.include({ kind: "held", recorded: true });
    const calls = visibilityCalls(t);
    expect(calls[0]).to.deep.equal([m.ReceiptHandle, 200]);
    expect(calls.length).to.be.at.least(2);
    expect(calls.slice(1).every(([handle, seconds]) => handle === "rh-b" && seconds === 1)).to.equal(true);
    expect(deleted(t)).to.deep.equal(["rh-b"]);
    // The first extension came at once for the new handle, not when the 200 s window neared its end.
    expect(t.logger.withStep("visibility_extended")[0]?.fields.receipt_handle_changed).to.equal(true);
  });

  it("a heartbeat extension that fails is re-sent, and a beat whose re-sends all fail does not move the window: the next beat tries again", async () => {
    // Prepare: 1 s window, 100 ms beats; the first extension fails all 4 sends, the next lands
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, handlers: { work: () => sleep(1200) } });
    const m = message(job("work", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    const sent: Array<[number, number | undefined]> = [];
    let failures = 4;
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake((input: ChangeMessageVisibilityCommandInput) => {
      sent.push([Date.now(), input.VisibilityTimeout]);
      if (input.VisibilityTimeout === 1 && sent.length > 1 && failures-- > 0)
        throw Object.assign(new Error("throttled"), { name: "RequestThrottled", $retryable: {} });
      return {};
    });

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess: the four sends of the failed beat, at one instant, then another extension at the very next beat
    const start = sent[0]![0];
    const offsets = sent.map(([at, s]) => [at - start, s]);
    expect(offsets.slice(0, 5)).to.deep.equal([
      [0, 1],
      [800, 1],
      [800, 1],
      [800, 1],
      [800, 1],
    ]);
    expect(offsets[5]).to.deep.equal([900, 1]);
    expect(t.logger.withStep("visibility_change_failed").map((e) => e.fields.purpose)).to.deep.equal(["heartbeat"]);
  });

  it("a job whose lease another task took over (it expired while renewals failed) is aborted, and its message and outcome are left alone", async () => {
    // Prepare: 100 ms beats, a 300 ms lease; every renewal fails; B takes the job once the lease has expired
    const t = mockedWorkerDeps({
      holder: "task-a",
      config: { heartbeatMs: 100 },
      ledgerStore: new ArmedStore(),
      handlers: { work: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))) },
    });
    const store = t.ledgerStore as ArmedStore;
    store.failing.renew = 1000;
    const m = message(job("work", { job_id: "j-stolen", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");
    await advance(400);
    const taken = await otherTask(store).acquire("j-stolen", "rh-b");
    store.failing.renew = 0;

    // Act
    await waitFor(() => t.logger.withStep("job_lease_lost").length === 1, 2000, "the lost lease");
    await advance(300);
    worker.stop("test");
    await until(running);

    // Assess
    expect(taken).to.deep.include({ kind: "taken" });
    expect(t.logger.withStep("job_lease_renewal_failed").length).to.be.at.least(1);
    expect(t.logger.withStep("job_lease_lost").map((e) => e.fields)).to.deep.equal([
      { step: "job_lease_lost", job_key: "j-stolen", message_id: m.MessageId, at: "renewal", holder: "task-a", new_holder: "task-b" },
    ]);
    expect(visibilityCalls(t)).to.deep.equal([[m.ReceiptHandle, 200]]);
    expect(deleted(t)).to.deep.equal([]);
    expect(store.table.items.get("j-stolen")).to.deep.include({ state: "running", holder: "task-b", runs: 2 });
    expect(worker.stats).to.deep.include({ leasesLost: 1, succeeded: 0, failed: 0, returned: 0 });
  });

  it("a superseded holder's completion is refused: no delete, the job is the new holder's", async () => {
    // Prepare: renewals fail until the handler ends, so B can take the expired lease before A completes
    const store = new ArmedStore();
    const t = mockedWorkerDeps({ holder: "task-a", config: { heartbeatMs: 100 }, ledgerStore: store, handlers: { work: () => sleep(600) } });
    store.failing.renew = 1000;
    const m = message(job("work", { job_id: "j-late", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");
    await advance(350);
    await otherTask(store).acquire("j-late", "rh-b");

    // Act
    await waitFor(() => t.logger.withStep("job_lease_lost").length === 1, 2000, "the refusal");
    worker.stop("test");
    await until(running);

    // Assess
    expect(t.logger.withStep("job_lease_lost").map((e) => e.fields.at)).to.deep.equal(["completion"]);
    expect(deleted(t)).to.deep.equal([]);
    expect(store.table.items.get("j-late")).to.deep.include({ state: "running", holder: "task-b" });
    expect(worker.stats).to.deep.include({ succeeded: 0, leasesLost: 1 });
  });

  it("a completion write that keeps failing is tried again every beat while the heartbeat holds the lease, then the message is deleted", async () => {
    // Prepare: the completion fails 6 times (four sends, then one more round of 4 with 2 failing)
    const store = new ArmedStore();
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, ledgerStore: store, handlers: { work: () => sleep(50) } });
    store.failing.complete = 6;
    const m = message(job("work", { job_id: "j-slow-ledger", estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => deleted(t).length === 1, "the delete", 3000);

    // Assess
    expect(t.logger.withStep("job_completion_failed").map((e) => e.fields.retrying)).to.deep.equal([true]);
    expect(store.table.items.get("j-slow-ledger")).to.deep.include({ state: "completed" });
    expect(deleted(t)).to.deep.equal([m.ReceiptHandle]);
    expect(worker.stats.succeeded).to.equal(1);
  });

  it("a beat whose renewal lands after the job's own completion is no lost lease: the job succeeds and is deleted (found by npm start)", async () => {
    // Prepare: renewals take 80 ms; the beat at 100 ms is still on its way when the 150 ms job completes
    const table = new MemoryLedgerStore();
    const slowRenewals: LedgerStore = {
      write: async (w) => {
        if (ArmedStore.kindOf(w) === "renew") await sleep(80);
        return table.write(w);
      },
    };
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, ledgerStore: slowRenewals, handlers: { work: () => sleep(150) } });
    const m = message(job("work", { job_id: "j-race", estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => deleted(t).length === 1, "the delete");
    await advance(300);

    // Assess
    expect(t.logger.withStep("job_lease_lost")).to.deep.equal([]);
    expect(worker.stats).to.deep.include({ succeeded: 1, leasesLost: 0 });
    expect(table.items.get("j-race")).to.deep.include({ state: "completed" });
  });

  it("a lease that cannot be taken (the table unreachable) does not run the job and leaves its message alone", async () => {
    // Prepare
    const store = new ArmedStore();
    store.failing.take = 4;
    const t = mockedWorkerDeps({ ledgerStore: store, handlers: { work: () => Promise.reject(new Error("must not run")) } });
    const m = message(job("work", { job_id: "j-noledger" }));
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => t.logger.withStep("job_lease_failed").length === 1, "the failed take");

    // Assess
    expect(t.logger.withStep("job_lease_failed").map((e) => [e.level, e.fields.job_key, e.fields.error])).to.deep.equal([
      ["error", "j-noledger", "TimeoutError: read ECONNRESET"],
    ]);
    expect(visibilityCalls(t)).to.deep.equal([]);
    expect(deleted(t)).to.deep.equal([]);
    expect(worker.stats).to.deep.include({ failed: 0, succeeded: 0 });
  });

  it("a failed job releases its lease, so its next receive takes it at once (runs 2) instead of finding it held", async () => {
    // Prepare
    let attempts = 0;
    const t = mockedWorkerDeps({
      handlers: {
        work: async () => {
          attempts += 1;
          if (attempts === 1) throw new Error("exit 1");
        },
      },
    });
    const body = job("work", { job_id: "j-retry" });
    const first = message(body);
    arrangeQueue(t, [[first], [{ ...first, ReceiptHandle: "rh-again" }]]);

    // Act
    const worker = await runUntil(t, () => deleted(t).length === 1, "the second run's delete");

    // Assess
    expect(attempts).to.equal(2);
    expect(worker.stats).to.deep.include({ failed: 1, succeeded: 1, heldElsewhere: 0 });
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-retry")).to.deep.include({ state: "completed", runs: 2 });
    expect(deleted(t)).to.deep.equal(["rh-again"]);
  });

  it("a give-back on shutdown releases the lease with the message", async () => {
    // Prepare
    const t = mockedWorkerDeps({
      config: { shutdownGraceMs: 50, abortSettleMs: 50 },
      handlers: { work: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))) },
    });
    const m = message(job("work", { job_id: "j-back" }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(visibilityCalls(t).at(-1)).to.deep.equal([m.ReceiptHandle, 0]);
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-back")).to.deep.include({ state: "running", lease_expires_at: 0 });
  });
  it("runs a job once from a batch holding two copies of its message: the second receive finds the first's take in hand on this task and records its handle", async () => {
    // Prepare: the first take's answer takes 50 ms, so the second take meets the lease it wrote, naming this task
    const table = new MemoryLedgerStore();
    let takes = 0;
    const slowFirstTake: LedgerStore = {
      write: async (w) => {
        const out = await table.write(w);
        if (ArmedStore.kindOf(w) === "take" && ++takes === 1) await sleep(50);
        return out;
      },
    };
    const ran: string[] = [];
    const t = mockedWorkerDeps({
      holder: "task-a",
      config: { concurrency: 2 },
      ledgerStore: slowFirstTake,
      handlers: { work: async ({ messageId }) => void ran.push(messageId) },
    });
    const first = message(job("work", { job_id: "j-twice" }));
    const copy = { ...first, ReceiptHandle: "rh-copy" };
    arrangeQueue(t, [[first, copy]]);

    // Act
    const worker = await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess: one run, deleted with the handle the second receive recorded
    expect(ran).to.deep.equal([first.MessageId]);
    expect(t.logger.withStep("job_held_elsewhere").map((e) => [e.fields.holder, e.fields.receipt_handle_recorded])).to.deep.equal([["task-a", true]]);
    expect(deleted(t)).to.deep.equal(["rh-copy"]);
    expect(table.items.get("j-twice")).to.deep.include({ state: "completed", runs: 1 });
    expect(worker.stats).to.deep.include({ succeeded: 1, heldElsewhere: 1 });
  });

  it("the next receive of a job whose take this task abandoned (every answer lost, the release failed) takes it over and runs it, while another job runs here", async () => {
    // Prepare: j-abandoned's take applies with all 4 answers lost and its release fails; j-other runs meanwhile
    const store = new ArmedStore();
    store.losing.push(...[1, 2, 3, 4].map(() => ({ kind: "take" as const, jobKey: "j-abandoned" })));
    store.failing.release = 1;
    let openOther: () => void = () => undefined;
    const ran: string[] = [];
    const t = mockedWorkerDeps({
      holder: "task-a",
      config: { concurrency: 2 },
      ledgerStore: store,
      handlers: {
        long: () => new Promise<void>((r) => (openOther = r)),
        work: async ({ job: j }) => void ran.push(j.job_id),
      },
    });
    const other = message(job("long", { job_id: "j-other" }));
    const first = message(job("work", { job_id: "j-abandoned" }));
    const again = { ...first, ReceiptHandle: "rh-again", Attributes: { ApproximateReceiveCount: "2" } };
    arrangeQueue(t, [[other, first], [again]]);
    const worker = createWorker(t.deps);
    const running = worker.run();

    // Act
    await waitFor(() => deleted(t).includes("rh-again"), 3000, "the taken-over job's delete");
    openOther();
    await waitFor(() => deleted(t).length === 2, 1000, "the other job's delete");
    worker.stop("test");
    await until(running);

    // Assess
    expect(ran).to.deep.equal(["j-abandoned"]);
    expect(t.logger.withStep("job_lease_failed").map((e) => e.fields.job_key)).to.deep.equal(["j-abandoned"]);
    expect(
      t.logger
        .withStep("job_lease_taken")
        .filter((e) => e.fields.job_key === "j-abandoned")
        .map((e) => [e.fields.runs, e.fields.recovered]),
    ).to.deep.equal([[2, true]]);
    expect(store.table.items.get("j-abandoned")).to.deep.include({ state: "completed", runs: 2 });
  });

  for (const finishes of ["before the stop", "after the shutdown"] as const) {
    it(`a handler that runs on after its lease was lost (finishing ${finishes}) gets LeaseLost as its abort reason; nothing is completed, deleted, released or given back, and the loss is counted once`, async () => {
      // Prepare: 100 ms beats, a 300 ms lease; renewals fail until B has taken the job over
      const store = new ArmedStore();
      store.failing.renew = 1000;
      const reasons: unknown[] = [];
      let finish: () => void = () => undefined;
      const t = mockedWorkerDeps({
        holder: "task-a",
        config: { heartbeatMs: 100, shutdownGraceMs: 100, abortSettleMs: 50 },
        ledgerStore: store,
        handlers: {
          work: ({ signal }) => {
            signal.addEventListener("abort", () => reasons.push(signal.reason));
            return new Promise<void>((r) => (finish = r));
          },
        },
      });
      const m = message(job("work", { job_id: "j-ignores", estimated_seconds: 100 }));
      arrangeQueue(t, [[m]]);
      const worker = createWorker(t.deps);
      const running = worker.run();
      await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");
      await advance(400);
      await otherTask(store).acquire("j-ignores", "rh-b");
      store.failing.renew = 0;

      // Act: beats go on for a while after the loss; the handler ends before or after the shutdown
      await waitFor(() => t.logger.withStep("job_lease_lost").length === 1, 2000, "the lost lease");
      const renewalsAtLoss = store.kinds.filter((k) => k === "renew").length;
      await advance(500);
      const renewalsAfter = store.kinds.filter((k) => k === "renew").length - renewalsAtLoss;
      if (finishes === "before the stop") {
        finish();
        await advance(50);
      }
      worker.stop("test");
      await until(running);
      finish();
      await advance(50);

      // Assess
      expect(reasons).to.have.length(1);
      expect(reasons[0]).to.be.instanceOf(Error);
      expect([(reasons[0] as Error).name, (reasons[0] as Error).message]).to.deep.equal(["LeaseLost", "the job's lease was taken over by another task"]);
      expect(t.logger.withStep("job_lease_renewal_failed")[0]?.fields).to.deep.equal({
        step: "job_lease_renewal_failed",
        job_key: "j-ignores",
        holder: "task-a",
        error: "TimeoutError: read ECONNRESET",
      });
      expect(t.logger.withStep("job_lease_lost").map((e) => e.fields)).to.deep.equal([
        { step: "job_lease_lost", job_key: "j-ignores", message_id: m.MessageId, at: "renewal", holder: "task-a", new_holder: "task-b" },
      ]);
      expect(t.metrics.count("JobLeasesLost")).to.equal(1);
      expect(renewalsAfter, "the beats stop at the loss").to.equal(0);
      expect(store.kinds.filter((k) => k === "complete" || k === "release")).to.deep.equal([]);
      expect(visibilityCalls(t)).to.deep.equal([[m.ReceiptHandle, 200]]);
      expect(deleted(t)).to.deep.equal([]);
      expect(worker.stats).to.deep.include({ leasesLost: 1, succeeded: 0, failed: 0, returned: 0 });
    });
  }

  const givenUp = [
    { why: "the task is stopping", loseLease: false, lostLogs: 0 },
    { why: "a beat found the lease taken over", loseLease: true, lostLogs: 1 },
  ];
  for (const c of givenUp) {
    it(`a completion that keeps failing is given up once ${c.why}: logged retrying false, no delete, not counted as a success (the job runs again)`, async () => {
      // Prepare: every completion write fails; for the lost lease, renewals fail too until B has taken the job
      const store = new ArmedStore();
      store.failing.complete = 1000;
      if (c.loseLease) store.failing.renew = 1000;
      const t = mockedWorkerDeps({ holder: "task-a", config: { heartbeatMs: 100 }, ledgerStore: store, handlers: { work: () => sleep(50) } });
      const m = message(job("work", { job_id: "j-unrecorded", estimated_seconds: 100 }));
      arrangeQueue(t, [[m]]);
      const worker = createWorker(t.deps);
      const running = worker.run();
      await waitFor(() => t.logger.withStep("job_completion_failed").length === 1, 1000, "the first failed completion");

      // Act
      if (c.loseLease) {
        await advance(400);
        await otherTask(store).acquire("j-unrecorded", "rh-b");
        store.failing.renew = 0;
        await waitFor(() => t.logger.withStep("job_completion_failed").at(-1)?.fields.retrying === false, 2000, "the give-up");
      }
      worker.stop("test");
      await until(running);

      // Assess
      const retrying = t.logger.withStep("job_completion_failed").map((e) => e.fields.retrying);
      expect(retrying.at(-1)).to.equal(false);
      expect(retrying.slice(0, -1).every((r) => r === true)).to.equal(true);
      expect(t.logger.withStep("job_lease_lost")).to.have.length(c.lostLogs);
      expect(store.kinds.filter((k) => k === "complete")).to.have.length(4 * retrying.length);
      expect(deleted(t)).to.deep.equal([]);
      expect(visibilityCalls(t).filter(([, seconds]) => seconds === 0)).to.deep.equal([]);
      expect(t.logger.withStep("job_crashed")).to.deep.equal([]);
      expect(t.logger.withStep("job_succeeded")).to.deep.equal([]);
      expect(t.metrics.count("JobsSucceeded")).to.equal(0);
      expect(worker.stats).to.deep.include({ succeeded: 0, failed: 0 });
    });
  }

  it("a completion whose answer was lost is found by its token on the re-send: logged job_completion_recovered, and the message deleted", async () => {
    // Prepare
    const store = new ArmedStore();
    store.losing.push({ kind: "complete" });
    const t = mockedWorkerDeps({ holder: "task-a", ledgerStore: store, handlers: { work: () => Promise.resolve() } });
    const m = message(job("work", { job_id: "j-recovered" }));
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess
    expect(t.logger.withStep("job_completion_recovered").map((e) => e.fields)).to.deep.equal([
      { step: "job_completion_recovered", job_key: "j-recovered", holder: "task-a" },
    ]);
    expect(deleted(t)).to.deep.equal([m.ReceiptHandle]);
    expect(worker.stats.succeeded).to.equal(1);
  });

  it("a completed job whose delete is slow: beats keep the message hidden without renewing the lease, and a shutdown meanwhile neither gives the message back nor releases the lease", async () => {
    // Prepare: a 1 s window, 100 ms beats; the delete takes 5 s
    const store = new ArmedStore();
    const t = mockedWorkerDeps({
      config: { heartbeatMs: 100, shutdownGraceMs: 100, abortSettleMs: 50 },
      ledgerStore: store,
      handlers: { work: () => Promise.resolve() },
    });
    const m = message(job("work", { job_id: "j-slow-delete", estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(DeleteMessageCommand).callsFake(() => sleep(5000).then(() => ({})));
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => deleted(t).length === 1, 1000, "the delete sent");
    const kindsAtCompletion = store.kinds.length;

    // Act
    await advance(1500);
    const extensions = visibilityCalls(t).length - 1;
    worker.stop("test");
    await until(running);

    // Assess
    expect(store.kinds.slice(0, kindsAtCompletion)).to.deep.equal(["take", "complete"]);
    expect(store.kinds.slice(kindsAtCompletion), "no renewal after the completion").to.deep.equal([]);
    expect(extensions, "the heartbeat still extends the window").to.be.at.least(1);
    expect(visibilityCalls(t).filter(([, seconds]) => seconds === 0)).to.deep.equal([]);
    expect(store.table.items.get("j-slow-delete")).to.deep.include({ state: "completed" });
  });

  it("a beat whose renewal is on its way when the job is given back makes no extension, even for a new handle: the give-back is the last visibility change", async () => {
    // Prepare: renewals take 80 ms; the handler ignores its abort; B records rh-b while the first renewal is on its way
    const table = new MemoryLedgerStore();
    let renewing = false;
    const slowRenewals: LedgerStore = {
      write: async (w) => {
        if (ArmedStore.kindOf(w) !== "renew") return table.write(w);
        renewing = true;
        await sleep(80);
        renewing = false;
        return table.write(w);
      },
    };
    const t = mockedWorkerDeps({
      holder: "task-a",
      config: { heartbeatMs: 100, shutdownGraceMs: 0, abortSettleMs: 0 },
      ledgerStore: slowRenewals,
      handlers: { work: () => new Promise(() => undefined) },
    });
    const m = message(job("work", { job_id: "j-given-back", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => renewing, 1000, "the first renewal on its way");
    await otherTask(table).acquire("j-given-back", "rh-b");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess: the renewal read rh-b back; the give-back uses it, and nothing extends the window
    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 200],
      ["rh-b", 0],
    ]);
    expect(table.items.get("j-given-back")).to.deep.include({ lease_expires_at: 0 });
  });

  it("a renewal slower than a beat is not overlapped: each beat starts after the one before has ended", async () => {
    // Prepare: renewals take 250 ms, beats every 100 ms, a 1 s job
    const table = new MemoryLedgerStore();
    const renewalsAt: number[] = [];
    const slowRenewals: LedgerStore = {
      write: async (w) => {
        if (ArmedStore.kindOf(w) === "renew") {
          renewalsAt.push(Date.now());
          await sleep(250);
        }
        return table.write(w);
      },
    };
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, ledgerStore: slowRenewals, handlers: { work: () => sleep(1000) } });
    arrangeQueue(t, [[message(job("work", { job_id: "j-slow-beats", estimated_seconds: 100 }))]]);

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess: one renewal at a time, the next beat's tick after the previous renewal's 250 ms
    expect(renewalsAt.length).to.be.within(2, 4);
    const gaps = renewalsAt.slice(1).map((at, i) => at - renewalsAt[i]!);
    expect(gaps.every((gap) => gap >= 300)).to.equal(true);
  });

  it("a lease lost twice over (the completion refused while a beat's renewal is on its way, which then finds it lost too) is logged and counted once", async () => {
    // Prepare: renewals fail until B has taken the job over; then a renewal takes 150 ms, and the
    // handler ends while it is on its way, so the completion is refused before the renewal answers
    const store = new ArmedStore();
    store.failing.renew = 1000;
    let renewalOnItsWay: () => void = () => undefined;
    const handlerEnds = new Promise<void>((r) => (renewalOnItsWay = r));
    const slowAfterTakeover: LedgerStore = {
      write: async (w) => {
        if (ArmedStore.kindOf(w) === "renew" && store.failing.renew === 0) {
          renewalOnItsWay();
          await sleep(150);
        }
        return store.write(w);
      },
    };
    const t = mockedWorkerDeps({ holder: "task-a", config: { heartbeatMs: 100 }, ledgerStore: slowAfterTakeover, handlers: { work: () => handlerEnds } });
    const m = message(job("work", { job_id: "j-lost-twice", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => t.logger.withStep("job_started").length === 1, 1000, "the start");
    await advance(400);
    await otherTask(store.table).acquire("j-lost-twice", "rh-b");
    store.failing.renew = 0;

    // Act
    await waitFor(() => store.kinds.filter((k) => k === "renew").length > 0 && t.logger.withStep("job_lease_lost").length > 0, 2000, "the refusal");
    await advance(300);
    worker.stop("test");
    await until(running);

    // Assess
    expect(t.logger.withStep("job_lease_lost").map((e) => e.fields.at)).to.deep.equal(["completion"]);
    expect(t.metrics.count("JobLeasesLost")).to.equal(1);
    expect(worker.stats.leasesLost).to.equal(1);
    expect(deleted(t)).to.deep.equal([]);
  });

  it("a message without a receipt handle (SQS always sends one) is taken with an empty handle, not an invented one", async () => {
    // Prepare
    const t = mockedWorkerDeps({ handlers: { work: () => Promise.resolve() } });
    const { ReceiptHandle: _none, ...m } = message(job("work", { job_id: "j-no-handle" }));
    arrangeQueue(t, [[m]]);

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-no-handle")).to.deep.include({ receipt_handle: "", state: "completed" });
    expect(deleted(t)).to.deep.equal([""]);
  });

  it("a failed job whose lease release fails is still retried on the queue, and the failure is logged (the lease then expires by itself)", async () => {
    // Prepare
    const store = new ArmedStore();
    store.failing.release = 4;
    const t = mockedWorkerDeps({ config: { retryDelaySeconds: 7 }, ledgerStore: store, handlers: { work: () => Promise.reject(new Error("exit 1")) } });
    const m = message(job("work", { job_id: "j-unreleased" }));
    arrangeQueue(t, [[m]]);

    // Act
    const worker = await runUntil(t, () => worker_failed(t), "the failure");

    // Assess
    expect(t.logger.withStep("job_lease_release_failed").map((e) => [e.level, e.fields])).to.deep.equal([
      ["error", { step: "job_lease_release_failed", job_key: "j-unreleased", message_id: m.MessageId, error: "TimeoutError: read ECONNRESET" }],
    ]);
    expect(visibilityCalls(t).at(-1)).to.deep.equal([m.ReceiptHandle, 7]);
    expect(worker.stats.failed).to.equal(1);
  });

  it("a message whose take is still on its way at shutdown is given back with its own receipt handle", async () => {
    // Prepare: the take never answers within the shutdown
    const table = new MemoryLedgerStore();
    let taking = false;
    const hangingTake: LedgerStore = {
      write: async (w) => {
        taking = true;
        await sleep(60_000);
        return table.write(w);
      },
    };
    const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50 }, ledgerStore: hangingTake, handlers: { work: () => Promise.resolve() } });
    const m = message(job("work", { job_id: "j-hanging" }));
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => taking, 1000, "the take on its way");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(visibilityCalls(t)).to.deep.equal([[m.ReceiptHandle, 0]]);
    expect(t.logger.withStep("job_returned").map((e) => e.fields.visible_again)).to.deep.equal([true]);
  });

  it("a failed visibility change for a retry is sent once (only the heartbeat's extension is re-sent)", async () => {
    // Prepare
    const t = mockedWorkerDeps({ config: { retryDelaySeconds: 7 }, handlers: { work: () => Promise.reject(new Error("exit 1")) } });
    const m = message(job("work", { job_id: "j-no-resend" }));
    arrangeQueue(t, [[m]]);
    t.sqsMock
      .on(ChangeMessageVisibilityCommand, { VisibilityTimeout: 7 })
      .rejects(Object.assign(new Error("throttled"), { name: "RequestThrottled", $retryable: {} }));

    // Act
    await runUntil(t, () => worker_failed(t), "the failure");

    // Assess
    expect(visibilityCalls(t).filter(([, seconds]) => seconds === 7)).to.have.length(1);
    expect(t.logger.withStep("visibility_change_failed").map((e) => e.fields.purpose)).to.deep.equal(["retry"]);
  });
});

const worker_failed = (t: ReturnType<typeof mockedWorkerDeps>) => t.logger.withStep("job_failed").length === 1;
