/**
 * Where the offline evaluator and the real engine could part: each case is a state the rule tests do
 * not replay (policy-cases.test.ts takes update views without unknowns), judged by both in one
 * analyze run. What the real analyzer showed is kept as the expected verdict (docs/policy-pack.md,
 * "The analyzer tier", lists each difference found and which side was wrong).
 */
import { expect } from "chai";
import { UNKNOWN, evaluatePolicies } from "../../policy/testing/evaluate";
import { updateView } from "../../policy/testing/engine";
import type { RecordedResource } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { U, ingestRecording } from "../policy/helpers/ingest";
import { find, withDeclarations } from "../policy/helpers/recording";
import { type AnalyzerViolation, type Cli, analyze, cliOrSkip, writeJson } from "./helpers/cli";
import { type Batch, type Case, analyzerMessages, analyzerVerdict, batchExport, batches, offlineMessages, offlineVerdict, recordedUrns } from "./helpers/cases";

interface Edge {
  title: string;
  recording: () => RecordedResource[];
  /** What the real analyzer reports: (policy, level, resource name or "<stack>" for the root Stack), and the message's start. */
  real: Array<[string, string, string, RegExp]>;
}

const EDGES: Edge[] = [
  {
    title: "a stack policy reads an output whose stored value is the unknown placeholder",
    recording: () => {
      const rs = ingestRecording();
      find(rs, U.ingest).outputs.visibilityTimeoutSeconds = UNKNOWN.unknownNumberValue;
      return rs;
    },
    // The SDK names the pack in the message, and the engine gives a stack violation without a resource to the root Stack.
    real: [
      [
        "visibility-timeout-covers-consumer",
        "advisory",
        "<stack>",
        /^can't run policy 'visibility-timeout-covers-consumer' from policy pack 'encache-guardrails@v0\.1\.0' during preview: /,
      ],
    ],
  },
  {
    title: "a resource policy reads an input whose stored value is the unknown placeholder",
    recording: () => {
      const rs = ingestRecording();
      find(rs, U.gpu).inputs.associatePublicIpAddress = UNKNOWN.unknownBooleanValue;
      return rs;
    },
    real: [
      ["ec2-instance-hardened", "advisory", "gpu", /^can't run policy 'ec2-instance-hardened' from policy pack 'encache-guardrails@v0\.1\.0' during preview: /],
    ],
  },
];

describe("analyzer tier: edges of the engine model under the real Pulumi CLI", function () {
  this.timeout(120_000);
  let cli: Cli;
  let batch: Batch;
  let real: AnalyzerViolation[] = [];

  before(async function () {
    cli = cliOrSkip(this);
    const cases: Case[] = [];
    for (const e of EDGES) {
      const view = updateView(withDeclarations(e.recording()));
      cases.push({ titles: [e.title], view, violations: await evaluatePolicies(view, policies) });
    }
    // One run for all: the edges are built so that they do not disturb each other (batches checks it).
    const runs = await batches(cases, "edge", EDGES.length);
    expect(runs).to.have.length(1);
    batch = runs[0] as Batch;
    const run = await analyze(cli, writeJson(cli, "edges.json", batchExport(batch)));
    real = recordedUrns(
      run.violations,
      batch.cases.map((c) => c.view),
    );
  });

  EDGES.forEach((e, i) => {
    it(`${e.title}: the real analyzer's verdict, and the offline evaluator's the same`, async () => {
      // Prepare
      const c = batch.cases[i] as Batch["cases"][number];
      const mine = real.filter((v) => v.resourceUrn.includes(`urn:pulumi:${c.stack}::`));
      const nameOf = (v: AnalyzerViolation) =>
        v.resourceUrn.includes("pulumi:pulumi:Stack") ? "<stack>" : (v.resourceUrn.split("::").pop() ?? "").replace(/x\d+$/, "");
      // Assess: what the engine reports…
      expect(mine.map((v) => [v.policyName, v.enforcementLevel, nameOf(v)])).to.deep.equal(e.real.map(([p, l, n]) => [p, l, n]));
      mine.forEach((v, j) => expect(v.message).to.match((e.real[j] as Edge["real"][number])[3]));
      // …and the evaluator's verdict on the same state, messages included.
      const single: Batch = { ...batch, cases: [c], view: c.view };
      const stackViolation = (v: string) => !v.includes("::pulumi:pulumi:Stack::") || v.includes(`urn:pulumi:${c.stack}::`);
      expect(analyzerVerdict(mine)).to.deep.equal((await offlineVerdict({ ...single, rootUrn: mine[0]?.resourceUrn ?? batch.rootUrn })).filter(stackViolation));
      expect(analyzerMessages(mine)).to.deep.equal(
        (await offlineMessages({ ...single, rootUrn: mine[0]?.resourceUrn ?? batch.rootUrn })).filter(stackViolation),
      );
    });
  });
});
