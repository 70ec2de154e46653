import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { expect } from "chai";
import { sampleEnv } from "../helpers/env-samples";

const root = resolve(__dirname, "../../..");
/** What the program always sets per stack: no default would be safe. */
const STACK = { RUNS_FLEET_RUNNER_PARAMETER_PATH: "/runs-fleet/dev/runners" };
const URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";

/** Loads an entry module in a fresh process, as Lambda's cold start does. */
function loadEntry(modulePath: string, env: Record<string, string>): Promise<{ code: number; stderr: string; stdout: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "-e", `const m = require(${JSON.stringify(modulePath)}); console.log(typeof m.handler);`],
      { cwd: root, env: { PATH: process.env.PATH ?? "", AWS_REGION: "us-east-1", ...env }, timeout: 30_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("fleet entry modules at cold start", function () {
  this.timeout(60_000);

  it("termination.ts fails to load with an error naming RUNS_FLEET_JOBS_TABLE when it is missing", async () => {
    const result = await loadEntry("./functions/fleet/termination.ts", { RUNS_FLEET_TERMINATION_QUEUE_URL: URL, RUNS_FLEET_TERMINATION_DLQ_URL: URL });

    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain("EnvConfigError").and.contain("RUNS_FLEET_JOBS_TABLE is required but not set");
  });

  it("termination.ts and housekeeping.ts export a handler when the environment is complete", async () => {
    const [termination, housekeeping] = await Promise.all([
      loadEntry("./functions/fleet/termination.ts", {
        ...sampleEnv("fleet termination"),
        RUNS_FLEET_JOBS_TABLE: "jobs",
        RUNS_FLEET_TERMINATION_QUEUE_URL: URL,
        RUNS_FLEET_TERMINATION_DLQ_URL: URL,
        ...STACK,
      }),
      loadEntry("./functions/fleet/housekeeping.ts", {
        ...sampleEnv("fleet housekeeping"),
        RUNS_FLEET_JOBS_TABLE: "jobs",
        RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: URL,
        RUNS_FLEET_HOUSEKEEPING_DLQ_URL: URL,
        RUNS_FLEET_ENVIRONMENT: "dev",
        ...STACK,
      }),
    ]);

    expect(termination.stdout.trim(), termination.stderr).to.equal("function");
    expect(housekeeping.stdout.trim(), housekeeping.stderr).to.equal("function");
  });
});
