import { ChangeMessageVisibilityCommand, type ChangeMessageVisibilityCommandInput } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { advance, sleep, useFakeTime } from "../helpers/fake-time";
import { job, message, WORK_URL } from "../helpers/worker-deps";
import { arrangeQueue, deleted, mockedWorkerDeps, runUntil, visibilityCalls } from "../helpers/worker-harness";

describe("worker: the visibility heartbeat", function () {
  this.timeout(15_000);
  useFakeTime();

  it("extends only once fewer than two beats of the window remain, by three beats each time, so the message never shows while its job runs", async () => {
    // Prepare: beats every 1 s; a 5 s estimate gives 10 s; the job runs 12.5 s
    const t = mockedWorkerDeps({ config: { heartbeatMs: 1000 }, handlers: { long: () => sleep(12_500) } });
    const m = message(job("long", { job_id: "j-long", estimated_seconds: 5 }));
    arrangeQueue(t, [[m]]);
    const calls: Array<[number, number | undefined]> = [];
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake((input: ChangeMessageVisibilityCommandInput) => {
      calls.push([Date.now(), input.VisibilityTimeout]);
      return {};
    });

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete", 20_000);
    const deletedAt = Date.now();

    // Assess: no call within the estimate; from 8 s (2 beats before the 10 s window ends) one per beat
    const start = calls[0]![0];
    expect(calls.map(([at, s]) => [Math.round((at - start) / 100) * 100, s])).to.deep.equal([
      [0, 10],
      [8000, 3],
      [9000, 3],
      [10_000, 3],
      [11_000, 3],
      [12_000, 3],
    ]);
    const hiddenUntil = calls.map(([at, s]) => at + (s ?? 0) * 1000);
    for (let i = 1; i < calls.length; i++) expect(calls[i]![0], `extension ${i} comes before the window ends`).to.be.below(hiddenUntil[i - 1]!);
    expect(hiddenUntil.at(-1)).to.be.above(deletedAt);
    expect(t.logger.withStep("visibility_extended").map((e) => e.fields)).to.deep.equal(
      Array.from({ length: 5 }, () => ({ step: "visibility_extended", job_id: "j-long", extended_seconds: 3 })),
    );
  });

  it("with a heartbeat that does not divide into whole seconds, extends every second beat: 3 × 1.5 s rounds up to 5 s", async () => {
    // Prepare: beats every 1.5 s; a 5 s estimate gives 10 s; the job runs 14 s
    const t = mockedWorkerDeps({ config: { heartbeatMs: 1500 }, handlers: { long: () => sleep(14_000) } });
    arrangeQueue(t, [[message(job("long", { estimated_seconds: 5 }))]]);
    const calls: Array<[number, number | undefined]> = [];
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake((input: ChangeMessageVisibilityCommandInput) => {
      calls.push([Date.now(), input.VisibilityTimeout]);
      return {};
    });

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete", 20_000);

    // Assess: at 7.5 s (2.5 s left), then each time 2 s are left: 10.5 s, 13.5 s
    const start = calls[0]![0];
    expect(calls.map(([at, s]) => [Math.round((at - start) / 100) * 100, s])).to.deep.equal([
      [0, 10],
      [7500, 5],
      [10_500, 5],
      [13_500, 5],
    ]);
  });

  it("sends each extension for the job's own message on the work queue", async () => {
    // Prepare
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, handlers: { long: () => sleep(1300) } });
    const m = message(job("long", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);

    // Act
    await runUntil(t, () => deleted(t).length === 1, "the delete");

    // Assess
    const inputs = t.sqsMock.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input);
    expect(inputs.length).to.be.at.least(2);
    for (const input of inputs) expect(input).to.deep.equal({ QueueUrl: WORK_URL, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 1 });
  });

  it("stops beating once a job has failed: its message comes back after the retry delay, not hidden on", async () => {
    // Prepare: 1 s windows, beats every 100 ms, and a job that fails after 200 ms
    const t = mockedWorkerDeps({
      config: { heartbeatMs: 100, retryDelaySeconds: 7 },
      handlers: { boom: () => sleep(200).then(() => Promise.reject(new Error("exit 1"))) },
    });
    const m = message(job("boom", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    const worker = await runUntil(t, () => t.logger.withStep("job_failed").length === 1, "the failure");

    // Act: time a live heartbeat would have spent extending the window
    await advance(2000);

    // Assess
    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 1],
      [m.ReceiptHandle, 7],
    ]);
    expect(worker.stats.failed).to.equal(1);
  });
});
