import { expect } from "chai";
import type { ConditionalOutcome } from "../../../functions/shared/conditional-write";
import {
  type Acquired,
  applyWrite,
  evaluateCondition,
  JobLedger,
  LEDGER_RETENTION_SECONDS,
  type LedgerItem,
  type LedgerStore,
  type LedgerWrite,
  MemoryLedgerStore,
  updateInput,
} from "../../../functions/worker/ledger";

const LEASE_MS = 3000;
const T0 = 1_800_000_000_000;

/**
 * What happens to one write: it applies with its answer lost, fails before applying, passes, or a
 * step runs first (another task's write landing just before it) and may answer in the table's stead.
 */
type Fault = "lost" | "unapplied" | "pass" | ((w: LedgerWrite, table: MemoryLedgerStore) => ConditionalOutcome | undefined);

/** A memory table whose next writes can apply with their answer lost, fail before applying, or race another write. */
class FaultyStore implements LedgerStore {
  readonly table = new MemoryLedgerStore();
  readonly faults: Fault[] = [];
  readonly writes: LedgerWrite[] = [];

  async write(w: LedgerWrite): Promise<ConditionalOutcome> {
    this.writes.push(w);
    const fault = this.faults.shift();
    if (fault === "unapplied") throw Object.assign(new Error("socket hang up"), { name: "TimeoutError" });
    if (typeof fault === "function") {
      const answer = fault(w, this.table);
      if (answer) return answer;
    }
    const out = await this.table.write(w);
    if (fault === "lost") throw Object.assign(new Error("read ECONNRESET"), { name: "TimeoutError" });
    return out;
  }
}

function ledgerOn(store: LedgerStore, clock: { now: number }, holder: string, tokens: string[]): JobLedger {
  return new JobLedger({
    store,
    holder: () => Promise.resolve(holder),
    leaseMs: LEASE_MS,
    now: () => clock.now,
    newToken: () => tokens.shift() ?? "token-exhausted",
    resend: { rounds: 4, baseDelayMs: 0, sleep: async () => undefined },
  });
}

