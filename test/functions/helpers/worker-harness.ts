import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type ReceiveMessageCommandInput,
} from "@aws-sdk/client-sqs";
import type { JobHandler } from "../../../functions/worker/handlers";
import { createWorker, type Worker } from "../../../functions/worker/worker";
import { httpFetch, sleep, until, waitFor } from "./fake-time";
import { mockedWorkerDeps as workerDeps } from "./worker-deps";

/**
 * The worker's unit-test harness on fake time (helpers/fake-time): mocked SQS whose
 * ReceiveMessage answers from an inbox, and the agent's calls over `node:http` (see httpFetch).
 */
export const mockedWorkerDeps = (options: Parameters<typeof workerDeps>[0] = {}) => workerDeps({ fetch: httpFetch, ...options });
export type Harness = ReturnType<typeof mockedWorkerDeps>;

/** ReceiveMessage answers from `inbox` one batch per call, recording when each call was made. */
export function arrangeQueue(t: Harness, inbox: Message[][]): { receivedAt: number[] } {
  const receivedAt: number[] = [];
  t.sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
    receivedAt.push(Date.now());
    const batch = inbox.shift();
    if (!batch) await sleep(20); // an empty long poll
    return { Messages: batch ?? [] };
  });
  t.sqsMock.on(DeleteMessageCommand).resolves({});
  t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  return { receivedAt };
}

/**
 * A queue holding `backlog` that answers as SQS does: each ReceiveMessage hands out at most its
 * MaxNumberOfMessages (and an empty long poll when nothing is left), so a receive that asks for
 * too many gets too many.
 */
export function arrangeBacklog(t: Harness, backlog: Message[]): { asked: Array<number | undefined> } {
  arrangeQueue(t, []);
  const asked: Array<number | undefined> = [];
  t.sqsMock.on(ReceiveMessageCommand).callsFake(async (input: ReceiveMessageCommandInput) => {
    asked.push(input.MaxNumberOfMessages);
    const batch = backlog.splice(0, input.MaxNumberOfMessages ?? 1);
    if (batch.length === 0) await sleep(20);
    return { Messages: batch };
  });
  return { asked };
}

export const visibilityCalls = (t: Harness) =>
  t.sqsMock.commandCalls(ChangeMessageVisibilityCommand).map((c) => [c.args[0].input.ReceiptHandle, c.args[0].input.VisibilityTimeout]);
export const deleted = (t: Harness) => t.sqsMock.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input.ReceiptHandle);

/** A handler that finishes when told to (or when aborted), for controlling overlap. */
export function gate(): { handler: JobHandler; open: () => void; started: () => number } {
  let release: () => void = () => undefined;
  const opened = new Promise<void>((r) => (release = r));
  let starts = 0;
  return {
    handler: async ({ signal }) => {
      starts += 1;
      await Promise.race([
        opened,
        new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason instanceof Error ? signal.reason : new Error("aborted")))),
      ]);
    },
    open: () => release(),
    started: () => starts,
  };
}

/** Runs a worker until `done` holds (on fake time), then stops it and waits for its shutdown. */
export async function runUntil(t: Harness, done: () => boolean, what: string, timeoutMs = 5000): Promise<Worker> {
  const worker = createWorker(t.deps);
  const running = worker.run();
  try {
    await waitFor(done, timeoutMs, what);
  } finally {
    worker.stop("test");
    await until(running);
  }
  return worker;
}
