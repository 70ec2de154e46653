import { ChangeMessageVisibilityCommand, type ChangeMessageVisibilityCommandInput } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { JobHandler } from "../../../functions/worker/handlers";
import { createWorker } from "../../../functions/worker/worker";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message } from "../helpers/worker-deps";
import { arrangeQueue, deleted, mockedWorkerDeps, visibilityCalls } from "../helpers/worker-harness";

/** A handler that ignores its abort signal: it runs `ms`, then resolves or throws as told. */
const stubborn =
  (ms: number, outcome: "succeeds" | "throws"): JobHandler =>
  async () => {
    await sleep(ms);
    if (outcome === "throws") throw new Error("ran on after its abort, then failed");
  };

describe("worker: a message given back at shutdown belongs to the queue again", function () {
  this.timeout(15_000);
  useFakeTime();

  for (const outcome of ["succeeds", "throws"] as const) {
    it(`a given-back job whose handler ${outcome === "succeeds" ? "succeeds" : "fails"} later neither deletes nor re-times its message`, async () => {
      // Prepare: the handler ignores the abort and only ends 600 ms after the give-back
      const t = mockedWorkerDeps({ config: { shutdownGraceMs: 50, abortSettleMs: 50, retryDelaySeconds: 30 }, handlers: { stubborn: stubborn(700, outcome) } });
      const m = message(job("stubborn", { estimated_seconds: 100 }));
      arrangeQueue(t, [[m]]);
      const worker = createWorker(t.deps);
      const running = worker.run();
      await waitFor(() => visibilityCalls(t).length === 1, 3000, "the job started");

      // Act
      worker.stop("SIGTERM");
      await until(running);
      const givenBack = visibilityCalls(t);
      await advance(1000); // the handler ends now, long after its message went back

      // Assess: another task may hold the message by now; only the give-back touched it
      expect(givenBack).to.deep.equal([
        [m.ReceiptHandle, 200],
        [m.ReceiptHandle, 0],
      ]);
      expect(visibilityCalls(t)).to.deep.equal(givenBack);
      expect(deleted(t)).to.deep.equal([]);
      expect(worker.stats).to.deep.include({ returned: 1, succeeded: 0, failed: 0 });
      expect(t.logger.withStep("job_returned")).to.have.length(1);
      expect(t.metrics.count("JobsReturned")).to.equal(1);
    });
  }

  it("a job that returns its own message on abort is given back once, even when that give-back outlasts the abort settle", async () => {
    // Prepare: the handler obeys its abort, and the give-back call takes 300 ms (the SDK retrying)
    const t = mockedWorkerDeps({
      config: { shutdownGraceMs: 50, abortSettleMs: 50 },
      handlers: {
        obedient: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
      },
    });
    const m = message(job("obedient", { estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake(async (input: ChangeMessageVisibilityCommandInput) => {
      if (input.VisibilityTimeout === 0) await sleep(300);
      return {};
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => visibilityCalls(t).length === 1, 3000, "the job started");

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assess
    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 200],
      [m.ReceiptHandle, 0],
    ]);
    expect(worker.stats.returned).to.equal(1);
    expect(t.logger.withStep("job_returned")).to.have.length(1);
  });

  it("a job given back while its first visibility change is still in flight never starts a heartbeat that would hide the message again", async () => {
    // Prepare: the initial ChangeMessageVisibility answers only after the give-back; the handler ignores its abort
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100, shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { stubborn: stubborn(3000, "succeeds") } });
    const m = message(job("stubborn", { estimated_seconds: 0.1 })); // 1 s: a live heartbeat would extend it from ~800 ms on
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake(async (input: ChangeMessageVisibilityCommandInput) => {
      if (input.VisibilityTimeout !== 0) await sleep(300);
      return {};
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => visibilityCalls(t).length === 1, 3000, "the initial visibility call");

    // Act
    worker.stop("SIGTERM");
    await until(running);
    await advance(2000);

    // Assess: the initial call, then the give-back; nothing after
    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 1],
      [m.ReceiptHandle, 0],
    ]);
    expect(t.logger.withStep("visibility_extended")).to.deep.equal([]);
  });
});
