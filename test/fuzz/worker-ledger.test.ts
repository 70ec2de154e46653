import { expect } from "chai";
import fc from "fast-check";
import type { ConditionalOutcome } from "../../functions/shared/conditional-write";
import { JobLedger, type Lease, type LedgerItem, type LedgerStore, type LedgerWrite, MemoryLedgerStore } from "../../functions/worker/ledger";
import { checkProperty, PROPERTY_TIMEOUT_MS } from "./helpers/settings";

/**
 * The worker's job ledger (functions/worker/ledger.ts) driven through arbitrary interleavings of
 * two tasks on one job, on the in-memory table that judges the very conditions the ledger sends.
 * Faults on the first write of a step: the write never applies (all sends fail), its answer is
 * lost (the re-send meets it), every send applies and every answer is lost (the task cannot tell),
 * or its answer is lost and the other task receives the message before the re-send. Time moves
 * by arbitrary steps, so leases expire, and a holder that stops renewing outlives its lease and
 * comes back to complete. The queue keeps SQS's receipt-handle rule: only the latest handle deletes.
 */

const LEASE_MS = 1000;
const JOB = "job-1";

type Fault = "none" | "unapplied" | "lost" | "lost-all" | "lost-then-other-receives";
type TaskName = "a" | "b";
type Step = { kind: "receive" | "renew" | "finish" | "fail"; task: TaskName; fault: Fault } | { kind: "advance"; ms: number };

const fault: fc.Arbitrary<Fault> = fc.constantFrom<Fault>("none", "none", "none", "unapplied", "lost", "lost-all", "lost-then-other-receives");
const task: fc.Arbitrary<TaskName> = fc.constantFrom<TaskName>("a", "b");
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("receive" as const), task, fault }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("renew" as const), task, fault }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("finish" as const), task, fault }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("fail" as const), task, fault }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 2 * LEASE_MS }) }) },
);

const injected = () => Object.assign(new Error("read ECONNRESET"), { name: "TimeoutError" });

/** The memory table; the first write of a step meets that step's fault. */
class FaultyTable implements LedgerStore {
  readonly table = new MemoryLedgerStore();
  fault: Fault = "none";
  /** Runs between a write that applied and its lost answer (the other task's receive). */
  interleave: (() => Promise<void>) | undefined;
  private sticky = false;

  arm(f: Fault, interleave?: () => Promise<void>): void {
    this.fault = f;
    this.sticky = f === "unapplied" || f === "lost-all";
    this.interleave = interleave;
  }

  async write(w: LedgerWrite): Promise<ConditionalOutcome> {
    const f = this.fault;
    if (!this.sticky) this.fault = "none";
    if (f === "unapplied") throw injected();
    const out = await this.table.write(w);
    if (f === "lost" || f === "lost-all") throw injected();
    if (f === "lost-then-other-receives") {
      const other = this.interleave;
      this.interleave = undefined;
      await other?.();
      throw injected();
    }
    return out;
  }

  item(): LedgerItem | undefined {
    const item = this.table.items.get(JOB);
    return item ? { ...item } : undefined;
  }
}

interface TaskModel {
  name: TaskName;
  ledger: JobLedger;
  /** The lease this task believes it holds, and until when by its own account. */
  lease: Lease | undefined;
  believedUntil: number;
}

interface World {
  now: number;
  table: FaultyTable;
  tasks: Record<TaskName, TaskModel>;
  /** SQS's side: the latest receipt handle, and whether the message is gone. */
  latestHandle: string;
  handles: number;
  messageDeleted: boolean;
  /** Takes that told a task to run the job, and the ones after a completion had applied. */
  runsStarted: number;
  runsAfterCompletion: number;
  completions: number;
  violations: string[];
}

function newWorld(): World {
  const world = {
    now: 1_000_000,
    handles: 0,
    latestHandle: "",
    messageDeleted: false,
    runsStarted: 0,
    runsAfterCompletion: 0,
    completions: 0,
    violations: [] as string[],
  } as World;
  world.table = new FaultyTable();
  const ledger = (name: TaskName) =>
    new JobLedger({
      store: world.table,
      holder: () => Promise.resolve(`task-${name}`),
      leaseMs: LEASE_MS,
      now: () => world.now,
      resend: { rounds: 3, baseDelayMs: 0, sleep: async () => undefined },
    });
  world.tasks = {
    a: { name: "a", ledger: ledger("a"), lease: undefined, believedUntil: 0 },
    b: { name: "b", ledger: ledger("b"), lease: undefined, believedUntil: 0 },
  };
  return world;
}

const other = (t: TaskName): TaskName => (t === "a" ? "b" : "a");

/** SQS: a delete acts only with the latest receipt handle (a superseded one is accepted and does nothing). */
function deleteMessage(world: World, handle: string): void {
  if (world.messageDeleted) return;
  if (world.table.item()?.state !== "completed") world.violations.push(`message deleted (handle ${handle}) before its job was completed`);
  if (handle === world.latestHandle) world.messageDeleted = true;
}

