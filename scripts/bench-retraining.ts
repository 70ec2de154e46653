/**
 * `npx tsx scripts/bench-retraining.ts`: the retraining launcher's bundle size, AWS calls per
 * message on a batch of 10 (aws-sdk-client-mock call counts, no network), and handler throughput
 * against those stubs. Prints a table; exits 0.
 */
import * as zlib from "node:zlib";
import { ListTasksCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SendMessageCommand } from "@aws-sdk/client-sqs";
import { BatchGetCommand, DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { bundleFunction } from "../infra/bundle";
import { RETRAINING_ENTRY } from "../infra/parts/retraining";
import type { LauncherConfig } from "../functions/retraining/config";
import { createLauncherHandler } from "../functions/retraining/handler";
import { mockedLauncherDeps } from "../test/functions/helpers/retraining-deps";
import { sqsEvent, sqsRecord } from "../test/functions/helpers/sqs-events";

interface Scenario {
  name: string;
  config: Partial<LauncherConfig>;
  running: number;
  /** Another invocation holds the capacity lease for the whole wait. */
  leaseBusy?: boolean;
  bodies: () => string[];
}

const valid = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ model_name: `Model${i}-v1`, trigger: "scheduled" }));

const scenarios: Scenario[] = [
  { name: "10 valid, room for all", config: { maxConcurrentTasks: 20 }, running: 0, bodies: () => valid(10) },
  { name: "10 valid, room for 3 (7 deferred)", config: { maxConcurrentTasks: 5 }, running: 2, bodies: () => valid(10) },
  { name: "10 valid, lease busy (all deferred)", config: { maxConcurrentTasks: 20 }, running: 0, leaseBusy: true, bodies: () => valid(10) },
  {
    name: "8 valid + 2 malformed (quarantined)",
    config: { maxConcurrentTasks: 20 },
    running: 0,
    bodies: () => [...valid(8), "{", JSON.stringify({ model_name: "M" })],
  },
];

function harness(s: Scenario) {
  const t = mockedLauncherDeps(s.config);
  t.ecsMock.on(ListTasksCommand).resolves({ taskArns: Array.from({ length: s.running }, (_, i) => `arn:aws:ecs:us-east-1:123456789012:task/c/r${i}`) });
  let n = 0;
  t.ecsMock.on(RunTaskCommand).callsFake(() => ({ tasks: [{ taskArn: `arn:aws:ecs:us-east-1:123456789012:task/c/${++n}` }] }));
  t.dbMock.on(BatchGetCommand).resolves({ Responses: {} });
  t.dbMock.on(UpdateCommand).resolves({});
  if (s.leaseBusy) t.dbMock.on(PutCommand).rejects(Object.assign(new Error("conditional request failed"), { name: "ConditionalCheckFailedException" }));
  else t.dbMock.on(PutCommand).resolves({});
  t.dbMock.on(DeleteCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  // Deferred messages are re-sent to the queue with a delay, in batches.
  t.sqsMock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({
    Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `copy-${e.Id}`, MD5OfMessageBody: "" })),
    Failed: [],
  }));
  return t;
}

async function callsPerMessage(s: Scenario) {
  const t = harness(s);
  const bodies = s.bodies();
  const res = await createLauncherHandler(t.deps)(sqsEvent(...bodies.map((b) => sqsRecord(b))));
  const sent = [t.ecsMock, t.dbMock, t.sqsMock].flatMap((m) => m.calls().map((c) => c.args[0].constructor.name));
  const count = (name: string) => sent.filter((n) => n === name).length;
  const byCall = {
    ListTasks: count("ListTasksCommand"),
    BatchGetItem: count("BatchGetCommand"),
    "PutItem (lease)": count("PutCommand"),
    "DeleteItem (lease)": count("DeleteCommand"),
    RunTask: count("RunTaskCommand"),
    UpdateItem: count("UpdateCommand"),
    SendMessage: count("SendMessageCommand"),
    "SendMessageBatch (defer)": count("SendMessageBatchCommand"),
  };
  const total = Object.values(byCall).reduce((a, b) => a + b, 0);
  return { scenario: s.name, ...byCall, total, perMessage: (total / bodies.length).toFixed(2), failed: res.batchItemFailures.length };
}

async function throughput(): Promise<number> {
  const s = scenarios[0] as Scenario;
  const t = harness(s);
  const handler = createLauncherHandler(t.deps);
  const batches = 300;
  const start = process.hrtime.bigint();
  for (let i = 0; i < batches; i++) {
    t.ecsMock.resetHistory();
    t.dbMock.resetHistory();
    await handler(sqsEvent(...s.bodies().map((b) => sqsRecord(b))));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return (batches * 10) / seconds;
}

async function main(): Promise<void> {
  const bundle = bundleFunction(RETRAINING_ENTRY);
  const gzip = zlib.gzipSync(bundle.code, { level: 9 }).byteLength;
  console.log("Retraining launcher bundle");
  console.table([{ entry: RETRAINING_ENTRY, rawKiB: (bundle.bytes / 1024).toFixed(1), gzipKiB: (gzip / 1024).toFixed(1) }]);

  console.log("AWS calls per message, batch of 10 (lease PutItem + DeleteItem and ListTasks are once per batch; the lease is free)");
  const rows = [];
  for (const s of scenarios) rows.push(await callsPerMessage(s));
  console.table(rows);

  const perSecond = await throughput();
  console.log("Handler throughput against stubs (no network)");
  console.table([{ scenario: scenarios[0]?.name, messagesPerSecond: Math.round(perSecond) }]);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
