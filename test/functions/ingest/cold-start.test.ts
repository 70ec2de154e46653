import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { expect } from "chai";
import { sampleEnv } from "../helpers/env-samples";

const root = resolve(__dirname, "../../..");

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

/** Every ingest variable but INGEST_DLQ_URL. */
const { INGEST_DLQ_URL: _dlq, ...sampled } = { ...sampleEnv("ingest GPU idle"), ...sampleEnv("ingest DLQ consumer"), ...sampleEnv("ingest window") };
const baseEnv = {
  ...sampled,
  GPU_SERVICE_PORT: "8080",
  GPU_SERVICE_PATH: "/ingest/window",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-quarantine",
  INGEST_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
};

describe("ingest entry modules at cold start", function () {
  this.timeout(60_000);

  it("dlq.ts fails to load with an error naming INGEST_DLQ_URL when it is missing", async () => {
    const result = await loadEntry("./functions/ingest/dlq.ts", baseEnv);

    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain("EnvConfigError").and.contain("INGEST_DLQ_URL is required but not set");
  });

  it("dlq.ts and window.ts export a handler when the environment is complete", async () => {
    const env = { ...baseEnv, INGEST_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq" };

    const [dlq, window] = await Promise.all([loadEntry("./functions/ingest/dlq.ts", env), loadEntry("./functions/ingest/window.ts", env)]);

    expect(dlq.stdout.trim()).to.equal("function");
    expect(window.stdout.trim()).to.equal("function");
  });
});
