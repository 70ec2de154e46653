/** The chaos run's ledger rules, table by table: each message's outcome, the DLQ rule's fault test, claims and leaked locks. */
import { expect } from "chai";
import type { CrashRecord, FaultRecord } from "../../../local/chaos/fault-proxy";
import {
  claimsPerInstance,
  consumerTotals,
  crashBound,
  receiveKilled,
  everyReceiveFaulted,
  everyReceiveFaultedBeforeDeadLetter,
  failed,
  judge,
  leakedLocks,
  type MessageFacts,
  receiveFaulted,
  sumTotals,
} from "../../../local/chaos/ledger";
import { workerCrashRuns, workerJobCounts, workerJobsEveryRunKilled, type WorkerLedgerItem } from "../../../local/chaos/worker-ledger";
import type { Receive } from "../../../local/chaos/receives";
import { workerEffects } from "../../../local/chaos/observe";
import type { LogLine } from "../../../local/scenarios/logs";

const facts = (over: Partial<MessageFacts>): MessageFacts => ({
  consumer: "worker",
  key: "k",
  wellFormed: true,
  effects: 0,
  duplicates: 0,
  quarantined: false,
  inDlq: false,
  everyReceiveFaulted: false,
  remaining: false,
  ...over,
});

const receive = (over: Partial<Receive>): Receive => ({
  fn: "retraining-launcher",
  messageId: "m1",
  receiptHandle: "rh1",
  body: "{}",
  startMs: 1000,
  endMs: 2000,
  acknowledged: false,
  batchmates: [],
  ...over,
});

const fault = (over: Partial<FaultRecord>): FaultRecord => ({
  seq: 1,
  atMs: 1500,
  caller: "retraining-launcher",
  service: "dynamodb",
  operation: "UpdateItem",
  kind: "throttled",
  receiptHandles: [],
  messageIds: [],
  request: "{}",
  ...over,
});

