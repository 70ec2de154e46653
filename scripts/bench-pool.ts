/**
 * `npx tsx scripts/bench-pool.ts`: the warm pool's numbers. The refill bundle's size, AWS calls
 * per successful pickup, per claim and per refill run (aws-sdk-client-mock stubs: deterministic,
 * no network), and pickup/claim throughput of the library itself over in-memory fakes.
 */
import * as zlib from "node:zlib";
import { bundleFunction } from "../infra/bundle";
import { POOL_ENTRIES } from "../infra/parts/pool";
import { claimInstance, type ClaimRequest } from "../functions/pool/claim";
import { pickup } from "../functions/pool/pickup";
import { refillClass } from "../functions/pool/refill-class";
import {
  advert,
  FakeClaimTable,
  FakeClock,
  FakeEc2,
  type FakeEc2Instance,
  FakePoolQueue,
  GPU_SMALL,
  POOL_TAG,
  poolTags,
  QUEUE_URL,
  TABLE,
  telemetry,
} from "../test/functions/helpers/pool-fakes";

interface Row {
  what: string;
  value: string;
}
const rows: Row[] = [];
const row = (what: string, value: string | number) => rows.push({ what, value: String(value) });

function bundleRows(): void {
  for (const entry of Object.values(POOL_ENTRIES)) {
    const b = bundleFunction(entry);
    row(`bundle ${entry} (raw / gzip)`, `${(b.bytes / 1024).toFixed(1)} KiB / ${(zlib.gzipSync(b.code, { level: 9 }).byteLength / 1024).toFixed(1)} KiB`);
  }
}

function claimWorld(instances: FakeEc2Instance[]) {
  const clock = new FakeClock();
  const queue = new FakePoolQueue(clock);
  const ec2 = new FakeEc2(instances);
  const table = new FakeClaimTable();
  const deps = { sqs: queue.sqs, ec2: ec2.ec2, dynamodb: table.dynamodb, clock: clock.read, ...telemetry() };
  const calls = () => queue.mock.calls().length + ec2.mock.calls().length + table.mock.calls().length;
  const request = (): ClaimRequest => ({
    workflowId: "wf",
    queueUrl: QUEUE_URL,
    resourceClass: GPU_SMALL,
    requirements: { allowedInstanceTypes: ["g5.xlarge"] },
    claimTableName: TABLE,
    poolTag: POOL_TAG,
    lockTtlSeconds: 600,
    requeueDelaySeconds: 0,
    deadline: clock.now + 60_000,
  });
  return { clock, queue, ec2, table, deps, calls, request };
}

async function pickupCalls(): Promise<void> {
  for (const unsuitableFirst of [0, 1, 3]) {
    const w = claimWorld([]);
    for (let i = 0; i < unsuitableFirst; i += 1) w.queue.push(advert({ instance_type: "g6.xlarge" }));
    w.queue.push(advert());
    const before = w.calls();
    const r = await pickup(w.deps, {
      queueUrl: QUEUE_URL,
      resourceClass: GPU_SMALL,
      requirements: { allowedInstanceTypes: ["g5.xlarge"] },
      requeueDelaySeconds: 5,
      tolerance: 5,
      deadline: w.clock.now + 1000,
    });
    if (r.kind !== "suitable") throw new Error("bench pickup found nothing");
    row(`AWS calls per successful pickup (${unsuitableFirst} unsuitable first)`, w.calls() - before);
  }
  const empty = claimWorld([]);
  await pickup(empty.deps, {
    queueUrl: QUEUE_URL,
    resourceClass: GPU_SMALL,
    requirements: {},
    requeueDelaySeconds: 5,
    tolerance: 5,
    deadline: empty.clock.now + 1000,
  });
  row("AWS calls per pickup of an empty pool (global exhaustion)", empty.calls());
  const lone = claimWorld([]);
  lone.queue.push(advert({ instance_type: "g6.xlarge" }));
  await pickup(lone.deps, {
    queueUrl: QUEUE_URL,
    resourceClass: GPU_SMALL,
    requirements: { allowedInstanceTypes: ["g5.xlarge"] },
    requeueDelaySeconds: 0,
    tolerance: 5,
    deadline: lone.clock.now + 1000,
  });
  row("AWS calls per pickup ending in local exhaustion (tolerance 5)", lone.calls());
}

