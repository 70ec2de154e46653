/**
 * Ingest part of `npm run bench`: measures what tests must not time. Bundle sizes, cold init of each bundle,
 * AWS calls per message for the main paths, handler throughput, and the offline plan's wall
 * time per stack. Prints a table and writes .bench/results.json (git-ignored).
 *
 * The handlers run with aws-sdk-client-mock stubs (deterministic call counts, no network) and,
 * for throughput, POST to a local HTTP server on 127.0.0.1 that plays the GPU service.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { GetParameterCommand } from "@aws-sdk/client-ssm";
import { StartInstancesCommand } from "@aws-sdk/client-ec2";
import { ChangeMessageVisibilityCommand } from "@aws-sdk/client-sqs";
import { bundleFunction, REPO_ROOT } from "../infra/bundle";
import { INGEST_ENTRIES } from "../infra/parts/ingest";
import { createDlqHandler } from "../functions/ingest/dlq-handler";
import { createWindowHandler } from "../functions/ingest/window-handler";
import { FakeGpuService, loopbackOnlyFetch } from "../test/functions/helpers/gpu-server";
import { fakeDescribeInstances, mockedIngestDeps, PARAM, type FakeInstance } from "../test/functions/helpers/ingest-deps";
import { sqsEvent, sqsRecord, validPayload } from "../test/functions/helpers/sqs-events";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const HANDLER_ENV = {
  GPU_SERVICE_PORT: "8080",
  GPU_SERVICE_PATH: "/ingest/window",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/q",
  INGEST_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
  AWS_REGION: "us-east-1",
  POWERTOOLS_SERVICE_NAME: "bench",
};

function bundles() {
  return Object.values(INGEST_ENTRIES).map((entry) => {
    const b = bundleFunction(entry);
    return { entry, bytes: b.bytes, gzipBytes: zlib.gzipSync(b.code, { level: 9 }).byteLength, code: b.code };
  });
}

/** Time to load the bundle in a fresh Node process: module init, client construction, env parse. */
function coldInitMs(code: string, runs = 7): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-init-"));
  fs.writeFileSync(path.join(dir, "index.js"), code);
  const probe = `const t=process.hrtime.bigint();require(${JSON.stringify(path.join(dir, "index.js"))});console.log(Number(process.hrtime.bigint()-t)/1e6)`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ["-e", probe], { env: { ...process.env, ...HANDLER_ENV }, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`cold init failed: ${r.stderr}`);
    times.push(Number(r.stdout.trim()));
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return median(times);
}

function callCount(m: ReturnType<typeof mockedIngestDeps>): number {
  return m.ssmMock.calls().length + m.ec2Mock.calls().length + m.sqsMock.calls().length;
}

function stubSsm(m: ReturnType<typeof mockedIngestDeps>, value: string) {
  m.ssmMock.on(GetParameterCommand, { Name: PARAM }).resolves({ Parameter: { Name: PARAM, Value: value } });
}

async function awsCallsPerMessage() {
  const running: FakeInstance = { id: "i-gpu", state: "running", ip: "10.0.0.5" };
  const stopped: FakeInstance = { id: "i-gpu", state: "stopped" };
  const scenarios: Array<{ name: string; messages: number; run: () => Promise<number> }> = [
    {
      name: "window: batch of 10, GPU running (SSM id)",
      messages: 10,
      run: async () => {
        const m = mockedIngestDeps();
        stubSsm(m, "i-gpu");
        fakeDescribeInstances(m.ec2Mock, [running]);
        await createWindowHandler(m.deps)(sqsEvent(...Array.from({ length: 10 }, () => sqsRecord())));
        return callCount(m);
      },
    },
    {
      name: "window: batch of 10, SSM 'none' → tag scan + write-back",
      messages: 10,
      run: async () => {
        const m = mockedIngestDeps();
        stubSsm(m, "none");
        fakeDescribeInstances(m.ec2Mock, [running]);
        await createWindowHandler(m.deps)(sqsEvent(...Array.from({ length: 10 }, () => sqsRecord())));
        return callCount(m);
      },
    },
    {
      name: "dlq: 1 message, GPU running",
      messages: 1,
      run: async () => {
        const m = mockedIngestDeps();
        stubSsm(m, "i-gpu");
        fakeDescribeInstances(m.ec2Mock, [running]);
        await createDlqHandler(m.deps)(sqsEvent(sqsRecord()));
        return callCount(m);
      },
    },
    {
      name: "dlq: 1 message, GPU stopped → start + park",
      messages: 1,
      run: async () => {
        const m = mockedIngestDeps();
        stubSsm(m, "i-gpu");
        fakeDescribeInstances(m.ec2Mock, [stopped]);
        m.ec2Mock.on(StartInstancesCommand).resolves({});
        m.sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
        await createDlqHandler(m.deps)(sqsEvent(sqsRecord()));
        return callCount(m);
      },
    },
  ];
  const out: Array<{ scenario: string; calls: number; perMessage: number }> = [];
  for (const s of scenarios) {
    const calls = await s.run();
    out.push({ scenario: s.name, calls, perMessage: calls / s.messages });
  }
  return out;
}

