/**
 * `npm run chaos`, small and seeded: the whole platform on moto with 10 % of the code's AWS calls
 * faulted and 10 % of its units of work (invocations, jobs, windows) killed mid-work (a Lambda sandbox, a worker task,
 * the GPU gateway), every consumer fed, every message accounted for by the ledger. Also the CLI's arguments.
 */
import { expect } from "chai";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import { parseChaosArgs, parseSeeds } from "../../../local/chaos/cli";
import { anyFailed, renderSeeds, runsDocument, type SeedRun, seedRun, summaryDocument } from "../../../local/chaos/report";
import { advertsSettled, type ChaosResult, LONG_JOB_TYPE, longJobSizing, runChaos, withLongJobType } from "../../../local/chaos/run";
import { type Consumer, CONSUMERS, generateTraffic, longJobs } from "../../../local/chaos/traffic";

describe("chaos run (small, seeded)", function () {
  this.timeout(300_000);
  let result: ChaosResult;
  let endpointsBefore: Array<string | undefined>;
  let endpointsAfter: Array<string | undefined>;

  before(async () => {
    endpointsBefore = [process.env.AWS_ENDPOINT_URL, process.env.AWS_ENDPOINT_URL_SQS];
    result = await runChaos({
      stack: "dev",
      messages: 160,
      faultRate: 0.1,
      crashRate: 0.1,
      seed: 11,
      speed: 20,
      // A cap, not a wait: killed batches come back only after their visibility timeout.
      settleSeconds: 180,
      claimers: 3,
      // Its own directory: never `npm start`'s .local/dev, nor an `npm run chaos` running beside it.
      workDir: path.join(REPO_ROOT, ".local", "chaos-test-dev"),
      note: () => undefined,
    });
    endpointsAfter = [process.env.AWS_ENDPOINT_URL, process.env.AWS_ENDPOINT_URL_SQS];
  });

  it("gives this process back its AWS endpoints when it stops (the rest of the test run keeps its moto)", () => {
    expect(endpointsAfter).to.deep.equal(endpointsBefore);
  });

  it("prints exactly the document's shape with --json", () => {
    const doc = summaryDocument(result);
    expect(Object.keys(doc)).to.deep.equal(["totals", "byConsumer", "faults"]);
    expect(Object.keys(doc.totals)).to.deep.equal([
      "sent",
      "processed",
      "quarantined",
      "inDlq",
      "remaining",
      "expired",
      "lost",
      "duplicateSideEffects",
      "duplicatesFromFaults",
      "crashExtras",
      "crashBound",
      "crashOverBound",
      "kills",
      "leakedKeyClaims",
      "leakedLocks",
      "jobsRunMoreThanOnce",
      "jobsCompletedMoreThanOnce",
      "leakedLeases",
    ]);
    expect(Object.keys(doc.faults)).to.deep.equal(["injected", "byKind", "kills"]);
    const runs = runsDocument([seedRun(11, result)]);
    expect(Object.keys(runs)).to.deep.equal(["totals", "faults", "seeds"]);
    expect(runs.totals).to.deep.equal(result.totals);
    expect(Object.keys(runs.seeds[0] ?? {})).to.deep.equal(["seed", "wallMs", "settled", "totals", "byConsumer", "faults"]);
  });

  it("runs long worker jobs that outlive their first visibility: at least one, each four heartbeats, and each completed", () => {
    const worker = result.byConsumer.find((c) => c.consumer === "worker");
    const long = worker?.details.longJobs as { type: string; sent: number; seconds: number; heartbeatSeconds: number };
    expect(long.type).to.equal(LONG_JOB_TYPE);
    expect(long.sent).to.be.greaterThan(0);
    expect(long.seconds).to.equal(4 * long.heartbeatSeconds);
  });

  it("drives every consumer, and accounts for every message once", () => {
    const { totals } = result;
    expect(result.byConsumer.map((c) => c.consumer)).to.deep.equal([...CONSUMERS]);
    expect(totals.sent).to.equal(160);
    expect(totals.processed + totals.quarantined + totals.inDlq + totals.remaining + totals.lost).to.equal(totals.sent);
    for (const c of result.byConsumer) expect(c.sent, c.consumer).to.be.greaterThan(0);
  });

  it("injects every kind of fault, and logs each with its caller and operation", () => {
    expect(result.faults.injected).to.be.greaterThan(0);
    expect(Object.values(result.faults.byKind).reduce((a, b) => a + b, 0)).to.equal(result.faults.injected);
    expect(result.faultLog.every((f) => f.caller !== "" && f.operation !== "" && f.service !== "unknown")).to.equal(true);
  });

  it("kills processes mid-work after calls that took effect, and journals each kill with its process, point and time", () => {
    const kills = result.crashLog;
    expect(kills.length).to.be.greaterThan(0);
    expect(kills.every((k) => k.kind === "crash" && k.caller !== "" && /^(sandbox|pid) /.test(k.process) && / \w+$/.test(k.point) && k.atMs > 0)).to.equal(
      true,
    );
    expect(kills.some((k) => k.point.endsWith(" ReceiveMessage"))).to.equal(false);
    expect(Object.values(result.faults.kills ?? {}).reduce((a, b) => a + b, 0)).to.equal(kills.length);
    expect(result.totals.kills).to.be.greaterThan(0);
  });

  it("loses, duplicates and leaks nothing; what the kills caused stays within each part's bound", () => {
    const problems = result.byConsumer
      .filter(
        (c) =>
          c.lost +
            c.duplicateSideEffects +
            c.crashOverBound +
            c.leakedLocks +
            c.jobsRunMoreThanOnce +
            c.jobsCompletedMoreThanOnce +
            c.leakedLeases +
            c.leakedKeyClaims >
          0,
      )
      .map((c) => ({
        consumer: c.consumer,
        lost: c.lostExamples,
        duplicates: c.duplicateSideEffects,
        overBound: c.crashOverBound,
        leakedKeyClaims: c.leakedKeyClaims,
        leaked: c.details.leaked,
        runTwice: c.details.runTwiceExamples,
        leakedLeases: c.details.leakedExamples,
      }));
    expect(problems).to.deep.equal([]);
    expect(result.settled, `drained within the settle time; remaining ${result.totals.remaining}`).to.equal(true);
    expect(anyFailed([seedRun(11, result)])).to.equal(false);
  });
});

