/**
 * Every scenario at its small size, through the real CLI (`npm start` with --json and --report),
 * which starts its own moto, deploys the program into it and runs the platform. One run, many checks.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { nodeNote } from "../../../local/cli";
import type { AlarmReport } from "../../../local/observe/alarm-watch";
import type { ScenarioSummary } from "../../../local/show/view";

const ROOT = path.resolve(__dirname, "../../..");
const REPORT = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "local-run-")), "report.html");

interface RunDocument {
  stack: string;
  ok: boolean;
  scenarios: ScenarioSummary[];
  totals: { lost: number };
  alarms: AlarmReport;
}

interface Run {
  code: number | null;
  doc: RunDocument | undefined;
  /** The last 20,000 characters of stderr (the live view's lines), for failure messages. */
  stderr: string;
  /** Every stderr line that names the Node version. */
  nodeLines: string[];
}

let run: Promise<Run> | undefined;

function runAll(): Promise<Run> {
  run ??= new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "local/cli.ts", "--size", "small", "--json", "--speed", "60", "--report", REPORT], {
      cwd: ROOT,
      env: { ...process.env, AWS_ENDPOINT_URL: "", AWS_ENDPOINT_URL_SQS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let partial = "";
    const nodeLines: string[] = [];
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-20_000);
      const lines = (partial + c.toString()).split("\n");
      partial = lines.pop() ?? "";
      nodeLines.push(...lines.filter((l) => /\bnode\b|NodeVersion/i.test(l)));
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      let doc: RunDocument | undefined;
      try {
        doc = JSON.parse(stdout) as RunDocument;
      } catch {
        doc = undefined;
      }
      resolve({ code, doc, stderr, nodeLines });
    });
  });
  return run;
}

async function scenario(name: string): Promise<ScenarioSummary> {
  const { doc, stderr } = await runAll();
  expect(doc, `no JSON document; stderr:\n${stderr}`).to.not.equal(undefined);
  const row = doc?.scenarios.find((s) => s.scenario === name);
  expect(row, `scenario ${name} missing from the run`).to.not.equal(undefined);
  return row as ScenarioSummary;
}