async function throughput(messages = 3000) {
  const gpu = new FakeGpuService();
  await gpu.start();
  try {
    const m = mockedIngestDeps({ fetch: loopbackOnlyFetch });
    m.deps.gpuServiceUrl = gpu.urlFor("/ingest/window");
    stubSsm(m, "i-gpu");
    fakeDescribeInstances(m.ec2Mock, [{ id: "i-gpu", state: "running", ip: "10.0.0.5" }]);
    const handler = createWindowHandler(m.deps);
    const started = process.hrtime.bigint();
    let failures = 0;
    for (let i = 0; i < messages / 10; i++) {
      const r = await handler(sqsEvent(...Array.from({ length: 10 }, (_, j) => sqsRecord(validPayload({ windowIndex: i * 10 + j })))));
      failures += r.batchItemFailures.length;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (failures > 0 || gpu.requests.length !== messages) throw new Error(`throughput run lost messages: ${failures} failures, ${gpu.requests.length} posts`);
    return { messages, seconds, messagesPerSecond: messages / seconds, rssMiB: process.memoryUsage().rss / 2 ** 20 };
  } finally {
    await gpu.stop();
  }
}

function planWallMs(stack: string, runs = 3): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = Date.now();
    const r = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "plan/cli.ts"), "--stack", stack, "--json"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`plan ${stack} exited ${r.status}: ${r.stderr}`);
    times.push(Date.now() - t);
  }
  return median(times);
}

async function main() {
  const b = bundles();
  const results = {
    node: process.version,
    bundles: b.map(({ entry, bytes, gzipBytes, code }) => ({ entry, bytes, gzipBytes, coldInitMs: coldInitMs(code) })),
    awsCalls: await awsCallsPerMessage(),
    throughput: await throughput(),
    planWallMs: { dev: planWallMs("dev"), prod: planWallMs("prod") },
  };
  fs.mkdirSync(path.join(REPO_ROOT, ".bench"), { recursive: true });
  fs.writeFileSync(path.join(REPO_ROOT, ".bench/results.json"), `${JSON.stringify(results, null, 2)}\n`);

  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`bench (${results.node}, ${os.cpus().length} cores)\n`);
  console.log("bundle                         raw          gzip       cold init (median of 7)");
  for (const x of results.bundles) console.log(`${x.entry.padEnd(30)} ${kib(x.bytes).padEnd(12)} ${kib(x.gzipBytes).padEnd(10)} ${x.coldInitMs.toFixed(0)} ms`);
  console.log("\nAWS calls per message");
  for (const x of results.awsCalls) console.log(`  ${x.scenario.padEnd(58)} ${x.calls} calls, ${x.perMessage.toFixed(2)}/msg`);
  const t = results.throughput;
  console.log(`\nwindow handler throughput: ${t.messages} msgs in ${t.seconds.toFixed(2)} s = ${t.messagesPerSecond.toFixed(0)} msg/s (batches of 10, POST to 127.0.0.1, mocked AWS), rss ${t.rssMiB.toFixed(0)} MiB`);
  console.log(`offline plan wall time (median of 3): dev ${results.planWallMs.dev} ms, prod ${results.planWallMs.prod} ms`);
  console.log("\nwritten to .bench/results.json");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