describe("chaos CLI arguments", () => {
  it("defaults to 10,000 messages at 10 % faults, no crashes, seed 1 alone, 3 worker tasks", () => {
    expect(parseChaosArgs([])).to.deep.include({
      messages: 10_000,
      faultRate: 0.1,
      crashRate: 0,
      seed: 1,
      seeds: [1],
      speed: 20,
      stack: "dev",
      workerTasks: 3,
      json: false,
    });
  });
  const seeds: Array<[string[], number[]]> = [
    [
      ["--seeds", "1,2,3,11"],
      [1, 2, 3, 11],
    ],
    [
      ["--seeds", "3"],
      [1, 2, 3],
    ],
    [
      ["--seed", "7", "--seeds", "2"],
      [7, 8],
    ],
    [["--seed", "7"], [7]],
    [
      ["--seeds", "0,5"],
      [0, 5],
    ],
  ];
  for (const [argv, expected] of seeds)
    it(`${argv.join(" ")} runs seeds ${expected.join(", ")}`, () => expect((parseChaosArgs(argv) as { seeds: number[] }).seeds).to.deep.equal(expected));
  const badSeeds: Array<[string, RegExp]> = [
    ["1,1", /listed twice/],
    ["1,x", /"x" must be an integer/],
    ["0", /"0" must be an integer from 1/],
    ["1,", /"" must be an integer/],
    ["101", /from 1 to 100/],
  ];
  for (const [raw, message] of badSeeds) it(`refuses --seeds ${raw}`, () => expect(() => parseSeeds(raw, 1)).to.throw(message));
  it("reads every flag", () => {
    expect(
      parseChaosArgs([
        "--messages",
        "2000",
        "--fault-rate",
        "0.25",
        "--crash-rate",
        "0.02",
        "--seed",
        "9",
        "--json",
        "--settle-seconds",
        "30",
        "--claimers",
        "2",
      ]),
    ).to.include({
      messages: 2000,
      faultRate: 0.25,
      crashRate: 0.02,
      seed: 9,
      json: true,
      settleSeconds: 30,
      claimers: 2,
    });
  });
  const settles: Array<{ argv: string[]; seconds: number }> = [
    { argv: ["--messages", "10000", "--fault-rate", "0"], seconds: 1120 },
    { argv: ["--messages", "10000", "--fault-rate", "0.1"], seconds: 1568 },
    { argv: ["--messages", "10000", "--fault-rate", "0.3"], seconds: 2464 },
    { argv: ["--messages", "10000", "--fault-rate", "0.3", "--settle-seconds", "600"], seconds: 600 },
  ];
  for (const { argv, seconds } of settles)
    it(`waits at most ${seconds} s to drain for ${argv.join(" ")}`, () => expect(parseChaosArgs(argv)).to.include({ settleSeconds: seconds }));
  const bad: Array<[string[], RegExp]> = [
    [["--fault-rate", "1.5"], /--fault-rate 1.5/],
    [["--crash-rate", "2"], /--crash-rate 2: must be a number from 0 to 1/],
    [["--messages", "ten"], /--messages ten/],
    [["--seed", "1.5"], /--seed 1.5: must be an integer/],
    [["--stack", "../x"], /--stack/],
    [["--nope"], /nope/],
  ];
  for (const [argv, message] of bad) it(`refuses ${argv.join(" ")}`, () => expect(() => parseChaosArgs(argv)).to.throw(message));
});

