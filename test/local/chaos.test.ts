/**
 * `npm run chaos`, small and seeded: the whole platform on moto with 10 % of the code's AWS calls
 * faulted, every consumer fed, every message accounted for by the ledger. Also the CLI's arguments.
 */
import { expect } from "chai";
import * as path from "node:path";
import { REPO_ROOT } from "../../infra/bundle";
import { parseChaosArgs } from "../../local/chaos/cli";
import { summaryDocument } from "../../local/chaos/report";
import { type ChaosResult, runChaos } from "../../local/chaos/run";
import { CONSUMERS } from "../../local/chaos/traffic";

describe("chaos run (small, seeded)", function () {
  this.timeout(240_000);
  let result: ChaosResult;
  let endpointsBefore: Array<string | undefined>;
  let endpointsAfter: Array<string | undefined>;

  before(async () => {
    endpointsBefore = [process.env.AWS_ENDPOINT_URL, process.env.AWS_ENDPOINT_URL_SQS];
    result = await runChaos({
      stack: "dev",
      messages: 160,
      faultRate: 0.1,
      seed: 11,
      speed: 20,
      settleSeconds: 90,
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
    expect(Object.keys(doc.totals)).to.deep.equal(["sent", "processed", "quarantined", "inDlq", "remaining", "lost", "duplicateSideEffects", "leakedLocks"]);
    expect(Object.keys(doc.faults)).to.deep.equal(["injected", "byKind"]);
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

  it("loses, duplicates and leaks nothing", () => {
    const problems = result.byConsumer.filter((c) => c.lost + c.duplicateSideEffects + c.leakedLocks > 0).map((c) => ({ consumer: c.consumer, lost: c.lostExamples, duplicates: c.duplicateSideEffects, leaked: c.details.leaked }));
    expect(problems).to.deep.equal([]);
  });
});

describe("chaos CLI arguments", () => {
  it("defaults to 10,000 messages at 10 % faults", () => {
    expect(parseChaosArgs([])).to.include({ messages: 10_000, faultRate: 0.1, seed: 1, speed: 20, stack: "dev", json: false });
  });
  it("reads every flag", () => {
    expect(parseChaosArgs(["--messages", "2000", "--fault-rate", "0.25", "--seed", "9", "--json", "--settle-seconds", "30", "--claimers", "2"])).to.include({
      messages: 2000,
      faultRate: 0.25,
      seed: 9,
      json: true,
      settleSeconds: 30,
      claimers: 2,
    });
  });
  const bad: Array<[string[], RegExp]> = [
    [["--fault-rate", "1.5"], /--fault-rate 1.5/],
    [["--messages", "ten"], /--messages ten/],
    [["--seed", "1.5"], /--seed 1.5: must be an integer/],
    [["--stack", "../x"], /--stack/],
    [["--nope"], /nope/],
  ];
  for (const [argv, message] of bad) it(`refuses ${argv.join(" ")}`, () => expect(() => parseChaosArgs(argv)).to.throw(message));
});
