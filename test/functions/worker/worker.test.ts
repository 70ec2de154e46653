import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
} from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { createWorker } from "../../../functions/worker/worker";
import type { JobHandler } from "../../../functions/worker/handlers";
import { FakeEcsAgent } from "../helpers/ecs-agent";
import { DLQ_URL, job, message, WORK_URL } from "../helpers/worker-deps";
import { advance, sleep, until, useFakeTime, waitFor } from "../helpers/fake-time";
import { arrangeQueue, deleted, gate, mockedWorkerDeps, runUntil, visibilityCalls } from "../helpers/worker-harness";

describe("worker: the receive loop, jobs, visibility and shutdown (mocked SQS, local agent)", function () {
  this.timeout(15_000);
  const agent = new FakeEcsAgent();
  before(() => agent.start());
  after(() => agent.stop());
  beforeEach(() => agent.reset());
  // Jobs, polls, heartbeats, idle windows and grace periods run on fake time.
  useFakeTime();

  it("runs a job: visibility from its estimate, then delete, protected only while it runs", async () => {
    const ran: string[] = [];
    const t = mockedWorkerDeps({ config: { agentUri: agent.uri }, handlers: { resize: async ({ job: j }) => void ran.push(j.job_id) } });
    const m = message(job("resize", { job_id: "j1", estimated_seconds: 100 }));
    arrangeQueue(t, [[m]]);

    await runUntil(t, () => deleted(t).length === 1, "the delete");

    expect(ran).to.deep.equal(["j1"]);
    expect(visibilityCalls(t)).to.deep.equal([[m.ReceiptHandle, 200]]);
    expect(deleted(t)).to.deep.equal([m.ReceiptHandle]);
    expect(agent.puts()).to.deep.equal([true, false]);
    expect(t.logger.steps()).to.include.members(["worker_started", "job_started", "job_succeeded", "shutdown_started", "shutdown_complete"]);
    expect([t.metrics.count("JobsStarted"), t.metrics.count("JobsSucceeded"), t.metrics.count("JobsFailed")]).to.deep.equal([1, 1, 0]);
    expect(t.metrics.added.some((x) => x.name === "JobDuration" && x.unit === "Milliseconds")).to.equal(true);
    const receive = t.sqsMock.commandCalls(ReceiveMessageCommand)[0]!.args[0].input;
    expect(receive).to.include({ QueueUrl: WORK_URL, MaxNumberOfMessages: 1 });
  });

  it("a short-estimate job that overruns is never visible to another task before its first heartbeat", async () => {
    // 2 × 0.1 s would give 1 s of visibility; the first heartbeat only comes after 1.5 s.
    const t = mockedWorkerDeps({ config: { heartbeatMs: 1500 }, handlers: { overrun: () => sleep(1200) } });
    const m = message(job("overrun", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    const visibleAgainAt: number[] = [];
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake((input: { VisibilityTimeout?: number }) => {
      visibleAgainAt.push(Date.now() + (input.VisibilityTimeout ?? 0) * 1000);
      return {};
    });

    await runUntil(t, () => deleted(t).length === 1, "the delete");
    const finishedAt = Date.now();

    expect(visibleAgainAt).to.have.length.at.least(1);
    expect(Math.max(...visibleAgainAt)).to.be.above(finishedAt);
    expect(visibilityCalls(t)[0]).to.deep.equal([m.ReceiptHandle, 5]);
  });

  it("leaves a failed job's message for redelivery after the retry delay, never deletes it", async () => {
    const t = mockedWorkerDeps({ config: { retryDelaySeconds: 7, heartbeatMs: 1000 }, handlers: { boom: () => Promise.reject(new Error("exit 3")) } });
    const m = message(job("boom", { estimated_seconds: 10 }));
    arrangeQueue(t, [[m]]);

    await runUntil(t, () => visibilityCalls(t).length === 2, "the retry visibility");

    expect(visibilityCalls(t)).to.deep.equal([
      [m.ReceiptHandle, 20],
      [m.ReceiptHandle, 7],
    ]);
    expect(deleted(t)).to.deep.equal([]);
    expect(t.metrics.count("JobsFailed")).to.equal(1);
    expect(t.logger.withStep("job_failed")[0]!.fields).to.include({ error: "Error: exit 3", retry_in_seconds: 7 });
  });

  const quarantined: Array<[string, string, RegExp]> = [
    ["a body that is not JSON", "{nope", /not JSON/],
    ["a job without job_id", JSON.stringify({ type: "resize", payload: {} }), /job_id/],
    ["a job without payload", JSON.stringify({ job_id: "j", type: "resize" }), /payload/],
    ["a negative estimate", JSON.stringify({ job_id: "j", type: "resize", payload: {}, estimated_seconds: -1 }), /estimated_seconds/],
    ["an unknown type", JSON.stringify({ job_id: "j", type: "rm-rf", payload: {} }), /unknown job type "rm-rf"/],
  ];
  for (const [name, body, reason] of quarantined) {
    it(`quarantines ${name} to the DLQ with its reason, then deletes it, without protecting the task`, async () => {
      const t = mockedWorkerDeps({ config: { agentUri: agent.uri }, handlers: { resize: () => Promise.resolve() } });
      const m = message(body);
      arrangeQueue(t, [[m]]);

      await runUntil(t, () => deleted(t).length === 1, "the delete");

      const sent = t.sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input as SendMessageCommandInput);
      expect(sent).to.have.length(1);
      expect(sent[0]!.QueueUrl).to.equal(DLQ_URL);
      expect(sent[0]!.MessageBody).to.equal(body);
      expect(sent[0]!.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(reason);
      expect(sent[0]!.MessageAttributes?.["source-queue-arn"]?.StringValue).to.equal("arn:aws:sqs:us-east-1:123456789012:worker");
      expect(agent.puts()).to.deep.equal([]);
      expect(t.metrics.count("MessagesQuarantined")).to.equal(1);
    });
  }

  it("does not acknowledge a malformed message when quarantine fails (it is redelivered)", async () => {
    const t = mockedWorkerDeps();
    arrangeQueue(t, [[message("{nope")]]);
    t.sqsMock.on(SendMessageCommand).rejects(new Error("throttled"));

    await runUntil(t, () => t.logger.withStep("quarantine_failed").length === 1, "quarantine_failed");

    expect(deleted(t)).to.deep.equal([]);
  });

  it("re-sends a finished job's DeleteMessage after the SDK gave up (same receipt handle), so the job does not run again", async () => {
    // Prepare: the SDK's attempts at the delete all failed once (a reset, no answer)
    const t = mockedWorkerDeps({ handlers: { resize: async () => undefined } });
    const m = message(job("resize", { estimated_seconds: 10 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock
      .on(DeleteMessageCommand)
      .rejectsOnce(Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} }))
      .resolves({});
    // Act
    await runUntil(t, () => deleted(t).length === 2, "the re-sent delete");
    // Assess
    expect(deleted(t)).to.deep.equal([m.ReceiptHandle, m.ReceiptHandle]);
    expect(t.logger.withStep("delete_failed")).to.deep.equal([]);
    expect(t.metrics.count("JobsSucceeded")).to.equal(1);
  });

  it("keeps the message hidden while a finished job's delete is still on its way (the heartbeat runs until it lands)", async () => {
    // Prepare: a quick job with 1 s of visibility, and a delete that takes 2 s to answer
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, handlers: { quick: async () => undefined } });
    const m = message(job("quick", { estimated_seconds: 0.1 }));
    arrangeQueue(t, [[m]]);
    t.sqsMock.on(DeleteMessageCommand).callsFake(async () => {
      await sleep(2000);
      return {};
    });
    // Act
    await runUntil(t, () => t.logger.withStep("job_succeeded").length === 1, "the job's success after its delete");
    // Assess: extended by heartbeat while the delete was in flight, and no further once it landed
    const calls = visibilityCalls(t);
    expect(calls[0]).to.deep.equal([m.ReceiptHandle, 1]);
    expect(calls.length, "heartbeat extensions during the delete").to.be.at.least(2);
    const afterDelete = calls.length;
    await advance(1000);
    expect(visibilityCalls(t)).to.have.length(afterDelete);
  });

  it("extends visibility by heartbeat when a job outlives its estimate", async () => {
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100 }, handlers: { long: () => sleep(1300) } });
    const m = message(job("long", { estimated_seconds: 0.1 })); // 1 s of visibility (the extension, 3 × 100 ms, rounds up to 1 s too)
    arrangeQueue(t, [[m]]);

    await runUntil(t, () => deleted(t).length === 1, "the delete");

    const calls = visibilityCalls(t);
    expect(calls[0]).to.deep.equal([m.ReceiptHandle, 1]);
    expect(calls.length).to.be.at.least(2);
    expect(calls.slice(1).every(([rh, s]) => rh === m.ReceiptHandle && s === 1)).to.equal(true);
    expect(t.logger.withStep("visibility_extended").length).to.equal(calls.length - 1);
  });

  it("two overlapping jobs (N = 2) give one protect and one unprotect, after both have finished", async () => {
    const a = gate();
    const b = gate();
    const t = mockedWorkerDeps({ config: { concurrency: 2, agentUri: agent.uri }, handlers: { a: a.handler, b: b.handler } });
    arrangeQueue(t, [[message(job("a")), message(job("b"))]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    try {
      await waitFor(() => a.started() === 1 && b.started() === 1, 3000, "both jobs");
      a.open();
      await waitFor(() => deleted(t).length === 1, 3000, "job a deleted");
      await advance(50);
      const whileBRuns = agent.puts();
      b.open();
      await waitFor(() => deleted(t).length === 2, 3000, "job b deleted");
      await waitFor(() => agent.puts().length === 2, 3000, "the unprotect");

      expect(whileBRuns).to.deep.equal([true]);
      expect(agent.puts()).to.deep.equal([true, false]);
    } finally {
      worker.stop("test");
      await until(running);
    }
  });

  it("honours the idle window: unprotected, and no receive, for idleWindowMs after going idle", async () => {
    const ended: number[] = [];
    const t = mockedWorkerDeps({
      config: { idleWindowMs: 300, agentUri: agent.uri },
      handlers: { quick: async () => void ended.push(Date.now()) },
    });
    const { receivedAt } = arrangeQueue(t, [[message(job("quick"))], [message(job("quick"))]]);

    await runUntil(t, () => deleted(t).length === 2, "both deletes");

    const firstEnd = ended[0]!;
    const nextReceive = receivedAt.find((at) => at > firstEnd)!;
    expect(nextReceive - firstEnd).to.be.at.least(290);
    const unprotectAt = agent.requests.find((r) => r.body?.ProtectionEnabled === false)!.at;
    expect(unprotectAt).to.be.below(nextReceive);
    expect(agent.puts()).to.deep.equal([true, false, true, false]);
  });

  it("quarantining a message is not work: no idle window follows it", async () => {
    const t = mockedWorkerDeps({ config: { idleWindowMs: 10_000 }, handlers: { quick: () => Promise.resolve() } });
    arrangeQueue(t, [[message("{garbage")], [message(job("quick"))]]);
    const started = Date.now();

    await runUntil(t, () => deleted(t).length === 2, "the quarantine and the job");

    expect(Date.now() - started).to.be.below(2000);
    expect(t.logger.steps()).to.include("job_succeeded");
  });

  it("stops taking jobs once protection has been held maxProtectedMs, so the task gets its idle window", async () => {
    const long = gate();
    const t = mockedWorkerDeps({ config: { concurrency: 2, maxProtectedMs: 100 }, handlers: { long: long.handler, quick: () => Promise.resolve() } });
    const { receivedAt } = arrangeQueue(t, [[message(job("long"))]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    try {
      await waitFor(() => long.started() === 1, 3000, "the long job");
      await advance(250);
      const receivesWhileHeld = receivedAt.filter((at) => at > Date.now() - 100).length;
      long.open();
      await waitFor(() => deleted(t).length === 1, 3000, "the delete");

      expect(receivesWhileHeld).to.equal(0);
    } finally {
      worker.stop("test");
      await until(running);
    }
  });

  it("on stop: stops receiving, lets a job finish within the grace period, gives the unfinished one back at once, releases protection", async () => {
    const slow = gate();
    const t = mockedWorkerDeps({
      config: { concurrency: 2, shutdownGraceMs: 400, agentUri: agent.uri },
      handlers: { finishing: () => sleep(150), slow: slow.handler },
    });
    const finishing = message(job("finishing", { estimated_seconds: 60 }));
    const unfinished = message(job("slow", { estimated_seconds: 60 }));
    arrangeQueue(t, [[finishing, unfinished]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => slow.started() === 1, 3000, "both jobs");
    const receivesBeforeStop = t.sqsMock.commandCalls(ReceiveMessageCommand).length;

    worker.stop("SIGTERM");
    await until(running);

    expect(deleted(t)).to.deep.equal([finishing.ReceiptHandle]);
    expect(visibilityCalls(t)).to.deep.include([unfinished.ReceiptHandle, 0]);
    expect(t.sqsMock.commandCalls(ReceiveMessageCommand).length).to.equal(receivesBeforeStop);
    expect(agent.puts().at(-1)).to.equal(false);
    expect(worker.stats).to.include({ succeeded: 1, returned: 1 });
    expect(t.logger.withStep("job_returned")[0]!.fields).to.include({ message_id: unfinished.MessageId, visible_again: true });
    expect(t.logger.withStep("shutdown_complete")[0]!.fields).to.include({ unfinished: 1 });
  });

  it("on stop: never aborts the long poll in flight; what it brings is given back, not started, not swallowed", async () => {
    // Prepare: the first poll is in flight at SIGTERM and only then brings a message (SQS had
    // already handed it to the connection: aborting the call would leave it invisible, unseen).
    const t = mockedWorkerDeps({ handlers: { quick: () => Promise.resolve() } });
    arrangeQueue(t, []);
    const late = message(job("quick"));
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      await sleep(300);
      return { Messages: [late] };
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await advance(50);

    // Act
    worker.stop("SIGTERM");
    await until(running);

    // Assert
    expect(visibilityCalls(t)).to.deep.equal([[late.ReceiptHandle, 0]]);
    expect(deleted(t)).to.deep.equal([]);
    expect(t.logger.withStep("job_started")).to.have.length(0);
    expect(t.logger.withStep("shutdown_returned")[0]!.fields).to.include({ messages: 1, visible_again: 1 });
  });

  it("keeps polling after a failed receive (the SDK already retried)", async () => {
    const t = mockedWorkerDeps({ handlers: { quick: () => Promise.resolve() } });
    const inbox = [[message(job("quick"))]];
    arrangeQueue(t, inbox);
    let calls = 0;
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      await sleep(10);
      if (calls === 1) throw new Error("503");
      return { Messages: inbox.shift() ?? [] };
    });

    await runUntil(t, () => deleted(t).length >= 1, "a job after the failure");

    expect(t.logger.withStep("receive_failed")).to.have.length(1);
  });

  it("with N = 2, a long poll in flight when the task goes idle brings a job: it is started, not given back (a give-back spends a receive), and the window follows it", async () => {
    // Prepare
    const started: number[] = [];
    const ended: number[] = [];
    const t = mockedWorkerDeps({
      config: { concurrency: 2, idleWindowMs: 800, agentUri: agent.uri },
      handlers: {
        quick: async () => {
          started.push(Date.now());
          await sleep(100);
          ended.push(Date.now());
        },
      },
    });
    const late = message(job("quick"));
    const receivedAt: number[] = [];
    let calls = 0;
    arrangeQueue(t, []);
    t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      calls += 1;
      receivedAt.push(Date.now());
      if (calls === 1) return { Messages: [message(job("quick"))] };
      // The second slot's long poll: it was in flight when the first job ended, and brings a message after.
      await sleep(calls === 2 ? 300 : 20);
      return { Messages: calls === 2 ? [late] : [] };
    });
    const worker = createWorker(t.deps);
    // Act
    const running = worker.run();
    try {
      await waitFor(() => ended.length === 2, 3000, "the late job run");
      await advance(300);

      // Assert
      expect(t.logger.withStep("idle_window_deferred")[0]!.fields).to.deep.include({ messages: 1, message_ids: [late.MessageId] });
      expect(visibilityCalls(t).filter(([, v]) => v === 0)).to.deep.equal([]);
      expect(deleted(t)).to.include(late.ReceiptHandle);
      // The window follows the late job: no receive in the 250–790 ms after it ended.
      expect(receivedAt.filter((at) => at > ended[1]! + 250 && at < ended[1]! + 790)).to.deep.equal([]);
      expect(agent.puts()).to.deep.equal([true, false, true, false]);
    } finally {
      worker.stop("test");
      await until(running);
    }
  });

  it("on stop: gives back the messages of handlers that ignore their abort signal in parallel", async () => {
    const stubborn: JobHandler = () => sleep(1500);
    const t = mockedWorkerDeps({ config: { concurrency: 3, shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { stubborn } });
    const messages = [message(job("stubborn")), message(job("stubborn")), message(job("stubborn"))];
    arrangeQueue(t, [messages]);
    let active = 0;
    let maxActive = 0;
    t.sqsMock.on(ChangeMessageVisibilityCommand).callsFake(async (input: { VisibilityTimeout?: number }) => {
      if (input.VisibilityTimeout !== 0) return {};
      active += 1;
      maxActive = Math.max(maxActive, active);
      await sleep(200); // a slow call (the SDK retrying)
      active -= 1;
      return {};
    });
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => visibilityCalls(t).length === 3, 3000, "three jobs started");

    worker.stop("SIGTERM");
    await until(running);

    expect(maxActive).to.equal(3);
    expect(worker.stats.returned).to.equal(3);
  });

  it("a given-back job's heartbeat stops, even while its handler ignores the abort and runs on", async () => {
    const t = mockedWorkerDeps({ config: { heartbeatMs: 100, shutdownGraceMs: 50, abortSettleMs: 50 }, handlers: { stubborn: () => sleep(1800) } });
    const m = message(job("stubborn", { estimated_seconds: 0.1 })); // 1 s: the heartbeat extends it from ~800 ms
    arrangeQueue(t, [[m]]);
    const worker = createWorker(t.deps);
    const running = worker.run();
    await waitFor(() => visibilityCalls(t).length === 1, 3000, "the job started");

    worker.stop("SIGTERM");
    await until(running);
    await advance(1200); // the handler is still running; a live heartbeat would have extended by now

    const calls = visibilityCalls(t);
    expect(calls.at(-1)).to.deep.equal([m.ReceiptHandle, 0]);
    expect(calls.filter(([, s]) => s === 0)).to.have.length(1);
  });
});