async function claimCalls(): Promise<void> {
  const cases: Array<[string, (w: ReturnType<typeof claimWorld>) => void, FakeEc2Instance[]]> = [];
  const running = advert();
  const stopped = advert();
  const raced = advert();
  const after = advert();
  cases.push(["running instance", (w) => w.queue.push(running), [{ id: running.instance_id, state: "running", tags: poolTags() }]]);
  cases.push(["stopped instance (started)", (w) => w.queue.push(stopped), [{ id: stopped.instance_id, state: "stopped", tags: poolTags() }]]);
  cases.push([
    "lost race, then a running one",
    (w) => {
      w.table.items.set(raced.instance_id, { owner: "other", expiresAt: 9e9 });
      w.queue.push(raced);
      w.queue.push(after);
    },
    [{ id: after.instance_id, state: "running", tags: poolTags() }],
  ]);
  for (const [title, arrange, instances] of cases) {
    const w = claimWorld(instances);
    arrange(w);
    const r = await claimInstance(w.deps, w.request());
    if (r.outcome !== "claimed") throw new Error(`bench claim ${title} failed`);
    row(`AWS calls per claim: ${title}`, w.calls());
  }
  const empty = claimWorld([]);
  await claimInstance(empty.deps, empty.request());
  row("AWS calls per claim: exhausted pool", empty.calls());
}

async function refillCalls(): Promise<void> {
  for (const [title, instances, size] of [
    ["empty class, size 3", [] as FakeEc2Instance[], 3],
    ["full class, size 3 (re-advertise only)", [0, 1, 2].map((i) => ({ id: `i-00000000000000f0${i}`, state: "running", tags: poolTags() })), 3],
    [
      "full class, size 25 (re-advertise only)",
      Array.from({ length: 25 }, (_, i) => ({ id: `i-0000000000000${(0xf00 + i).toString(16)}`, state: "running", tags: poolTags() })),
      25,
    ],
  ] as const) {
    const ec2 = new FakeEc2([...instances]);
    const table = new FakeClaimTable();
    const queue = new FakePoolQueue();
    const deps = {
      ec2: ec2.ec2,
      dynamodb: table.dynamodb,
      sqs: queue.sqs,
      clock: Date.now,
      config: {
        classes: [],
        claimTableName: TABLE,
        poolTag: POOL_TAG,
        poolTagKey: "encache:pool",
        poolClassTagKey: "encache:pool-class",
        leaseSeconds: 60,
        quarantineQueueUrl: QUEUE_URL,
      },
      ...telemetry(),
    };
    await refillClass(deps, { ...GPU_SMALL, queueUrl: QUEUE_URL, launchTemplateId: "lt-1", size }, "run");
    row(`AWS calls per refill run: ${title}`, ec2.mock.calls().length + table.mock.calls().length + queue.mock.calls().length);
  }
}

async function throughput(): Promise<void> {
  const n = 2000;
  const w = claimWorld([]);
  for (let i = 0; i < n; i += 1) {
    w.queue.push(advert({ instance_type: i % 2 ? "g6.xlarge" : "g5.xlarge" }));
  }
  const t0 = process.hrtime.bigint();
  let found = 0;
  while (found < n / 2) {
    const r = await pickup(w.deps, {
      queueUrl: QUEUE_URL,
      resourceClass: GPU_SMALL,
      requirements: { allowedInstanceTypes: ["g5.xlarge"] },
      requeueDelaySeconds: 0,
      tolerance: 5,
      deadline: w.clock.now + 1000,
    });
    if (r.kind !== "suitable") break;
    found += 1;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  row("pickup library throughput (in-memory SQS stub, half unsuitable)", `${Math.round((found / ms) * 1000)} pickups/s`);
}

async function main(): Promise<void> {
  bundleRows();
  await pickupCalls();
  await claimCalls();
  await refillCalls();
  await throughput();
  const width = Math.max(...rows.map((r) => r.what.length));
  console.log(`${"measure".padEnd(width)}  value`);
  console.log(`${"-".repeat(width)}  -----`);
  for (const r of rows) console.log(`${r.what.padEnd(width)}  ${r.value}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
