import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import type { JobHandler } from "../../../functions/worker/handlers";
import { createWorker } from "../../../functions/worker/worker";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message, WORK_URL } from "../helpers/worker-deps";
import { arrangeBacklog, deleted, gate, mockedWorkerDeps } from "../helpers/worker-harness";

describe("worker: at most N jobs at once, a receive asks only for the free slots", function () {
  this.timeout(15_000);
  useFakeTime();

  it("never runs more jobs than its concurrency: each receive asks for the slots left free", async () => {
    // Prepare: N = 3 and a backlog of 6 jobs of different lengths; the queue hands out as many as asked for
    let active = 0;
    let maxActive = 0;
    const timed: JobHandler = async ({ job: j }) => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      await sleep((j.payload as { ms: number }).ms);
      active -= 1;
    };
    const t = mockedWorkerDeps({ config: { concurrency: 3 }, handlers: { timed } });
    const backlog = [100, 300, 300, 100, 100, 100].map((ms) => message(job("timed", { payload: { ms } })));
    const { asked } = arrangeBacklog(t, backlog);
    const worker = createWorker(t.deps);

    // Act
    const running = worker.run();
    try {
      await waitFor(() => deleted(t).length === 6, 5000, "all six jobs");
    } finally {
      worker.stop("test");
      await until(running);
    }

    // Assess: 3 at first, then 1 for the slot the 100 ms job freed, and never more than 3 running
    expect(maxActive).to.equal(3);
    expect(asked.slice(0, 2)).to.deep.equal([3, 1]);
    expect(asked.every((n) => n !== undefined && n >= 1 && n <= 3)).to.equal(true);
  });

  it("asks for at most 10 messages, SQS's cap on one receive", async () => {
    // Prepare: the env schema caps N at 10; a config past it must still never ask SQS for more
    const t = mockedWorkerDeps({ config: { concurrency: 12 }, handlers: { quick: () => Promise.resolve() } });
    const { asked } = arrangeBacklog(t, []);
    const worker = createWorker(t.deps);

    // Act
    const running = worker.run();
    await waitFor(() => asked.length >= 1, 3000, "a receive");
    worker.stop("test");
    await until(running);

    // Assess
    expect(asked[0]).to.equal(10);
  });

  it("does not poll while every slot is busy (N = 1), and polls again once the job ends", async () => {
    // Prepare
    const held = gate();
    const t = mockedWorkerDeps({ handlers: { held: held.handler } });
    const { asked } = arrangeBacklog(t, [message(job("held"))]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    let whileBusy = 0;
    try {
      await waitFor(() => held.started() === 1, 3000, "the job");

      // Act
      await advance(500);
      whileBusy = t.sqsMock.commandCalls(ReceiveMessageCommand).length;
      held.open();
      await waitFor(() => t.sqsMock.commandCalls(ReceiveMessageCommand).length > whileBusy, 3000, "the next poll");
    } finally {
      worker.stop("test");
      await until(running);
    }

    // Assess
    expect(whileBusy).to.equal(1);
    expect(asked.slice(0, 2)).to.deep.equal([1, 1]);
    expect(t.sqsMock.commandCalls(ReceiveMessageCommand)[0]!.args[0].input).to.deep.equal({
      QueueUrl: WORK_URL,
      MaxNumberOfMessages: 1,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
    });
  });
});
