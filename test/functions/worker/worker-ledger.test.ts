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
    return this.table.write(w);
  }
}

/** Another task's ledger on the same table, on the same (fake) clock. */
const otherTask = (store: LedgerStore, holder = "task-b", leaseMs = 300) => new JobLedger({ store, holder: () => Promise.resolve(holder), leaseMs, resend: { rounds: 1, baseDelayMs: 0, sleep: async () => undefined } });

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
    expect((t.ledgerStore as MemoryLedgerStore).items.get("j-1")).to.deep.include({ state: "completed", outcome: "succeeded", holder: "task-a", runs: 1, receipt_handle: m.ReceiptHandle });
    expect(t.logger.withStep("job_lease_taken").map((e) => e.fields)).to.deep.equal([
      { step: "job_lease_taken", job_key: "j-1", job_id: "j-1", message_id: m.MessageId, receive_count: 1, holder: "task-a", runs: 1, recovered: false },
    ]);
  });

  it("deletes a redelivered message of a completed job without running it, with this receive's handle, and logs job_already_completed", async () => {
    // Prepare: the first delivery ran and completed; its delete was lost, so the message comes back
    const ran: string[] = [];
    const t = mockedWorkerDeps({ holder: "task-a", handlers: { work: async ({ messageId }) => void ran.push(messageId) } });
    const body = job("work", { job_id: "j-done" });
    const first = message(body);
    const again = { ...first, ReceiptHandle: "rh-second-receive", Attributes: { ApproximateReceiveCount: "2" } };
    arrangeQueue(t, [[first], [again]]);
    t.sqsMock.on(DeleteMessageCommand, { ReceiptHandle: first.ReceiptHandle }).rejects(Object.assign(new Error("AccessDenied"), { name: "AccessDenied", $fault: "client" }));

    // Act
    const worker = await runUntil(t, () => t.logger.withStep("job_already_completed").length === 1 && deleted(t).includes(again.ReceiptHandle), "the second receive");

    // Assess
    expect(ran).to.deep.equal([first.MessageId]);
    expect(deleted(t).at(-1)).to.equal(again.ReceiptHandle);
    expect(t.logger.withStep("job_already_completed").map((e) => e.fields)).to.deep.equal([
      { step: "job_already_completed", job_key: "j-done", job_id: "j-done", message_id: first.MessageId, receive_count: 2, holder: "task-a", completed_at: Date.UTC(2026, 0, 1), outcome: "succeeded" },
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
      { step: "job_held_elsewhere", job_key: "j-held", job_id: "j-held", message_id: m.MessageId, receive_count: 2, holder: "task-b", lease_expires_at: Date.UTC(2026, 0, 1) + 60_000, receipt_handle_recorded: true },
    ]);
    expect(worker.stats).to.deep.include({ heldElsewhere: 1, failed: 0, succeeded: 0 });
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
      if (input.VisibilityTimeout === 1 && sent.length > 1 && failures-- > 0) throw Object.assign(new Error("throttled"), { name: "RequestThrottled", $retryable: {} });
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
    const t = mockedWorkerDeps({ holder: "task-a", config: { heartbeatMs: 100 }, ledgerStore: new ArmedStore(), handlers: { work: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))) } });
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
    expect(t.logger.withStep("job_lease_failed").map((e) => [e.level, e.fields.job_key, e.fields.error])).to.deep.equal([["error", "j-noledger", "TimeoutError: read ECONNRESET"]]);
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
    const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { work: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))) } });
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
});