async function receive(world: World, name: TaskName, f: Fault = "none"): Promise<void> {
  if (world.messageDeleted) return;
  const t = world.tasks[name];
  world.handles += 1;
  world.latestHandle = `rh-${world.handles}`;
  const handle = world.latestHandle;
  const before = world.table.item();
  const completedBefore = before?.state === "completed";
  // Free to take: no item, or a running job whose lease has expired.
  const free = before === undefined || (before.state === "running" && before.lease_expires_at < world.now);
  let out: Awaited<ReturnType<JobLedger["acquire"]>>;
  try {
    // As the worker does: a task that is running the job under a lease says so (runsHere).
    out = await t.ledger.acquire(JOB, handle, t.lease !== undefined);
  } catch {
    return; // the take's outcome is unknown to the task: it does not run the job
  }
  // A take whose answer was lost (and re-sent) is the task's own: it must not read as held by someone else.
  if (free && f === "lost" && out.kind !== "taken")
    world.violations.push(`task ${name}'s take applied with its answer lost, yet the task was told ${out.kind}`);
  if (out.kind === "taken") {
    world.runsStarted += 1;
    if (completedBefore) world.runsAfterCompletion += 1;
    const o = world.tasks[other(name)];
    if (o.lease && o.believedUntil >= world.now)
      world.violations.push(`task ${name} took a lease while task ${o.name} held a live one (until ${o.believedUntil}, now ${world.now})`);
    t.lease = out.lease;
    // The take computed its expiry from this same clock reading.
    t.believedUntil = world.now + LEASE_MS;
  } else if (out.kind === "completed") {
    if (!completedBefore && world.table.item()?.state !== "completed") world.violations.push("a receive was told 'completed' for a job that is not");
    deleteMessage(world, handle);
  }
}

async function renew(world: World, name: TaskName): Promise<void> {
  const t = world.tasks[name];
  if (!t.lease) return;
  try {
    const out = await t.ledger.renew(t.lease);
    if (out.kind === "lost") t.lease = undefined;
    else if (out.kind === "renewed") t.believedUntil = out.leaseExpiresAt;
  } catch {
    // Not assumed: the belief stays where it was.
  }
}

async function finish(world: World, name: TaskName): Promise<void> {
  const t = world.tasks[name];
  const lease = t.lease;
  if (!lease) return;
  const before = world.table.item();
  const ours = before?.lease_token === lease.token;
  let out: Awaited<ReturnType<JobLedger["complete"]>>;
  try {
    out = await t.ledger.complete(lease, "succeeded");
  } catch {
    return; // unknown: the task tries again at a later finish step
  }
  t.lease = undefined;
  if (out.kind === "completed") {
    if (!ours) world.violations.push(`task ${name}'s completion applied with a superseded lease (item token ${before?.lease_token}, ours ${lease.token})`);
    if (before?.state !== "completed") world.completions += 1;
    deleteMessage(world, out.receiptHandle);
  } else if (ours && before?.state === "running") {
    world.violations.push(`task ${name}'s completion was refused though it held the lease`);
  }
}

async function fail(world: World, name: TaskName): Promise<void> {
  const t = world.tasks[name];
  if (!t.lease) return;
  const lease = t.lease;
  t.lease = undefined;
  await t.ledger.release(lease).catch(() => undefined);
}

async function run(world: World, s: Step): Promise<void> {
  if (s.kind === "advance") {
    world.now += s.ms;
    return;
  }
  world.table.arm(s.fault, () => receive(world, other(s.task)));
  if (s.kind === "receive") await receive(world, s.task, s.fault);
  else await { renew, finish, fail }[s.kind](world, s.task);
  world.table.arm("none");
}

describe("fuzz: the worker's job ledger under two tasks, lost responses and expiring leases", function () {
  this.timeout(PROPERTY_TIMEOUT_MS);

  it("a completed job never runs again, a live lease is never shared, a superseded holder's completion is refused, a lost answer is read as one's own, and a completed job's message is always deleted by the next receive", async () => {
    await checkProperty(
      "worker ledger",
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        // Prepare
        const world = newWorld();

        // Act
        for (const s of steps) await run(world, s);
        // Drain: one more fault-free receive after every lease has expired.
        world.now += 10 * LEASE_MS;
        await receive(world, "a");
        if (world.tasks.a.lease) await finish(world, "a");

        // Assess
        expect(world.violations.join("\n"), "no step broke an invariant").to.equal("");
        expect(world.runsAfterCompletion, "a completed job never runs again").to.equal(0);
        expect(world.completions, "the job completes exactly once").to.be.at.most(1);
        const item = world.table.item();
        expect(item?.runs ?? 0, "the ledger counts at least every run a task was told to start").to.be.at.least(world.runsStarted);
        if (item?.state === "completed")
          expect(world.messageDeleted, "the completed job's message is deleted by the next receive at the latest").to.equal(true);
      }),
    );
  });
});