describe("chaos ledger", () => {
  describe("judge: one message's outcome", () => {
    const cases: Array<[string, Partial<MessageFacts>, { outcome: string; duplicates?: number; reason?: RegExp }]> = [
      ["well-formed with an effect is processed", { effects: 1 }, { outcome: "processed" }],
      ["its extra effects are duplicates", { effects: 3, duplicates: 2 }, { outcome: "processed", duplicates: 2 }],
      [
        "an effect without its companion (metrics) is lost",
        { effects: 1, incomplete: "completed without its JobDuration metric" },
        { outcome: "lost", reason: /JobDuration/ },
      ],
      ["malformed and quarantined is quarantined", { wellFormed: false, quarantined: true }, { outcome: "quarantined" }],
      ["malformed with an effect is lost", { wellFormed: false, effects: 1 }, { outcome: "lost", reason: /malformed message had an effect/ }],
      ["well-formed in a DLQ is lost", { inDlq: true }, { outcome: "lost", reason: /not every receive/ }],
      ["… unless every receive was failed by a fault", { inDlq: true, everyReceiveFaulted: true }, { outcome: "inDlq" }],
      ["malformed in a DLQ without a reason follows the same rule", { wellFormed: false, inDlq: true }, { outcome: "lost" }],
      ["well-formed but quarantined is lost", { quarantined: true }, { outcome: "lost", reason: /well-formed message was quarantined/ }],
      ["still on its queue is remaining", { remaining: true }, { outcome: "remaining" }],
      ["well-formed with nothing anywhere is lost", {}, { outcome: "lost", reason: /no effect/ }],
      ["malformed with nothing anywhere is lost", { wellFormed: false }, { outcome: "lost", reason: /neither quarantined nor discarded/ }],
      ["an effect wins over a copy left in a DLQ", { effects: 1, inDlq: true }, { outcome: "processed" }],
      // A loaded run's claimers fell behind the pool's retention: SQS deleted those adverts for age (moto dead-lettered them: lost).
      ["a pool advert SQS deleted for age is expired", { consumer: "pool-claim", wellFormed: false, expired: true }, { outcome: "expired" }],
      ["… and a discarded one stays quarantined", { consumer: "pool-claim", wellFormed: false, quarantined: true, expired: true }, { outcome: "quarantined" }],
      ["any other message SQS deleted for age is lost", { consumer: "ingest-window", expired: true }, { outcome: "lost", reason: /retention/ }],
    ];
    for (const [name, over, want] of cases) {
      it(name, () => {
        const v = judge(facts(over));
        expect(v.outcome).to.equal(want.outcome);
        expect(v.duplicates).to.equal(want.duplicates ?? 0);
        if (want.reason) expect(v.reason).to.match(want.reason);
      });
    }
  });

  describe("receiveFaulted: was this delivery failed by an injected fault?", () => {
    const cases: Array<[string, Partial<Receive>, Array<Partial<FaultRecord>>, boolean]> = [
      ["a fault naming its receipt handle during the invocation", {}, [{ receiptHandles: ["rh1"], request: '{"ReceiptHandle":"rh1"}' }], true],
      ["a fault naming its key (the model) in the request", {}, [{ request: '{"Key":{"model_name":{"S":"ModelA"}}}' }], true],
      ["a batch-wide fault that names no batchmate", { batchmates: ["m2"] }, [{ operation: "ListTasks", request: '{"cluster":"c"}' }], true],
      ["a fault that names another message of the batch", { batchmates: ["m2"] }, [{ request: '{"clientToken":"m2"}' }], false],
      ["an acknowledged delivery, whatever the faults", { acknowledged: true }, [{ receiptHandles: ["rh1"] }], false],
      ["a fault of another function", {}, [{ caller: "pool-refill" }], false],
      ["a fault outside the invocation", {}, [{ atMs: 2500 }], false],
      ["latency alone fails nothing", {}, [{ kind: "latency" }], false],
    ];
    for (const [name, r, fs, want] of cases) {
      it(`${want ? "yes" : "no"}: ${name}`, () => {
        expect(receiveFaulted(receive(r), fs.map(fault), ["ModelA"])).to.equal(want);
      });
    }
  });

  describe("everyReceiveFaulted: the DLQ rule", () => {
    it("holds when each delivery was failed by a fault", () => {
      const rs = [receive({ receiptHandle: "a", startMs: 0, endMs: 10 }), receive({ receiptHandle: "b", startMs: 100, endMs: 110 })];
      expect(everyReceiveFaulted("m1", rs, [fault({ atMs: 5, receiptHandles: ["a"] }), fault({ atMs: 105, receiptHandles: ["b"] })], [])).to.equal(true);
    });
    it("fails when one delivery failed on its own", () => {
      const rs = [receive({ receiptHandle: "a", startMs: 0, endMs: 10 }), receive({ receiptHandle: "b", startMs: 100, endMs: 110 })];
      expect(everyReceiveFaulted("m1", rs, [fault({ atMs: 5, receiptHandles: ["a"] })], [])).to.equal(false);
    });
    it("counts a ReceiveMessage whose response was lost as a faulted receive nobody saw", () => {
      expect(everyReceiveFaulted("m1", [], [fault({ kind: "response-lost", operation: "ReceiveMessage", messageIds: ["m1"] })], [])).to.equal(true);
    });
    it("proves nothing without any receive", () => {
      expect(everyReceiveFaulted("m1", [], [], [])).to.equal(false);
    });
  });

  describe("everyReceiveFaultedBeforeDeadLetter: a copy its consumer dead-lettered (judged by its source's receives)", () => {
    // The source m1 was received twice; the second (latest) receive failed and dead-lettered it, so it was acknowledged.
    const first = receive({ receiptHandle: "a", startMs: 0, endMs: 10 });
    const last = receive({ receiptHandle: "b", startMs: 100, endMs: 110, acknowledged: true });
    const cases: Array<[string, Receive[], Array<Partial<FaultRecord>>, boolean]> = [
      [
        "every receive faulted, the latest acknowledged by its dead-letter",
        [first, last],
        [
          { atMs: 5, receiptHandles: ["a"] },
          { atMs: 105, receiptHandles: ["b"] },
        ],
        true,
      ],
      [
        "the same, listed latest first",
        [last, first],
        [
          { atMs: 5, receiptHandles: ["a"] },
          { atMs: 105, receiptHandles: ["b"] },
        ],
        true,
      ],
      ["the dead-lettering receive met no fault (the consumer failed on its own)", [first, last], [{ atMs: 5, receiptHandles: ["a"] }], false],
      ["an earlier receive met no fault", [first, last], [{ atMs: 105, receiptHandles: ["b"] }], false],
      [
        "an earlier receive acknowledged (it was processed, yet dead-lettered later)",
        [{ ...first, acknowledged: true }, last],
        [
          { atMs: 5, receiptHandles: ["a"] },
          { atMs: 105, receiptHandles: ["b"] },
        ],
        false,
      ],
      ["no receive of the source at all", [], [], false],
      ["receives of another message only", [{ ...last, messageId: "m2" }], [{ atMs: 105, receiptHandles: ["b"] }], false],
    ];
    for (const [name, rs, fs, want] of cases) {
      it(`${want ? "yes" : "no"}: ${name}`, () => {
        expect(everyReceiveFaultedBeforeDeadLetter("m1", rs, fs.map(fault), [])).to.equal(want);
      });
    }

    it("the copy's own id judged the plain way reads as not faulted: why the lineage is needed", () => {
      expect(
        everyReceiveFaulted("copy-1", [first, last], [fault({ atMs: 5, receiptHandles: ["a"] }), fault({ atMs: 105, receiptHandles: ["b"] })], []),
      ).to.equal(false);
    });
  });

  describe("pool claims and locks", () => {
    it("counts a second holder of one instance in a round as a duplicate, not the same instance in two rounds", () => {
      const out = claimsPerInstance([
        [
          { workflowId: "w1", instanceId: "i-1" },
          { workflowId: "w2", instanceId: "i-1" },
        ],
        [{ workflowId: "w3", instanceId: "i-1" }],
      ]);
      expect(out).to.deep.equal({ claims: { "i-1": 3 }, duplicates: 1 });
    });

    const cases: Array<[string, { owner: string; expiresAtSeconds: number }, Set<string>, boolean]> = [
      ["an unexpired lock of ours with no live claim is leaked", { owner: "wf-1", expiresAtSeconds: 200 }, new Set(), true],
      ["an expired one is not", { owner: "wf-1", expiresAtSeconds: 50 }, new Set(), false],
      ["one still backed by a live claim is not", { owner: "wf-1", expiresAtSeconds: 200 }, new Set(["wf-1/i-1"]), false],
      ["someone else's is not ours to judge", { owner: "refill-lease", expiresAtSeconds: 200 }, new Set(), false],
    ];
    for (const [name, lock, live, leaked] of cases) {
      it(name, () => {
        expect(leakedLocks([{ instanceId: "i-1", ...lock }], 100, (o) => o.startsWith("wf-"), live)).to.have.length(leaked ? 1 : 0);
      });
    }
  });

  describe("totals", () => {
    it("adds each outcome once and fails on anything lost, duplicated or leaked", () => {
      const row = consumerTotals(
        "worker",
        [facts({ effects: 1 }), facts({ wellFormed: false, quarantined: true }), facts({ key: "gone" }), facts({ effects: 2, duplicates: 1 })],
        { leakedLocks: 0 },
      );
      expect(row).to.include({ sent: 4, processed: 2, quarantined: 1, lost: 1, duplicateSideEffects: 1 });
      expect(row.lostExamples).to.deep.equal([{ key: "gone", reason: "no effect, and on no queue" }]);
      const totals = sumTotals([row, consumerTotals("pool-claim", [], { leakedLocks: 2, duplicateSideEffects: 1 })]);
      expect(totals).to.deep.equal({
        sent: 4,
        processed: 2,
        quarantined: 1,
        inDlq: 0,
        remaining: 0,
        expired: 0,
        lost: 1,
        duplicateSideEffects: 2,
        duplicatesFromFaults: 0,
        crashExtras: 0,
        crashBound: 0,
        crashOverBound: 0,
        kills: 0,
        leakedKeyClaims: 0,
        leakedLocks: 2,
        jobsRunMoreThanOnce: 0,
        jobsCompletedMoreThanOnce: 0,
        leakedLeases: 0,
      });
      expect(failed(totals)).to.equal(true);
      expect(failed({ ...totals, lost: 0, duplicateSideEffects: 0, leakedLocks: 0 })).to.equal(false);
    });

    const clean = sumTotals([]);
    const failures: Array<[keyof typeof clean, boolean]> = [
      ["jobsRunMoreThanOnce", true],
      ["jobsCompletedMoreThanOnce", true],
      ["leakedLeases", true],
      ["leakedLocks", true],
      ["crashOverBound", true],
      ["leakedKeyClaims", true],
      ["crashExtras", false],
      ["kills", false],
      ["processed", false],
      ["remaining", false],
    ];
    for (const [field, fails] of failures)
      it(`${fails ? "fails" : "does not fail"} on one ${field}`, () => expect(failed({ ...clean, [field]: 1 })).to.equal(fails));

    it("adds the seeds' totals field by field, the worker's counts with them", () => {
      const a = { ...clean, sent: 10, processed: 9, lost: 1, jobsRunMoreThanOnce: 2 };
      const b = { ...clean, sent: 5, processed: 5, leakedLeases: 1 };

      expect(sumTotals([a, b])).to.deep.equal({ ...clean, sent: 15, processed: 14, lost: 1, jobsRunMoreThanOnce: 2, leakedLeases: 1 });
    });

    it("carries the worker's counts into its row", () => {
      const row = consumerTotals("worker", [facts({ effects: 1 })], { worker: { jobsRunMoreThanOnce: 1, jobsCompletedMoreThanOnce: 2, leakedLeases: 3 } });
      expect(row).to.include({ jobsRunMoreThanOnce: 1, jobsCompletedMoreThanOnce: 2, leakedLeases: 3 });
    });
  });

  describe("workerJobCounts: runs, completions and leases of the worker's jobs", () => {
    const line = (step: string, job: string): { step: string; job_id: string; at?: string } => ({ step, job_id: job });
    const item = (jobKey: string, state: string, runs?: number, holder?: string, leaseExpiresAt?: number): WorkerLedgerItem => ({
      jobKey,
      state,
      ...(runs !== undefined ? { runs } : {}),
      ...(holder ? { holder } : {}),
      ...(leaseExpiresAt !== undefined ? { leaseExpiresAt } : {}),
    });
    const cases: Array<{
      name: string;
      lines: Array<{ step: string; job_id: string; at?: string }>;
      ledger: WorkerLedgerItem[] | undefined;
      accounted: boolean;
      expected: { jobsRunMoreThanOnce: number; jobsCompletedMoreThanOnce: number; leakedLeases: number };
    }> = [
      {
        name: "before the ledger: a job started twice ran twice, succeeded twice completed twice; no table, nothing leaks",
        lines: [
          line("job_started", "a"),
          line("job_succeeded", "a"),
          line("job_started", "a"),
          line("job_succeeded", "a"),
          line("job_started", "b"),
          line("job_succeeded", "b"),
        ],
        ledger: undefined,
        accounted: true,
        expected: { jobsRunMoreThanOnce: 1, jobsCompletedMoreThanOnce: 1, leakedLeases: 0 },
      },
      {
        name: "with leases logged, runs are the leases taken (a start without a lease is not a run)",
        lines: [line("job_started", "a"), line("job-lease-taken", "a"), line("job_started", "a"), line("job-held-elsewhere", "a"), line("job_succeeded", "a")],
        ledger: [item("a", "completed", 1)],
        accounted: true,
        expected: { jobsRunMoreThanOnce: 0, jobsCompletedMoreThanOnce: 0, leakedLeases: 0 },
      },
      {
        name: "a lease taken again after a give-back or a failure (either spelling) is not a job run twice: only runs that reached the end count",
        lines: [line("job_lease_taken", "a"), line("job-lease-taken", "a"), line("job_succeeded", "a")],
        ledger: [item("a", "completed", 2)],
        accounted: true,
        expected: { jobsRunMoreThanOnce: 0, jobsCompletedMoreThanOnce: 0, leakedLeases: 0 },
      },
      {
        name: "a run whose completion a newer holder refused, beside a success, is a job run twice",
        lines: [
          line("job_lease_taken", "a"),
          { step: "job_lease_lost", job_id: "a", at: "completion" },
          line("job_lease_taken", "a"),
          line("job_succeeded", "a"),
        ],
        ledger: [item("a", "completed", 2)],
        accounted: true,
        expected: { jobsRunMoreThanOnce: 1, jobsCompletedMoreThanOnce: 0, leakedLeases: 0 },
      },
      {
        name: "a lease lost mid-run (at the renewal) is an interrupted run, not a second one",
        lines: [{ step: "job_lease_lost", job_id: "a", at: "renewal" }, line("job_succeeded", "a")],
        ledger: [item("a", "completed", 2)],
        accounted: true,
        expected: { jobsRunMoreThanOnce: 0, jobsCompletedMoreThanOnce: 0, leakedLeases: 0 },
      },
      {
        name: "an item still running once every message is accounted for is a leaked lease; a released one (expiry 0) is not",
        lines: [],
        ledger: [item("a", "running", 1, "task-1", Date.now() + 60_000), item("b", "completed", 1), item("c", "running", 1, "task-1", 0)],
        accounted: true,
        expected: { jobsRunMoreThanOnce: 0, jobsCompletedMoreThanOnce: 0, leakedLeases: 1 },
      },
      {
        name: "an item running while messages remain is not judged",
        lines: [],
        ledger: [item("a", "running", 1)],
        accounted: false,
        expected: { jobsRunMoreThanOnce: 0, jobsCompletedMoreThanOnce: 0, leakedLeases: 0 },
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const counts = workerJobCounts(c.lines, c.ledger, c.accounted);
        expect({
          jobsRunMoreThanOnce: counts.jobsRunMoreThanOnce,
          jobsCompletedMoreThanOnce: counts.jobsCompletedMoreThanOnce,
          leakedLeases: counts.leakedLeases,
        }).to.deep.equal(c.expected);
      });
    }

    it("details: the table's presence, leases running, skips and examples", () => {
      const counts = workerJobCounts(
        [
          line("job-lease-taken", "a"),
          line("job_lease_taken", "a"),
          line("job_succeeded", "a"),
          line("job_succeeded", "a"),
          line("job-already-completed", "a"),
          line("job-held-elsewhere", "b"),
        ],
        [item("a", "completed", 2), item("b", "running", 1, "task-2")],
        true,
      );
      expect(counts.details).to.deep.equal({
        ledgerTable: "present",
        leasesRunning: 1,
        // The ledger's runs (a: 2, b: 1) when they are more than the logs show.
        leasesTaken: 3,
        alreadyCompletedSkips: 1,
        heldElsewhereSkips: 1,
        runTwiceExamples: [{ job: "a", runs: 2 }],
        leakedExamples: [{ job: "b", holder: "task-2" }],
      });
      expect(workerJobCounts([], undefined, true).details.ledgerTable).to.equal("absent");
    });
  });
  describe("crashes (--crash-rate): extra effects by cause, against each part's bound", () => {
    const kill = (over: Partial<CrashRecord>): CrashRecord => ({
      kind: "crash",
      seq: 1,
      atMs: 1500,
      caller: "retraining-launcher",
      process: "sandbox s1",
      point: "dynamodb UpdateItem",
      callSeq: 10,
      work: ["m1"],
      ...over,
    });

    const bounds: Array<[Parameters<typeof crashBound>[0], { invocations: number; processes: number }, number]> = [
      ["ingest-window", { invocations: 2, processes: 0 }, 0],
      ["ingest-window", { invocations: 0, processes: 1 }, 1],
      ["ingest-dlq", { invocations: 1, processes: 2 }, 2],
      ["fleet-termination", { invocations: 1, processes: 0 }, 2],
      ["fleet-termination", { invocations: 3, processes: 0 }, 6],
      ["retraining-launcher", { invocations: 4, processes: 0 }, 0],
      ["pool-refill", { invocations: 1, processes: 0 }, 0],
      ["worker", { invocations: 0, processes: 3 }, 0],
    ];
    for (const [consumer, hits, want] of bounds)
      it(`${consumer}: ${hits.invocations} invocation(s) and ${hits.processes} process(es) killed allow ${want} extra effect(s)`, () =>
        expect(crashBound(consumer, hits)).to.equal(want));

    it("counts a message's extras as the crash's when a kill held its work, as a fault's when a fault named it, else as neither's", () => {
      // Prepare
      const rows = [
        facts({ consumer: "fleet-termination", key: "crashed", effects: 1, duplicates: 2, crashHits: { invocations: 1, processes: 0 } }),
        facts({ consumer: "fleet-termination", key: "crashed-more", effects: 1, duplicates: 3, crashHits: { invocations: 1, processes: 0 } }),
        facts({ consumer: "fleet-termination", key: "faulted", effects: 1, duplicates: 1, faultTouched: true }),
        facts({ consumer: "fleet-termination", key: "neither", effects: 1, duplicates: 1 }),
      ];

      // Act
      const row = consumerTotals("fleet-termination", rows, { kills: 2 });

      // Assess
      expect(row).to.include({ crashExtras: 5, crashBound: 4, crashOverBound: 1, duplicateSideEffects: 2, duplicatesFromFaults: 1, kills: 2 });
      expect(row.details.crashOverExamples).to.deep.equal([{ key: "crashed-more", extras: 3, bound: 2 }]);
      expect(failed(sumTotals([row]))).to.equal(true);
      expect(failed(sumTotals([consumerTotals("fleet-termination", [rows[0] as MessageFacts])]))).to.equal(false);
    });

    const killedReceives: Array<[string, Partial<Receive>, Array<Partial<CrashRecord>>, boolean]> = [
      ["its own invocation was killed with it in the batch", {}, [{}], true],
      ["a kill of another message's invocation", {}, [{ work: ["m2"] }], false],
      ["a kill of another function", {}, [{ caller: "pool-refill" }], false],
      ["an acknowledged delivery, whatever the kills", { acknowledged: true }, [{}], false],
      [
        "an earlier delivery killed, this one before that invocation's deadline (a claim it left looks alive)",
        { startMs: 5000, endMs: 6000 },
        [{ untilMs: 20_000 }],
        true,
      ],
      ["an earlier delivery killed, this one after that deadline", { startMs: 30_000, endMs: 31_000 }, [{ untilMs: 20_000 }], false],
      ["a kill after this delivery ended", {}, [{ atMs: 9000, untilMs: 40_000 }], false],
    ];
    for (const [name, r, ks, want] of killedReceives)
      it(`receiveKilled ${want ? "yes" : "no"}: ${name}`, () => {
        expect(receiveKilled(receive(r), ks.map(kill))).to.equal(want);
        expect(receiveFaulted(receive(r), [], [], ks.map(kill))).to.equal(want);
      });

    it("a report a kill left unfinished, in the DLQ with every receive failed, is in the DLQ; without a kill it is lost", () => {
      const incomplete = { incomplete: "completed without its JobDuration metric", effects: 1, inDlq: true, everyReceiveFaulted: true };
      expect(judge(facts({ ...incomplete, crashHits: { invocations: 1, processes: 0 } })).outcome).to.equal("inDlq");
      expect(judge(facts(incomplete)).outcome).to.equal("lost");
      expect(judge(facts({ ...incomplete, everyReceiveFaulted: false, crashHits: { invocations: 1, processes: 0 } })).outcome).to.equal("lost");
    });

    const runs: Array<{
      name: string;
      starts: number;
      interruptions: number;
      killed: number;
      want: { crashExtras: number; crashBound: number; crashOverBound: number };
    }> = [
      {
        name: "a job whose holder was killed runs once more: within the bound",
        starts: 2,
        interruptions: 0,
        killed: 1,
        want: { crashExtras: 1, crashBound: 1, crashOverBound: 0 },
      },
      {
        name: "a killed holder and a give-back: two more runs, one each",
        starts: 3,
        interruptions: 1,
        killed: 1,
        want: { crashExtras: 1, crashBound: 1, crashOverBound: 0 },
      },
      {
        name: "two more runs after one kill: one beyond the bound",
        starts: 3,
        interruptions: 0,
        killed: 1,
        want: { crashExtras: 2, crashBound: 1, crashOverBound: 1 },
      },
      {
        name: "a killed holder before its run started: no extra run",
        starts: 1,
        interruptions: 0,
        killed: 1,
        want: { crashExtras: 0, crashBound: 1, crashOverBound: 0 },
      },
    ];
    for (const c of runs)
      it(`workerCrashRuns: ${c.name}`, () => {
        const out = workerCrashRuns(new Map([["j", c.starts]]), new Map([["j", c.interruptions]]), new Map([["j", c.killed]]));
        expect({ crashExtras: out.crashExtras, crashBound: out.crashBound, crashOverBound: out.crashOverBound }).to.deep.equal(c.want);
      });

    it("a killed holder's lease is no leak once lapsed; unexpired at the end, or of a holder not killed, it is", () => {
      const now = 1_000_000;
      const ledger: WorkerLedgerItem[] = [
        { jobKey: "lapsed", state: "running", holder: "vm:1", leaseExpiresAt: now - 1 },
        { jobKey: "held", state: "running", holder: "vm:1", leaseExpiresAt: now + 60_000 },
        { jobKey: "alive", state: "running", holder: "vm:2", leaseExpiresAt: now - 1 },
      ];
      const counts = workerJobCounts([], ledger, true, { holders: new Set(["vm:1"]), nowMs: now });
      expect(counts.details.leakedExamples.map((l) => l.job)).to.deep.equal(["held", "alive"]);
    });

    it("a worker job the ledger shows completed, its task killed before its job_succeeded line, is completed once (not lost)", () => {
      const lines = [{ step: "job_succeeded", job_id: "a" }] as LogLine[];
      const e = workerEffects(lines, [
        { jobKey: "a", state: "completed" },
        { jobKey: "b", state: "completed" },
        { jobKey: "c", state: "running" },
      ]);
      expect([...e.effects]).to.deep.equal([
        ["a", 1],
        ["b", 1],
      ]);
      expect(e.details.completedWithoutSuccessLine).to.equal(1);
    });

    it("a worker job whose every lease ended in a kill is explained in the DLQ; one run that was not killed is not", () => {
      const lines = [
        { step: "job_lease_taken", job_id: "a" },
        { step: "job_lease_taken", job_id: "a" },
        { step: "job_lease_taken", job_id: "b" },
        { step: "job_lease_taken", job_id: "b" },
      ];
      expect([
        ...workerJobsEveryRunKilled(
          lines,
          new Map([
            ["a", 2],
            ["b", 1],
          ]),
        ),
      ]).to.deep.equal(["a"]);
    });
  });
});
