import { type ChildProcess, spawn } from "node:child_process";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { bundleFunction } from "../../infra/bundle";
import { FakeEcsAgent } from "../functions/helpers/ecs-agent";
import { sleep, waitFor } from "../functions/helpers/worker-deps";
import { AwsWorld, type Queue } from "./helpers/aws-world";
import { motoEndpoint, resetMoto } from "./helpers/moto";
import { createLedgerTable, LEDGER_TABLE } from "./helpers/worker-ledger";
import { sampleEnv } from "../functions/helpers/env-samples";

type LogLine = Record<string, unknown> & { step?: string };

/**
 * The worker as it runs in the container: the esbuild bundle of functions/worker/main.ts in its
 * own Node process, pointed at moto and at a local agent endpoint, stopped with a real SIGTERM.
 */
describe("worker process: SIGTERM mid-job (bundled worker as a child process, against moto)", function () {
  this.timeout(60_000);
  const agent = new FakeEcsAgent();
  let world: AwsWorld;
  let work: Queue;
  let dlq: Queue;
  let dir: string;
  let child: ChildProcess | undefined;
  let lines: LogLine[];

  before(() => agent.start());
  after(() => agent.stop());
  beforeEach(async () => {
    await resetMoto();
    agent.reset();
    world = new AwsWorld();
    await createLedgerTable(new DynamoDBClient({}));
    dlq = await world.createQueue("worker-dlq");
    work = await world.createQueue("worker", {
      VisibilityTimeout: "300",
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }),
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "worker-proc-"));
    fs.mkdirSync(path.join(dir, "scratch"));
    lines = [];
  });
  afterEach(() => {
    // Never leave a worker behind, whatever failed.
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    child = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function startWorker(): ChildProcess {
    const script = path.join(dir, "worker.js");
    fs.writeFileSync(script, bundleFunction("functions/worker/main.ts").code);
    const proc = spawn(process.execPath, [script], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        // Every variable the worker's env codec requires (the program sets them all), then this test's own.
        ...sampleEnv("worker"),
        PATH: process.env.PATH,
        AWS_ENDPOINT_URL: motoEndpoint(),
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "testing",
        AWS_SECRET_ACCESS_KEY: "testing",
        AWS_EC2_METADATA_DISABLED: "true",
        WORK_QUEUE_URL: work.url,
        QUARANTINE_QUEUE_URL: dlq.url,
        WORKER_CONCURRENCY: "2",
        WORKER_WAIT_TIME_SECONDS: "1",
        WORKER_IDLE_WINDOW_SECONDS: "0",
        WORKER_SHUTDOWN_GRACE_SECONDS: "4",
        WORKER_EXECUTABLES: JSON.stringify({ short: { command: "/bin/sleep", args: ["2"] }, long: { command: "/bin/sleep", args: ["120"] } }),
        WORKER_SCRATCH_DIR: path.join(dir, "scratch"),
        WORKER_JOBS_TABLE: LEDGER_TABLE,
        ECS_AGENT_URI: agent.uri,
        POWERTOOLS_SERVICE_NAME: "worker",
        POWERTOOLS_METRICS_NAMESPACE: "Encache/Worker",
        POWERTOOLS_LOG_LEVEL: "INFO",
      },
    });
    // Powertools writes info to stdout and warn/error to stderr: read both as JSON lines.
    for (const stream of [proc.stdout, proc.stderr]) {
      let buffer = "";
      stream?.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          try {
            lines.push(JSON.parse(line) as LogLine);
          } catch {
            lines.push({ raw: line });
          }
        }
      });
    }
    return proc;
  }

  const steps = (step: string) => lines.filter((l) => l.step === step);

  it("finishes the job it can, gives back the one it can't (visible at once), releases protection, exits 0, loses nothing", async () => {
    const short = JSON.stringify({ job_id: "short-1", type: "short", payload: {}, estimated_seconds: 60 });
    const long = JSON.stringify({ job_id: "long-1", type: "long", payload: {}, estimated_seconds: 600 });
    await world.send(work, short);
    await world.send(work, long);
    child = startWorker();
    const exited = new Promise<number | null>((resolve) => child?.once("exit", (code) => resolve(code)));

    await waitFor(() => steps("job_started").length === 2, 20_000, `both jobs to start; log so far: ${JSON.stringify(lines)}`);
    expect(await world.depth(work)).to.deep.equal({ visible: 0, notVisible: 2 });
    child.kill("SIGTERM");
    const code = await Promise.race([exited, sleep(20_000).then(() => "timeout" as const)]);

    expect(code, JSON.stringify(lines)).to.equal(0);
    expect(steps("shutdown_started")[0]).to.include({ reason: "SIGTERM", in_flight: 2 });
    expect(steps("job_succeeded").map((l) => l.job_id)).to.deep.equal(["short-1"]);
    expect(steps("job_returned").map((l) => l.job_id)).to.deep.equal(["long-1"]);
    // The finished job is gone; the unfinished one is visible again at once, not after 600 s × 2.
    expect(await world.depth(work)).to.deep.equal({ visible: 1, notVisible: 0 });
    const again = await world.sqs.send(new ReceiveMessageCommand({ QueueUrl: work.url, WaitTimeSeconds: 0, MaxNumberOfMessages: 10 }));
    expect((again.Messages ?? []).map((m) => m.Body)).to.deep.equal([long]);
    expect(await world.depth(dlq)).to.deep.equal({ visible: 0, notVisible: 0 });
    // Protection: taken once for both jobs, released once at the end.
    expect(agent.puts()).to.deep.equal([true, false]);
    expect(agent.protectedNow).to.equal(false);
  });
});