describe("chaos runs over several seeds (pure)", () => {
  const zero = {
    sent: 0,
    processed: 0,
    quarantined: 0,
    inDlq: 0,
    remaining: 0,
    lost: 0,
    duplicateSideEffects: 0,
    duplicatesFromFaults: 0,
    crashExtras: 0,
    crashBound: 0,
    crashOverBound: 0,
    kills: 0,
    leakedKeyClaims: 0,
    leakedLocks: 0,
    jobsRunMoreThanOnce: 0,
    jobsCompletedMoreThanOnce: 0,
    leakedLeases: 0,
    expired: 0,
  };
  const byKind = { "not-applied": 1, "response-lost": 0, throttled: 2, "server-error": 0, latency: 0 };
  const run = (seed: number, totals: Partial<typeof zero>): SeedRun => ({
    seed,
    wallMs: 1000 * seed,
    settled: true,
    totals: { ...zero, ...totals },
    byConsumer: [],
    faults: { injected: 3, byKind },
  });

  it("adds the seeds' totals and faults; fails when any seed does, the worker's counts included", () => {
    // Prepare
    const clean = run(1, { sent: 10, processed: 10 });
    const ranTwice = run(2, { sent: 10, processed: 10, jobsRunMoreThanOnce: 1 });

    // Act
    const doc = runsDocument([clean, ranTwice]);
    const table = renderSeeds([clean, ranTwice], { messages: 10, faultRate: 0.3, speed: 20 });

    // Assess
    expect(doc.totals).to.deep.equal({ ...zero, sent: 20, processed: 20, jobsRunMoreThanOnce: 1 });
    expect(doc.faults).to.deep.equal({ injected: 6, byKind: { "not-applied": 2, "response-lost": 0, throttled: 4, "server-error": 0, latency: 0 }, kills: {} });
    expect(doc.seeds.map((s) => s.seed)).to.deep.equal([1, 2]);
    expect({ both: anyFailed([clean, ranTwice]), clean: anyFailed([clean]) }).to.deep.equal({ both: true, clean: false });
    expect(table.split("\n").map((l) => l.split(/\s+/)[0])).to.deep.equal(["chaos", "seed", "1", "2", "total", "FAILED:"]);
  });

  it("a seed whose queues did not drain in time fails the run as inconclusive, even with nothing lost", () => {
    // Prepare: seed 11 left 334 worker messages unjudged when its settle time ran out.
    const clean = run(1, { sent: 10, processed: 10 });
    const undrained = { ...run(11, { sent: 10, processed: 6, remaining: 4 }), settled: false };

    // Act
    const table = renderSeeds([clean, undrained], { messages: 10, faultRate: 0.3, speed: 20 });

    // Assess
    expect({ both: anyFailed([clean, undrained]), clean: anyFailed([clean]) }).to.deep.equal({ both: true, clean: false });
    expect(table.split("\n").at(-1)).to.match(/^INCONCLUSIVE: .* 4 message\(s\) were never judged \(exit 1; raise --settle-seconds/);
  });
});

describe("chaos long worker jobs (pure)", () => {
  const sizing: Array<[number, number, { heartbeatSeconds: number; seconds: number }]> = [
    [60, 20, { heartbeatSeconds: 3, seconds: 12 }],
    [60, 60, { heartbeatSeconds: 1, seconds: 4 }],
    [60, 7, { heartbeatSeconds: 9, seconds: 36 }],
    [10, 20, { heartbeatSeconds: 1, seconds: 4 }],
  ];
  for (const [heartbeat, speed, expected] of sizing) {
    it(`a ${heartbeat} s heartbeat at speed ${speed}: ${expected.heartbeatSeconds} s real, long jobs of ${expected.seconds} s (at least three heartbeats)`, () => {
      const s = longJobSizing(heartbeat, speed);
      expect(s).to.deep.equal(expected);
      expect(s.seconds).to.be.at.least(3 * s.heartbeatSeconds);
    });
  }

  const shares: Array<[number, number]> = [
    [0, 0],
    [1, 1],
    [19, 1],
    [21, 2],
    [2755, 138],
  ];
  for (const [wellFormed, long] of shares)
    it(`${wellFormed} well-formed worker jobs → ${long} long (5 %, rounded up, at least one)`, () => expect(longJobs(wellFormed)).to.equal(long));

  it("the traffic carries that many long jobs, of the long type, estimating 1 s; none without a long type", () => {
    const ctx = {
      seed: 3,
      queues: Object.fromEntries(CONSUMERS.map((c) => [c, c])) as Record<Consumer, string>,
      poolClass: "p",
      workerJobType: "payload-digest",
      nowMs: 0,
    };
    const withLong = generateTraffic(2000, { ...ctx, longJobType: LONG_JOB_TYPE });
    const worker = withLong.filter((m) => m.consumer === "worker");
    const long = worker.filter((m) => m.long);
    expect(long.length).to.equal(longJobs(worker.filter((m) => m.wellFormed).length));
    expect(long.length / worker.filter((m) => m.wellFormed).length).to.be.at.least(0.05);
    expect(long.every((m) => m.wellFormed && (JSON.parse(m.body) as { type: string; estimated_seconds: number }).type === LONG_JOB_TYPE)).to.equal(true);
    expect(long.every((m) => (JSON.parse(m.body) as { estimated_seconds: number }).estimated_seconds === 1)).to.equal(true);
    expect(generateTraffic(2000, ctx).filter((m) => m.long)).to.have.length(0);
  });

  it("adds the long type to the stack's allow-list as a fixed-argument sleep, keeping the stack's own types", () => {
    const env = withLongJobType({ WORKER_EXECUTABLES: JSON.stringify({ "payload-digest": { command: "/usr/bin/sha256sum", args: ["-"] } }) }, 12);
    expect(JSON.parse(env.WORKER_EXECUTABLES ?? "{}")).to.deep.equal({
      "payload-digest": { command: "/usr/bin/sha256sum", args: ["-"] },
      [LONG_JOB_TYPE]: { command: "/bin/sleep", args: ["12"] },
    });
  });
});

describe("chaos run: when the run's malformed adverts are settled (pure)", () => {
  const cases = [
    { title: "none were sent", a: { sent: 0, inPool: 5, discarded: 0, parkedInDlq: 0 }, settled: true },
    { title: "the pool is empty", a: { sent: 10, inPool: 0, discarded: 3, parkedInDlq: 0 }, settled: true },
    { title: "every one discarded, well-formed adverts still waiting", a: { sent: 10, inPool: 4, discarded: 10, parkedInDlq: 0 }, settled: true },
    { title: "some discarded, the rest parked in the class's DLQ", a: { sent: 10, inPool: 4, discarded: 6, parkedInDlq: 4 }, settled: true },
    { title: "one neither discarded nor parked", a: { sent: 10, inPool: 4, discarded: 6, parkedInDlq: 3 }, settled: false },
    { title: "the last one deleted by SQS for age", a: { sent: 10, inPool: 4, discarded: 6, parkedInDlq: 3, expired: 1 }, settled: true },
  ];
  for (const c of cases) {
    it(`${c.title}: ${c.settled ? "settled" : "not yet"}`, () => {
      // Prepare / Act
      const settled = advertsSettled(c.a);
      // Assess
      expect(settled).to.equal(c.settled);
    });
  }
});
