/**
 * `npx tsx scripts/bench-worker.ts`: what the worker's tests must not time. The bundle that goes
 * into the image, SQS calls per job (aws-sdk-client-mock, deterministic), and the worker's
 * throughput against moto with N = 1 and N = 4 jobs in flight. Starts its own moto on a free
 * loopback port and stops it at the end. Prints a table and writes .bench/worker.json.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { bundleFunction, REPO_ROOT } from "../infra/bundle";
import { MotoServer } from "../local/aws/moto";
import { buildHandlers, type HandlerRegistry } from "../functions/worker/handlers";
import { TaskProtection } from "../functions/worker/protection";
import { JobLedger, MemoryLedgerStore } from "../functions/worker/ledger";
import { createWorker } from "../functions/worker/worker";
import { job, message, mockedWorkerDeps, testWorkerConfig, waitFor } from "../test/functions/helpers/worker-deps";
import { RecordingLogger, RecordingMetrics } from "../test/functions/helpers/telemetry";

const MESSAGES = 200;
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

/** SQS calls per job on the success path, with N jobs per receive. */
async function callsPerJob(concurrency: number): Promise<Record<string, number>> {
  const t = mockedWorkerDeps({ config: { concurrency }, handlers: { noop: () => Promise.resolve() } });
  const inbox = Array.from({ length: 100 }, () => message(job("noop", { estimated_seconds: 60 })));
  let fruitfulReceives = 0;
  t.sqsMock.on(ReceiveMessageCommand).callsFake(async (input: { MaxNumberOfMessages?: number }) => {
    await new Promise((r) => setTimeout(r, 1));
    const batch = inbox.splice(0, input.MaxNumberOfMessages ?? 1);
    if (batch.length > 0) fruitfulReceives += 1;
    return { Messages: batch };
  });
  t.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
  t.sqsMock.on(DeleteMessageCommand).resolves({});
  const worker = createWorker(t.deps);
  const running = worker.run();
  await waitFor(() => worker.stats.succeeded === 100, 30_000, "100 jobs");
  worker.stop("bench");
  await running;
  const out: Record<string, number> = {};
  for (const call of t.sqsMock.calls()) {
    const name = call.args[0].constructor.name.replace(/Command$/, "");
    out[name] = (out[name] ?? 0) + 1;
  }
  // Empty polls after the last job are the loop idling, not the jobs' cost: count receives that returned work.
  out.ReceiveMessage = fruitfulReceives;
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v / 100]));
}

async function throughput(sqs: SQSClient, concurrency: number, kind: "in-process" | "executable", scratch: string): Promise<number> {
  const name = `bench-${kind}-${concurrency}-${Date.now()}`;
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  const url = QueueUrl!;
  for (let i = 0; i < MESSAGES; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: Array.from({ length: 10 }, (_, j) => ({
          Id: String(j),
          MessageBody: JSON.stringify({ job_id: `j${i + j}`, type: "work", payload: { i: i + j }, estimated_seconds: 30 }),
        })),
      }),
    );
  }
  const logger = new RecordingLogger();
  const metrics = new RecordingMetrics();
  const handlers: HandlerRegistry =
    kind === "in-process" ? new Map([["work", () => Promise.resolve()]]) : buildHandlers({ work: { command: "/bin/true", args: [] } }, scratch);
  const worker = createWorker({
    sqs,
    config: testWorkerConfig({ workQueueUrl: url, quarantineQueueUrl: url, concurrency, waitTimeSeconds: 1, idleWindowMs: 0 }),
    handlers,
    protection: new TaskProtection({ agentUri: undefined, expiresInMinutes: 60, logger, metrics }),
    // In memory: the bench measures the worker's SQS overhead; the ledger adds one UpdateItem per take and per completion.
    ledger: new JobLedger({ store: new MemoryLedgerStore(), holder: () => Promise.resolve("bench"), leaseMs: 180_000 }),
    logger,
    metrics,
  });
  const started = Date.now();
  const running = worker.run();
  await waitFor(() => worker.stats.succeeded >= MESSAGES, 300_000, `${MESSAGES} jobs`);
  const seconds = (Date.now() - started) / 1000;
  worker.stop("bench");
  await running;
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }));
  if (Number(Attributes?.ApproximateNumberOfMessages) !== 0) throw new Error("queue not drained");
  return MESSAGES / seconds;
}

async function main(): Promise<void> {
  const bundle = bundleFunction("functions/worker/main.ts");
  const gzip = zlib.gzipSync(bundle.code, { level: 9 }).byteLength;
  const calls = { n1: await callsPerJob(1), n4: await callsPerJob(4) };

  const moto = new MotoServer();
  const endpoint = await moto.start();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "bench-worker-"));
  const rates: Array<{ kind: string; n: number; perSecond: number }> = [];
  try {
    const sqs = new SQSClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "bench", secretAccessKey: "bench" } });
    for (const kind of ["in-process", "executable"] as const) {
      for (const n of [1, 4]) rates.push({ kind, n, perSecond: await throughput(sqs, n, kind, scratch) });
    }
  } finally {
    await moto.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }

  console.log("worker bundle (dist/worker-image/worker.js)");
  console.log(`  ${kib(bundle.bytes)} raw, ${kib(gzip)} gzip`);
  console.log("SQS calls per job, success path (receives that returned jobs; a receive asks for the free slots)");
  for (const [label, c] of Object.entries(calls))
    console.log(
      `  ${label.padEnd(4)} ${Object.entries(c)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(", ")}`,
    );
  console.log(`throughput on moto, ${MESSAGES} queued jobs, messages per second`);
  console.log(`  ${"handler".padEnd(38)} ${"N = 1".padEnd(8)} N = 4`);
  for (const kind of ["in-process", "executable"]) {
    const r = (n: number) => rates.find((x) => x.kind === kind && x.n === n)!.perSecond.toFixed(1);
    const label = kind === "in-process" ? "in-process no-op handler" : "allow-listed executable (/bin/true)";
    console.log(`  ${label.padEnd(38)} ${r(1).padEnd(8)} ${r(4)}`);
  }
  fs.mkdirSync(path.join(REPO_ROOT, ".bench"), { recursive: true });
  fs.writeFileSync(
    path.join(REPO_ROOT, ".bench/worker.json"),
    JSON.stringify({ bundle: { bytes: bundle.bytes, gzipBytes: gzip }, callsPerJob: calls, throughput: rates }, null, 2),
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
