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
import { ChangeMessageVisibilityBatchCommand } from "@aws-sdk/client-sqs";
import { bundleFunction, REPO_ROOT } from "../infra/bundle";
import { stackConfigFrom } from "../infra/config";
import { readStackFiles } from "../plan/stack-files";
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
  INGEST_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
  GPU_IDLE_STOP_MINUTES: "30",
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
        m.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
        await createDlqHandler(m.deps)(sqsEvent(sqsRecord()));
        return callCount(m);
      },
    },
    {
      name: "dlq: 10 messages, GPU stopped → start + park",
      messages: 10,
      run: async () => {
        const m = mockedIngestDeps();
        stubSsm(m, "i-gpu");
        fakeDescribeInstances(m.ec2Mock, [stopped]);
        m.ec2Mock.on(StartInstancesCommand).resolves({});
        m.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
        await createDlqHandler(m.deps)(sqsEvent(...Array.from({ length: 10 }, () => sqsRecord())));
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

/**
 * What waiting costs: AWS calls per parked DLQ message per minute, for each reason a message
 * parks (functions/ingest/park.ts), against the seed's single 900 s park with one message per
 * invocation. A return costs the poller's ReceiveMessage plus what the handler sends, shared by
 * the records that came back together (up to the batch size, 10); returns per minute = 60 / park.
 */
async function parkCost() {
  // The parks the dev stack deploys, not the unit tests' fixture.
  const ingest = stackConfigFrom(readStackFiles(REPO_ROOT, "dev").config).ingest;
  const config = {
    bootParkSeconds: ingest.dlqBootParkSeconds,
    capacityRetrySeconds: ingest.dlqCapacityRetrySeconds,
    visibilityExtensionSeconds: ingest.dlqParkSeconds,
  };
  const perParkedMessage = async (batch: number, arrange: (m: ReturnType<typeof mockedIngestDeps>) => void) => {
    const m = mockedIngestDeps();
    stubSsm(m, "i-gpu");
    m.sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
    arrange(m);
    await createDlqHandler(m.deps)(sqsEvent(...Array.from({ length: batch }, () => sqsRecord())));
    return (callCount(m) + 1) / batch;
  };
  const booting = (m: ReturnType<typeof mockedIngestDeps>) => fakeDescribeInstances(m.ec2Mock, [{ id: "i-gpu", state: "pending" }]);
  const noCapacity = (m: ReturnType<typeof mockedIngestDeps>) => {
    fakeDescribeInstances(m.ec2Mock, [{ id: "i-gpu", state: "stopped" }]);
    m.ec2Mock.on(StartInstancesCommand).rejects(Object.assign(new Error("no capacity"), { name: "InsufficientInstanceCapacity" }));
  };
  const cannotStart = (m: ReturnType<typeof mockedIngestDeps>) => {
    fakeDescribeInstances(m.ec2Mock, [{ id: "i-gpu", state: "stopped" }]);
    m.ec2Mock.on(StartInstancesCommand).rejects(Object.assign(new Error("denied"), { name: "UnauthorizedOperation" }));
  };
  const perMinute = (calls: number, seconds: number) => (calls * 60) / seconds;
  const rows = async (batch: number) => ({
    booting: perMinute(await perParkedMessage(batch, booting), config.bootParkSeconds),
    capacity: perMinute(await perParkedMessage(batch, noCapacity), config.capacityRetrySeconds),
    cannotStart: perMinute(await perParkedMessage(batch, cannotStart), config.visibilityExtensionSeconds),
  });
  return {
    seed900: perMinute(await perParkedMessage(1, booting), 900),
    alone: await rows(1),
    backlog: await rows(10),
    parks: { booting: config.bootParkSeconds, capacity: config.capacityRetrySeconds, cannotStart: config.visibilityExtensionSeconds },
  };
}

/** The local run's "GPU up → backlog drained", from `npm start -- --scenario ingest-gpu-outage --json`. */
function drainTime(): { wallMs: number; simulatedSeconds: number } | undefined {
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "local/cli.ts"), "--scenario", "ingest-gpu-outage", "--json", "--no-tty"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 600_000,
  });
  if (r.status !== 0) throw new Error(`the ingest scenario exited ${r.status}: ${r.stderr.slice(-2000)}`);
  const doc = JSON.parse(r.stdout) as {
    speed: number;
    scenarios: Array<{ timings: Record<string, number | { wallMs: number; simulatedSeconds: number } | null> }>;
  };
  const t = doc.scenarios[0]?.timings["GPU up → backlog drained"];
  if (t === null || t === undefined) return undefined;
  // Either shape: wall ms alone (older runs) or wall and simulated.
  return typeof t === "number" ? { wallMs: t, simulatedSeconds: (t * doc.speed) / 1000 } : t;
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
    parkCost: await parkCost(),
    drain: drainTime(),
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
  console.log(
    `\nwindow handler throughput: ${t.messages} msgs in ${t.seconds.toFixed(2)} s = ${t.messagesPerSecond.toFixed(0)} msg/s (batches of 10, POST to 127.0.0.1, mocked AWS), rss ${t.rssMiB.toFixed(0)} MiB`,
  );
  console.log(`offline plan wall time (median of 3): dev ${results.planWallMs.dev} ms, prod ${results.planWallMs.prod} ms`);
  const p = results.parkCost;
  console.log("\nAWS calls per parked DLQ message per minute of waiting (a return = the poller's receive + the handler's calls, shared by the batch)");
  console.log(`  seed, one message per invocation, every park 900 s: ${p.seed900.toFixed(2)}`);
  console.log("  now                                 a message alone   a backlog (batches of 10)");
  const row = (label: string, k: keyof typeof p.alone) => console.log(`  ${label.padEnd(36)}${p.alone[k].toFixed(2).padEnd(18)}${p.backlog[k].toFixed(2)}`);
  row(`GPU booting (${p.parks.booting} s park)`, "booting");
  row(`no EC2 capacity (${p.parks.capacity} s park)`, "capacity");
  row(`nothing can start it (${p.parks.cannotStart} s park)`, "cannotStart");
  console.log("  before this change (issue 15, one message per invocation, 20 s boot park): booting 15.00, capacity 3.00, cannot start 0.40");
  console.log("  steady state (GPU up, no backlog): nothing parks, 0");
  const d = results.drain;
  console.log(
    `\nGPU serving → parked backlog drained (local run, ingest-gpu-outage at speed 60): ${d ? `${(d.wallMs / 1000).toFixed(1)} s wall = ${d.simulatedSeconds.toFixed(0)} simulated s` : "not reached"}`,
  );
  console.log("  before issue 15: 14.3 s wall ≈ 860 simulated s (every park 900 s; window retries after the 180 s visibility timeout)");
  console.log("  issue 15's first version (one message per invocation, 20 s boot park): 83–111 simulated s");
  console.log("\nwritten to .bench/results.json");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