describe("worker: the job ledger (functions/worker/ledger.ts)", () => {
  describe("conditions as data (pure)", () => {
    const running: LedgerItem = {
      job_key: "j",
      state: "running",
      holder: "a",
      lease_token: "t",
      lease_expires_at: 100,
      receipt_handle: "rh",
      runs: 1,
      expires_at: 1,
    };

    it("judges each condition as DynamoDB would: absent only with no item, < only on numbers, and/or", () => {
      expect(evaluateCondition({ op: "absent" }, undefined)).to.equal(true);
      expect(evaluateCondition({ op: "absent" }, running)).to.equal(false);
      expect(evaluateCondition({ op: "eq", attr: "state", value: "running" }, running)).to.equal(true);
      expect(evaluateCondition({ op: "eq", attr: "state", value: "running" }, undefined)).to.equal(false);
      expect(evaluateCondition({ op: "lt", attr: "lease_expires_at", value: 101 }, running)).to.equal(true);
      expect(evaluateCondition({ op: "lt", attr: "lease_expires_at", value: 100 }, running)).to.equal(false);
      expect(evaluateCondition({ op: "lt", attr: "completed_at", value: 1e15 }, running), "a missing attribute is not less than anything").to.equal(false);
      expect(evaluateCondition({ op: "lt", attr: "lease_expires_at", value: 1e15 }, undefined), "no item is not less than anything").to.equal(false);
      expect(
        evaluateCondition({ op: "lt", attr: "holder", value: 2 }, { ...running, holder: "1" }),
        'a string is not compared with a number (JS would say "1" < 2)',
      ).to.equal(false);
      expect(evaluateCondition({ op: "and", of: [{ op: "absent" }, { op: "eq", attr: "state", value: "running" }] }, running)).to.equal(false);
      expect(evaluateCondition({ op: "or", of: [{ op: "absent" }, { op: "eq", attr: "state", value: "running" }] }, running)).to.equal(true);
    });

    it("applies SET and ADD as UpdateItem does, creating a missing item", () => {
      expect(applyWrite(undefined, { jobKey: "j", condition: { op: "absent" }, set: { state: "running" }, add: { runs: 1 } })).to.deep.equal({
        job_key: "j",
        state: "running",
        runs: 1,
      });
      expect(applyWrite(running, { jobKey: "j", condition: { op: "absent" }, set: { holder: "b" }, add: { runs: 1 } })).to.deep.include({
        holder: "b",
        runs: 2,
        receipt_handle: "rh",
      });
    });

    it("sends the take as one UpdateItem whose expression names every attribute by placeholder (state is a reserved word) and asks for ALL_NEW", () => {
      const input = updateInput("worker-jobs", {
        jobKey: "job-1",
        condition: {
          op: "or",
          of: [
            { op: "absent" },
            {
              op: "and",
              of: [
                { op: "eq", attr: "state", value: "running" },
                { op: "lt", attr: "lease_expires_at", value: 5 },
              ],
            },
          ],
        },
        set: { state: "running", lease_token: "tk" },
        add: { runs: 1 },
      });
      expect(input).to.deep.equal({
        TableName: "worker-jobs",
        Key: { job_key: "job-1" },
        UpdateExpression: "SET #state = :v0, #lease_token = :v1 ADD #runs :v2",
        ConditionExpression: "(attribute_not_exists(#job_key) OR (#state = :v3 AND #lease_expires_at < :v4))",
        ExpressionAttributeNames: {
          "#state": "state",
          "#lease_token": "lease_token",
          "#runs": "runs",
          "#job_key": "job_key",
          "#lease_expires_at": "lease_expires_at",
        },
        ExpressionAttributeValues: { ":v0": "running", ":v1": "tk", ":v2": 1, ":v3": "running", ":v4": 5 },
        ReturnValues: "ALL_NEW",
      });
    });
  });

  describe("the UpdateExpression of each kind of write", () => {
    const cases: Array<{ write: string; set: LedgerWrite["set"]; add?: LedgerWrite["add"]; expression: string }> = [
      {
        write: "a renewal: SET only, no ADD clause",
        set: { lease_expires_at: 9, expires_at: 10 },
        expression: "SET #lease_expires_at = :v0, #expires_at = :v1",
      },
      { write: "a counter alone: ADD only, no SET clause", set: {}, add: { runs: 1 }, expression: "ADD #runs :v0" },
    ];
    for (const c of cases) {
      it(`sends ${c.write}`, () => {
        // Act
        const input = updateInput("worker-jobs", { jobKey: "job-1", condition: { op: "eq", attr: "lease_token", value: "tk" }, set: c.set, add: c.add });

        // Assess
        expect(input.UpdateExpression).to.equal(c.expression);
      });
    }
  });

  describe("leases, renewals and completions, fault by fault", () => {
    it("a first take writes the lease with holder, token, expiry, handle, runs 1 and a 14-day TTL", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);

      // Act
      const out = await a.acquire("job-1", "rh-1");

      // Assess
      expect(out).to.deep.equal({ kind: "taken", recovered: false, lease: { jobKey: "job-1", token: "ta", holder: "task-a", receiptHandle: "rh-1", runs: 1 } });
      expect(store.items.get("job-1")).to.deep.equal({
        job_key: "job-1",
        state: "running",
        holder: "task-a",
        lease_token: "ta",
        lease_expires_at: T0 + LEASE_MS,
        receipt_handle: "rh-1",
        runs: 1,
        expires_at: Math.floor(T0 / 1000) + 28 * 24 * 3600,
      });
      expect(LEDGER_RETENTION_SECONDS, "28 days: the DLQ's 14 days, then a redriven copy's new 14 in the work queue").to.equal(2_419_200);
    });

    it("a take whose response was lost is our own lease (recovered), counted as one run", async () => {
      // Prepare: the take applies, its answer is lost, the re-send meets the item it wrote
      const clock = { now: T0 };
      const store = new FaultyStore();
      store.faults.push("lost");
      const a = ledgerOn(store, clock, "task-a", ["ta"]);

      // Act
      const out = await a.acquire("job-1", "rh-1");

      // Assess
      expect(out).to.deep.equal({ kind: "taken", recovered: true, lease: { jobKey: "job-1", token: "ta", holder: "task-a", receiptHandle: "rh-1", runs: 1 } });
      expect(store.table.items.get("job-1")).to.deep.include({ lease_token: "ta", runs: 1 });
      expect(store.writes).to.have.length(2);
    });

    it("a take whose response was lost, met again after another receive recorded its handle, carries that newer handle", async () => {
      // Prepare: the take applies, its answer is lost; B's receive records rh-2 before the re-send
      const clock = { now: T0 };
      const store = new FaultyStore();
      store.faults.push("lost", (_w, table) => void table.items.set("job-1", { ...table.items.get("job-1")!, receipt_handle: "rh-2" }));
      const a = ledgerOn(store, clock, "task-a", ["ta"]);

      // Act
      const out = await a.acquire("job-1", "rh-1");

      // Assess
      expect(out).to.deep.equal({ kind: "taken", recovered: true, lease: { jobKey: "job-1", token: "ta", holder: "task-a", receiptHandle: "rh-2", runs: 1 } });
    });

    it("a take that fails against no item (deleted by its TTL meanwhile) takes again at once", async () => {
      // Prepare
      const store = new FaultyStore();
      store.faults.push(() => ({ applied: false, old: undefined }));
      const a = ledgerOn(store, { now: T0 }, "task-a", ["ta"]);

      // Act
      const out = await a.acquire("job-1", "rh-1");

      // Assess
      expect(out).to.deep.equal({ kind: "taken", recovered: false, lease: { jobKey: "job-1", token: "ta", holder: "task-a", receiptHandle: "rh-1", runs: 1 } });
      expect(store.writes).to.have.length(2);
    });

    it("a lease whose expiry is this very millisecond is still live: the take's condition is a strict <, so the handle is recorded", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      await ledgerOn(store, clock, "task-a", ["ta"]).acquire("job-1", "rh-1");
      clock.now = T0 + LEASE_MS;

      // Act
      const out = await ledgerOn(store, clock, "task-b", ["tb"]).acquire("job-1", "rh-2");

      // Assess
      expect(out).to.deep.equal({ kind: "held", holder: "task-a", leaseExpiresAt: T0 + LEASE_MS, recorded: true });
    });

    it("a live lease elsewhere is not taken: this receive's handle is recorded in it, fenced by that lease's token", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);
      await a.acquire("job-1", "rh-1");
      clock.now += LEASE_MS - 1;

      // Act
      const out = await b.acquire("job-1", "rh-2");

      // Assess
      expect(out).to.deep.equal({ kind: "held", holder: "task-a", leaseExpiresAt: T0 + LEASE_MS, recorded: true });
      expect(store.items.get("job-1")).to.deep.include({ holder: "task-a", lease_token: "ta", receipt_handle: "rh-2", runs: 1 });
    });

    it("the holder's renewal reads back the handle another receive recorded", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      await b.acquire("job-1", "rh-2");
      clock.now += 1000;

      // Act
      const renewed = await a.renew(taken.lease);

      // Assess
      expect(renewed).to.deep.equal({ kind: "renewed", receiptHandle: "rh-2", leaseExpiresAt: T0 + 1000 + LEASE_MS });
      expect(taken.lease.receiptHandle).to.equal("rh-2");
    });

    it("an expired lease is taken over (runs 2); the old holder's renewal and completion are then refused", async () => {
      // Prepare: A's lease lapses (A stalled), B takes the job
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);
      const first = await a.acquire("job-1", "rh-1");
      if (first.kind !== "taken") throw new Error("not taken");
      clock.now += LEASE_MS + 1;
      const second = await b.acquire("job-1", "rh-2");

      // Act
      const renewal = await a.renew(first.lease);
      const completion = await a.complete(first.lease, "succeeded");

      // Assess
      expect(second).to.deep.include({ kind: "taken", recovered: false });
      expect(store.items.get("job-1")).to.deep.include({ holder: "task-b", lease_token: "tb", runs: 2, state: "running" });
      expect(renewal).to.deep.equal({ kind: "lost", holder: "task-b", state: "running" });
      expect(completion).to.deep.equal({ kind: "refused", holder: "task-b", state: "running" });
    });

    it("a renewal that races its own lease's completion reads it as completed, not as a lost lease", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      await a.complete(taken.lease, "succeeded");

      // Act
      const renewal = await a.renew(taken.lease);

      // Assess
      expect(renewal).to.deep.equal({ kind: "completed", receiptHandle: "rh-1" });
    });

    it("a completion whose response was lost is our own (recovered) and answers with the latest handle", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new FaultyStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      await b.acquire("job-1", "rh-2");
      store.faults.push("lost");

      // Act
      const out = await a.complete(taken.lease, "succeeded");

      // Assess
      expect(out).to.deep.equal({ kind: "completed", receiptHandle: "rh-2", recovered: true });
      expect(store.table.items.get("job-1")).to.deep.include({ state: "completed", outcome: "succeeded", completed_at: T0 });
    });

    it("a redelivery of a completed job finds it completed, whoever asks, and writes nothing", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta", "ta2"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      await a.complete(taken.lease, "succeeded");
      const before = { ...store.items.get("job-1") };
      clock.now += 10 * LEASE_MS;

      // Act
      const again = await a.acquire("job-1", "rh-9");

      // Assess
      expect(again).to.deep.equal({ kind: "completed", holder: "task-a", completedAt: T0, outcome: "succeeded" });
      expect(store.items.get("job-1")).to.deep.equal(before);
    });

    it("a release expires the lease at once, so the next receive takes it without waiting it out; a release of a superseded lease changes nothing", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");

      // Act
      const released = await a.release(taken.lease);
      clock.now += 1;
      const next = await b.acquire("job-1", "rh-2");
      const stale = await a.release(taken.lease);

      // Assess
      expect(released).to.equal(true);
      expect(next).to.deep.include({ kind: "taken" });
      expect(stale).to.equal(false);
      expect(store.items.get("job-1")).to.deep.include({ lease_token: "tb", lease_expires_at: T0 + 1 + LEASE_MS });
    });

    it("a renewal whose response was lost is re-sent and applies as the same renewal", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new FaultyStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      clock.now += 1000;
      store.faults.push("lost", "unapplied");

      // Act
      const out = await a.renew(taken.lease);

      // Assess
      expect(out).to.deep.include({ kind: "renewed", leaseExpiresAt: T0 + 1000 + LEASE_MS });
      expect(store.writes).to.have.length(4);
    });

    it("the receive that records its handle as the holder completes finds the job completed (delete unrun)", async () => {
      // Prepare: B's take fails against A's live lease; A completes before B's record lands
      const clock = { now: T0 };
      const table = new MemoryLedgerStore();
      const a = ledgerOn(table, clock, "task-a", ["ta"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      const bWrites: LedgerWrite[] = [];
      const racing: LedgerStore = {
        write: async (w) => {
          bWrites.push(w);
          if (w.set.receipt_handle === "rh-2" && w.add === undefined) await a.complete(taken.lease, "succeeded");
          return table.write(w);
        },
      };
      const b = ledgerOn(racing, clock, "task-b", ["tb"]);

      // Act
      const out = await b.acquire("job-1", "rh-2");

      // Assess
      expect(out).to.deep.equal({ kind: "completed", holder: "task-a", completedAt: T0, outcome: "succeeded" });
      expect(table.items.get("job-1")).to.deep.include({ state: "completed", receipt_handle: "rh-1" });
      expect(
        bWrites.map((w) => (w.add ? "take" : "record")),
        "the failed record answers at once, with no further take",
      ).to.deep.equal(["take", "record"]);
    });

    it("a take whose every answer is lost is released before its error goes up, so the next receive takes the job at once", async () => {
      // Prepare: the first send applies; it and every re-send lose their answers
      const clock = { now: T0 };
      const store = new FaultyStore();
      store.faults.push("lost", "lost", "lost", "lost");
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const b = ledgerOn(store, clock, "task-b", ["tb"]);

      // Act
      const failed = await a.acquire("job-1", "rh-1").then(
        () => "resolved",
        (e: unknown) => (e as Error).message,
      );
      const next = await b.acquire("job-1", "rh-2");

      // Assess
      expect(failed).to.equal("read ECONNRESET");
      expect(next).to.deep.include({ kind: "taken", recovered: false });
      expect(store.table.items.get("job-1")).to.deep.include({ holder: "task-b", lease_token: "tb", runs: 2 });
    });

    for (const runningHere of [false, true]) {
      it(`an unreleased lease of this very task, from a take it gave up on, is ${runningHere ? "left alone while this task runs the job" : "taken over by its next receive, fenced by that lease's token"}`, async () => {
        // Prepare: every answer of the take lost, and the release fails too
        const clock = { now: T0 };
        const store = new FaultyStore();
        store.faults.push("lost", "lost", "lost", "lost", "unapplied");
        const a = ledgerOn(store, clock, "task-a", ["ta", "ta2"]);
        await a.acquire("job-1", "rh-1").catch(() => undefined);
        expect(store.table.items.get("job-1")).to.deep.include({ lease_token: "ta", lease_expires_at: T0 + LEASE_MS });

        // Act: the message shows again, to the same task, while its lease is live
        clock.now += 1000;
        const out = await (runningHere ? a.acquire("job-1", "rh-2", true) : a.acquire("job-1", "rh-2"));

        // Assess
        if (runningHere) {
          expect(out).to.deep.include({ kind: "held", holder: "task-a" });
          expect(store.table.items.get("job-1")).to.deep.include({ lease_token: "ta", receipt_handle: "rh-2", runs: 1 });
        } else {
          expect(out).to.deep.equal({
            kind: "taken",
            recovered: true,
            lease: { jobKey: "job-1", token: "ta2", holder: "task-a", receiptHandle: "rh-2", runs: 2 },
          });
          expect(store.table.items.get("job-1")).to.deep.include({
            lease_token: "ta2",
            receipt_handle: "rh-2",
            runs: 2,
            lease_expires_at: T0 + 1000 + LEASE_MS,
          });
          expect(store.writes.slice(6), "after the failed take, one takeover fenced by the abandoned lease's token").to.deep.equal([
            {
              jobKey: "job-1",
              condition: {
                op: "and",
                of: [
                  { op: "eq", attr: "state", value: "running" },
                  { op: "eq", attr: "lease_token", value: "ta" },
                ],
              },
              set: {
                holder: "task-a",
                lease_token: "ta2",
                lease_expires_at: T0 + 1000 + LEASE_MS,
                receipt_handle: "rh-2",
                expires_at: Math.floor((T0 + 1000) / 1000) + LEDGER_RETENTION_SECONDS,
              },
              add: { runs: 1 },
            },
          ]);
        }
      });
    }

    it("an error that is not a failed condition propagates once the re-sends are spent", async () => {
      // Prepare
      const store = new FaultyStore();
      store.faults.push("unapplied", "unapplied", "unapplied", "unapplied");
      const a = ledgerOn(store, { now: T0 }, "task-a", ["ta"]);

      // Act
      const out = await a.acquire("job-1", "rh-1").then(
        () => "resolved",
        (e: unknown) => (e as Error).message,
      );

      // Assess
      expect(out).to.equal("socket hang up");
      expect(store.table.items.size).to.equal(0);
    });
  });

  describe("takes that race other writes", () => {
    const item = (over: Partial<LedgerItem>): LedgerItem => ({
      job_key: "job-1",
      state: "running",
      holder: "task-c",
      lease_token: "tc",
      lease_expires_at: T0 + LEASE_MS,
      receipt_handle: "rh-c",
      runs: 1,
      expires_at: 1,
      ...over,
    });

    it("a record that fails against no item (deleted meanwhile) takes the job in the next round", async () => {
      // Prepare: A holds the job; B's take fails, and the item is gone before B's record lands
      const store = new FaultyStore();
      const clock = { now: T0 };
      await ledgerOn(store, clock, "task-a", ["ta"]).acquire("job-1", "rh-1");
      store.faults.push("pass", (_w, table) => void table.items.delete("job-1"));

      // Act
      const out = await ledgerOn(store, clock, "task-b", ["tb"]).acquire("job-1", "rh-2");

      // Assess
      expect(out).to.deep.equal({ kind: "taken", recovered: false, lease: { jobKey: "job-1", token: "tb", holder: "task-b", receiptHandle: "rh-2", runs: 1 } });
    });

    it("a record that fails against a lease taken anew (not completed) judges again: the handle goes into the new lease", async () => {
      // Prepare: A holds the job; C's lease replaces it before B's record lands
      const store = new FaultyStore();
      const clock = { now: T0 };
      await ledgerOn(store, clock, "task-a", ["ta"]).acquire("job-1", "rh-1");
      store.faults.push("pass", (_w, table) => void table.items.set("job-1", item({ runs: 2 })));

      // Act
      const out = await ledgerOn(store, clock, "task-b", ["tb"]).acquire("job-1", "rh-2");

      // Assess
      expect(out).to.deep.equal({ kind: "held", holder: "task-c", leaseExpiresAt: T0 + LEASE_MS, recorded: true });
      expect(store.table.items.get("job-1")).to.deep.include({ lease_token: "tc", receipt_handle: "rh-2" });
    });

    const contended: Array<{ title: string; answers: Array<(w: LedgerWrite) => ConditionalOutcome>; out: unknown }> = [
      {
        title: "every take and record meets a lease changed again: after 3 rounds (6 writes) the message is left, naming the last lease met",
        answers: [0, 1, 2, 3, 4, 5].map((i) => () => ({
          applied: false,
          old: { ...item({ lease_token: `t${i}`, holder: `task-${i}`, lease_expires_at: T0 + LEASE_MS + i }) },
        })),
        out: { kind: "held", holder: "task-5", leaseExpiresAt: T0 + LEASE_MS + 5, recorded: false },
      },
      {
        title: "every take fails against no item: after 3 takes the message is left, its holder unknown",
        answers: [0, 1, 2].map(() => () => ({ applied: false, old: undefined })),
        out: { kind: "held", holder: "unknown", leaseExpiresAt: 0, recorded: false },
      },
    ];
    for (const c of contended) {
      it(c.title, async () => {
        // Prepare: any write past the scripted ones would take the job from the empty table
        const store = new FaultyStore();
        store.faults.push(...c.answers);

        // Act
        const out = await ledgerOn(store, { now: T0 }, "task-b", ["tb"]).acquire("job-1", "rh-2");

        // Assess
        expect(out).to.deep.equal(c.out);
        expect(store.writes).to.have.length(c.answers.length);
        expect(store.table.items.size).to.equal(0);
      });
    }

    describe("the takeover of this task's own abandoned lease, raced", () => {
      /** A's take was applied with every answer lost and its release failed: a live lease of task-a under ta. */
      async function abandoned(): Promise<{ store: FaultyStore; a: JobLedger; clock: { now: number } }> {
        const clock = { now: T0 };
        const store = new FaultyStore();
        store.faults.push("lost", "lost", "lost", "lost", "unapplied");
        const a = ledgerOn(store, clock, "task-a", ["ta", "ta2"]);
        await a.acquire("job-1", "rh-1").catch(() => undefined);
        clock.now += 1000;
        store.writes.length = 0;
        return { store, a, clock };
      }

      const cases: Array<{ title: string; race: Fault; out: Acquired; writes: number }> = [
        {
          title: "its answer lost, the re-send meets our new token: taken over (recovered) with the item's lease",
          race: "lost",
          out: { kind: "taken", recovered: true, lease: { jobKey: "job-1", token: "ta2", holder: "task-a", receiptHandle: "rh-2", runs: 2 } },
          writes: 3,
        },
        {
          title: "another task's lease replaced it first: not taken; the handle is recorded in that lease",
          race: (_w, table) =>
            void table.items.set("job-1", {
              job_key: "job-1",
              state: "running",
              holder: "task-b",
              lease_token: "tb",
              lease_expires_at: T0 + 1000 + LEASE_MS,
              receipt_handle: "rh-b",
              runs: 2,
              expires_at: 1,
            }),
          out: { kind: "held", holder: "task-b", leaseExpiresAt: T0 + 1000 + LEASE_MS, recorded: true },
          writes: 4,
        },
        {
          title: "the item was deleted first: the next round takes the job afresh",
          race: (_w, table) => void table.items.delete("job-1"),
          out: { kind: "taken", recovered: false, lease: { jobKey: "job-1", token: "ta2", holder: "task-a", receiptHandle: "rh-2", runs: 1 } },
          writes: 3,
        },
      ];
      for (const c of cases) {
        it(c.title, async () => {
          // Prepare: the take fails against the abandoned lease; the race hits the takeover
          const { store, a } = await abandoned();
          store.faults.push("pass", c.race);

          // Act
          const out = await a.acquire("job-1", "rh-2");

          // Assess
          expect(out).to.deep.equal(c.out);
          expect(store.writes).to.have.length(c.writes);
        });
      }
    });
  });

  describe("renewals and completions against an item that changed", () => {
    const cases: Array<{ title: string; change: (store: MemoryLedgerStore, clock: { now: number }) => Promise<void>; renewed: unknown; completed: unknown }> = [
      {
        title: "another task's lease took the job over and completed it: lost / refused, not our completion",
        change: async (store, clock) => {
          clock.now += LEASE_MS + 1;
          const b = ledgerOn(store, clock, "task-b", ["tb"]);
          const taken = await b.acquire("job-1", "rh-2");
          if (taken.kind !== "taken") throw new Error("not taken");
          await b.complete(taken.lease, "succeeded");
        },
        renewed: { kind: "lost", holder: "task-b", state: "completed" },
        completed: { kind: "refused", holder: "task-b", state: "completed" },
      },
      {
        title: "the item is gone (its TTL passed): lost / refused, naming no holder",
        change: (store) => Promise.resolve(void store.items.delete("job-1")),
        renewed: { kind: "lost", holder: undefined, state: undefined },
        completed: { kind: "refused", holder: undefined, state: undefined },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const clock = { now: T0 };
        const store = new MemoryLedgerStore();
        const a = ledgerOn(store, clock, "task-a", ["ta"]);
        const taken = await a.acquire("job-1", "rh-1");
        if (taken.kind !== "taken") throw new Error("not taken");
        await c.change(store, clock);

        // Act
        const renewed = await a.renew(taken.lease);
        const completed = await a.complete(taken.lease, "succeeded");

        // Assess
        expect(renewed).to.deep.equal(c.renewed);
        expect(completed).to.deep.equal(c.completed);
        expect(taken.lease.receiptHandle).to.equal("rh-1");
      });
    }

    it("a completion answers with the handle another receive recorded since the last renewal, and the lease takes it", async () => {
      // Prepare
      const clock = { now: T0 };
      const store = new MemoryLedgerStore();
      const a = ledgerOn(store, clock, "task-a", ["ta"]);
      const taken = await a.acquire("job-1", "rh-1");
      if (taken.kind !== "taken") throw new Error("not taken");
      await ledgerOn(store, clock, "task-b", ["tb"]).acquire("job-1", "rh-2");

      // Act
      const out = await a.complete(taken.lease, "succeeded");

      // Assess
      expect(out).to.deep.equal({ kind: "completed", receiptHandle: "rh-2", recovered: false });
      expect(taken.lease.receiptHandle).to.equal("rh-2");
    });
  });
});