describe("local run: every scenario, small size, through npm start --json", function () {
  this.timeout(600_000);

  it("exits 0 with every message accounted for", async () => {
    const { code, doc, stderr } = await runAll();
    expect(doc?.totals.lost, stderr).to.equal(0);
    expect(doc?.ok, JSON.stringify(doc?.scenarios.map((s) => [s.scenario, s.failures]))).to.equal(true);
    expect(code).to.equal(0);
  });

  it("says which Node it runs on, and prints no Node-version warning (the AWS SDK's below Node 22 among them)", async () => {
    const { nodeLines } = await runAll();
    expect(nodeLines, "on Node < 22 the AWS SDK warns: run the tests with `npm test`, which runs them on Node 22").to.deep.equal([nodeNote(process.version)]);
  });

  it("ingest-gpu-outage: the DLQ consumer starts the GPU and every segment reaches it; the malformed one is quarantined", async () => {
    const s = await scenario("ingest-gpu-outage");
    expect(s.failures).to.deep.equal([]);
    expect(s).to.include({ sent: 13, processed: 12, quarantined: 1, inDlq: 0, remaining: 0, lost: 0 });
    expect(s.details.gpuStarts).to.be.at.least(1);
    expect(s.timings["GPU up → backlog drained"]?.wallMs).to.be.a("number");
  });

  it("retraining: every trigger launches once, never more than the cap at a time, the rest deferred", async () => {
    const s = await scenario("retraining");
    expect(s.failures).to.deep.equal([]);
    expect(s).to.include({ sent: 7, processed: 6, quarantined: 1, inDlq: 0, remaining: 0, lost: 0 });
    expect(s.details.peakRunning).to.be.at.most(s.details.cap as number);
    expect(s.details.deferrals).to.be.above(0);
    expect(s.details).to.include({ tasksFailed: 1, tasksSucceeded: 5 });
  });

  it("fleet: jobs complete once, duplicates are recognised, housekeeping removes the orphan and the stale parameter", async () => {
    const s = await scenario("fleet");
    expect(s.failures).to.deep.equal([]);
    expect(s).to.include({ sent: 6 + 2 + 1 + 1, processed: 6 + 2 + 1, quarantined: 1, inDlq: 0, remaining: 0, lost: 0 });
    expect(s.details.duplicatesRecognised).to.equal(2);
  });

  it("worker: long jobs run under protection, SIGTERM hands unfinished work back, the malformed job is quarantined", async () => {
    const s = await scenario("worker");
    expect(s.failures).to.deep.equal([]);
    expect(s).to.include({ sent: 9, processed: 8, quarantined: 1, inDlq: 0, remaining: 0, lost: 0 });
  });

  it("reports the alarms the queue depths would have fired, notifying the alert topic in moto, without failing the run", async () => {
    const { doc } = await runAll();
    // ingest-gpu-outage leaves its malformed segment on the quarantine queue, on purpose.
    const quarantine = doc?.alarms.alarms.find((a) => a.logicalName === "ingest-quarantine-depth");
    expect(quarantine?.firings.length, JSON.stringify(doc?.alarms)).to.be.at.least(1);
    expect(quarantine?.firings[0]?.value).to.be.at.least(1);
    expect(quarantine?.notified).to.have.length(1);
    // Queue-depth alarms are all evaluated; the one on an EMF metric (EC2 capacity on a GPU start) is listed as not evaluated, with why.
    expect(doc?.alarms.alarms.filter((a) => a.unsupported !== undefined).map((a) => [a.logicalName, a.unsupported])).to.deep.equal([
      [
        "ingest-gpu-capacity",
        "watches Encache/Ingest GpuStartInsufficientCapacity; the run samples only AWS/SQS ApproximateNumberOfMessagesVisible, AWS/AutoScaling GroupDesiredCapacity, AWS/AutoScaling GroupInServiceInstances",
      ],
    ]);
    expect(doc?.alarms.published).to.be.at.least(1);
    expect(doc?.ok).to.equal(true);
  });

  it("gives every key timing in wall ms and simulated seconds at the run's speed (null when it never happened)", async () => {
    const { doc } = await runAll();
    const timings = (doc?.scenarios ?? []).flatMap((s) => Object.entries(s.timings).map(([name, t]) => ({ scenario: s.scenario, name, t })));
    expect(timings.length).to.be.above(5);
    for (const { scenario: name, t } of timings) {
      if (t === null) continue;
      expect(Object.keys(t).sort(), name).to.deep.equal(["simulatedSeconds", "wallMs"]);
      // Speed 60; simulated seconds are kept to one decimal.
      expect(t.simulatedSeconds, name).to.be.closeTo((t.wallMs * 60) / 1000, 0.05);
    }
    expect(timings.find((x) => x.name === "GPU up → backlog drained")?.t).to.not.equal(null);
  });

  it("--report writes a self-contained page: uPlot inlined, a section for every scenario that ran", async () => {
    const { doc, stderr } = await runAll();
    expect(fs.existsSync(REPORT), stderr).to.equal(true);
    const html = fs.readFileSync(REPORT, "utf8");
    expect(html).to.include("https://github.com/leeoniya/uPlot");
    expect(html).not.to.match(/<script[^>]+src=/);
    for (const s of doc?.scenarios ?? []) expect(html, s.scenario).to.include(`data-scenario="${s.scenario}"`);
    expect(html.match(/<section class="scenario"/g)).to.have.length(doc?.scenarios.length ?? -1);
  });

  it("pool: workflows claim warm instances, run out, and refill tops the pool up; every advert accounted for", async () => {
    const s = await scenario("pool");
    expect(s.failures).to.deep.equal([]);
    expect(s.sent).to.be.above(0);
    expect(s).to.include({ inDlq: 0, lost: 0 });
  });
});
