/**
 * The GPU fleet's scenarios through the real CLI (`npm start -- --stack prod --scenario …`), each in
 * a child process that starts its own moto and deploys the program into it: the interruption and the
 * launch-failure runs on prod (fleet mode), and a fleet scenario named on dev (one instance), which
 * must fail, not skip.
 * gpu-burst itself takes several minutes and is run by hand (docs/local-run.md); its pure parts are
 * tested in gpu-fleet-run.test.ts.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import type { ScenarioSummary } from "../../../local/show/view";

const ROOT = path.resolve(__dirname, "../../..");

interface RunDocument {
  stack: string;
  ok: boolean;
  scenarios: ScenarioSummary[];
  totals: { lost: number };
}

function start(args: string[]): Promise<{ code: number | null; doc: RunDocument | undefined; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "local/cli.ts", "--json", ...args], {
      cwd: ROOT,
      env: { ...process.env, AWS_ENDPOINT_URL: "", AWS_ENDPOINT_URL_SQS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
    child.once("error", reject);
    child.once("exit", (code) => {
      let doc: RunDocument | undefined;
      try {
        doc = JSON.parse(stdout) as RunDocument;
      } catch {
        doc = undefined;
      }
      resolve({ code, doc, stderr });
    });
  });
}

describe("local run: the GPU fleet's scenarios (npm start --stack prod)", function () {
  this.timeout(900_000);

  it("gpu-spot-interruption: the interrupted Spot instance drains and is replaced; a second trips the Spot breaker, which holds the group on demand for its cool-down; nothing lost or served twice; the report charts capacity", async () => {
    // Prepare
    const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fleet-run-")), "report.html");

    // Act
    const { code, doc, stderr } = await start(["--stack", "prod", "--scenario", "gpu-spot-interruption", "--size", "small", "--report", report]);

    // Assess
    const row = doc?.scenarios.find((s) => s.scenario === "gpu-spot-interruption");
    expect(row, stderr).to.not.equal(undefined);
    expect(row?.failures, stderr).to.deep.equal([]);
    expect(row).to.include({ sent: 3000, processed: 3000, inDlq: 0, remaining: 0, lost: 0 });
    expect(row?.details).to.include({ servedTwice: 0, desiredAtNotice: 4 });
    expect(row?.details.interrupted).to.match(/^i-/);
    expect(row?.timings["notice → capacity back"]?.simulatedSeconds).to.be.a("number");
    // The Spot breaker: a second interruption within 15 minutes opened it; nothing launched on Spot while open, on demand instead; it closed after 30 minutes.
    expect(row?.details.secondInterrupted).to.match(/^i-/);
    const breaker = row?.details.spotBreaker as {
      opened: boolean;
      closed: boolean;
      interruptions: number;
      trips: number;
      recordedInterruptions: number;
      restoredOnDemandPercent: number;
      launchedWhileOpen: { spot: number; onDemand: number };
    };
    expect(breaker).to.deep.include({ opened: true, closed: true, interruptions: 2, restoredOnDemandPercent: 25 });
    expect(breaker.trips).to.be.at.least(1);
    expect(breaker.recordedInterruptions).to.equal(2);
    expect(breaker.launchedWhileOpen.spot).to.equal(0);
    expect(breaker.launchedWhileOpen.onDemand).to.be.at.least(1);
    expect(row?.timings["notice → second interruption"]?.simulatedSeconds).to.be.below(15 * 60);
    // Closed once the cool-down from the second interruption's own time is over, at the scaler's next tick (its queue lags under load).
    expect(row?.timings["second interruption → breaker closed"]?.simulatedSeconds).to.be.within(30 * 60 - 60, 36 * 60);
    expect(row?.timings["breaker open → closed"]?.simulatedSeconds).to.be.a("number");
    expect((row?.details.cost as Array<{ what: string; usd: number | null }>).every((c) => typeof c.usd === "number")).to.equal(true);
    expect(code).to.equal(0);
    const html = fs.readFileSync(report, "utf8");
    expect(html).to.include("GPU desired capacity");
    expect(html).to.include("GPU instances in service");
  });

  it("gpu-launch-failure: no launch succeeds, the launch alarm fires to the alert topic after its window and clears once launches succeed", async () => {
    // Act
    const { code, doc, stderr } = await start(["--stack", "prod", "--scenario", "gpu-launch-failure", "--size", "small"]);

    // Assess
    const row = doc?.scenarios.find((s) => s.scenario === "gpu-launch-failure");
    expect(row?.failures, stderr).to.deep.equal([]);
    expect(row).to.include({ sent: 20, processed: 20, lost: 0 });
    expect(row?.details).to.include({ alarmWindowMinutes: 20, servedWhileFailing: 0, servedTwice: 0 });
    expect(row?.details.alarm).to.match(/^ingest-gpu-fleet-launch-/);
    expect(row?.details.notified).to.have.length(1);
    expect(row?.timings["launches failing → launch alarm"]?.simulatedSeconds).to.be.at.least(20 * 60);
    expect(row?.timings["launches succeed → alarm back to OK"]?.simulatedSeconds).to.be.a("number");
    expect(code).to.equal(0);
  });

  it("a fleet scenario named on a stack with one GPU instance fails with the reason, rather than being skipped", async () => {
    // Act
    const { code, doc, stderr } = await start(["--stack", "dev", "--scenario", "gpu-burst", "--size", "small"]);

    // Assess
    expect(code, stderr).to.equal(1);
    expect(doc?.ok).to.equal(false);
    expect(doc?.scenarios.map((s) => [s.scenario, s.failures])).to.deep.equal([
      [
        "gpu-burst",
        ["the scenario failed: cannot run on stack dev: it needs the GPU fleet (gpu.capacity.mode fleet, as in prod); this stack runs one GPU instance"],
      ],
    ]);
  });
});
