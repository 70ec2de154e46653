/**
 * The dlq-redrive scenario through the real CLI (`npm start -- --scenario dlq-redrive`): the bad
 * deploy fills the DLQ and fires its alarm, ops redrives, and every job completes with the alarm
 * back to OK.
 */
import { spawn } from "node:child_process";
import * as path from "node:path";
import { expect } from "chai";
import type { AlarmReport } from "../../../local/observe/alarm-watch";
import type { ScenarioSummary } from "../../../local/show/view";

const ROOT = path.resolve(__dirname, "../../..");

describe("npm start -- --scenario dlq-redrive", function () {
  this.timeout(300_000);
  let code: number | null = null;
  let doc: { ok: boolean; scenarios: ScenarioSummary[]; alarms: AlarmReport } | undefined;
  let stderr = "";

  before(async () => {
    await new Promise<void>((done, fail) => {
      const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "local/cli.ts"), "--scenario", "dlq-redrive", "--size", "small", "--json"], {
        cwd: ROOT,
        env: process.env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
      child.once("error", fail);
      child.once("close", (c) => {
        code = c;
        try {
          doc = JSON.parse(out) as typeof doc;
        } catch {
          doc = undefined;
        }
        done();
      });
    });
  });

  it("ends with every message processed, 0 lost, the alarm fired and back to OK, and the redrive reported", () => {
    // Assess
    expect(code, stderr).to.equal(0);
    const row = doc?.scenarios.find((s) => s.scenario === "dlq-redrive");
    expect(row, stderr).to.not.equal(undefined);
    expect(row).to.deep.include({ sent: 6, processed: 6, inDlq: 0, lost: 0, failures: [] });
    expect(String(row?.details.redrive)).to.equal("fleet-termination-dlq → fleet-termination: COMPLETED, 6 of 6 moved");
    const alarm = doc?.alarms.alarms.find((a) => a.logicalName === "fleet-termination-dlq-depth");
    expect(alarm?.firings).to.have.length(1);
    expect(alarm?.firings[0]?.okAtMs).to.be.a("number");
    expect(stderr).to.include("ops dlq redrive fleet-termination-dlq --yes");
  });
});
