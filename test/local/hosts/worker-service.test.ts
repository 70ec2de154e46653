import * as fs from "node:fs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createLedgerTable, LEDGER_TABLE } from "../../integration/helpers/worker-ledger";
import * as os from "node:os";
import * as path from "node:path";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { readProtectionEnabled, TaskProtection } from "../../../functions/worker/protection";
import { DEFAULT_EXPIRES_IN_MINUTES, TaskProtectionAgent } from "../../../local/hosts/ecs-agent";
import { motoClientEnv } from "../../../local/aws/moto";
import type { LocalTaskDefinition } from "../../../local/provision/topology-types";
import { containerEnvironment, localTaskEnvironment, pickContainer, taskEnvironment, WorkerServiceRunner } from "../../../local/hosts/worker-service";
import { RecordingLogger, RecordingMetrics } from "../../functions/helpers/telemetry";
import { sleep } from "../../functions/helpers/worker-deps";
import { AwsWorld, type Queue } from "../../integration/helpers/aws-world";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";
import { sampleEnv } from "../../functions/helpers/env-samples";

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

type LogLine = Record<string, unknown> & { step?: string };

/** The worker's Powertools JSON lines from one task's log file. */
function logLines(file: string): LogLine[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as LogLine];
      } catch {
        return [];
      }
    });
}

async function call(url: string, method: "GET" | "PUT", body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("local ECS agent: TaskProtectionAgent", () => {
  let agent: TaskProtectionAgent;
  let clock: number;
  let stateUrl: string;

  beforeEach(async () => {
    clock = Date.parse("2026-01-01T00:00:00Z");
    agent = new TaskProtectionAgent({ now: () => clock, taskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/t1" });
    stateUrl = `${await agent.start()}/task-protection/v1/state`;
  });
  afterEach(() => agent.stop());

  it("serves ECS_AGENT_URI as …/v4/<id>, and a PUT answers in the agent's shape", async () => {
    expect(agent.uri).to.match(/^http:\/\/127\.0\.0\.1:\d+\/v4\/[0-9a-f]{32}$/);

    const res = await call(stateUrl, "PUT", { ProtectionEnabled: true, ExpiresInMinutes: 30 });

    expect(res).to.deep.equal({
      status: 200,
      json: { protection: { ExpirationDate: "2026-01-01T00:30:00.000Z", ProtectionEnabled: true, TaskArn: "arn:aws:ecs:us-east-1:123456789012:task/c/t1" } },
    });
    expect(agent.state()).to.deep.equal({ protectionEnabled: true, expiresAtMs: clock + 30 * 60_000 });
    expect(agent.history()).to.deep.equal([{ atMs: clock, protectionEnabled: true, expiresInMinutes: 30 }]);
  });

  it("defaults ExpiresInMinutes to 120, and a disable clears the expiry (ExpirationDate null)", async () => {
    await call(stateUrl, "PUT", { ProtectionEnabled: true });
    expect(agent.history()[0]?.expiresInMinutes).to.equal(DEFAULT_EXPIRES_IN_MINUTES);

    clock += 1000;
    const off = await call(stateUrl, "PUT", { ProtectionEnabled: false });
    const got = await call(stateUrl, "GET");

    expect(off.json).to.deep.equal(got.json);
    expect(got.json.protection).to.deep.equal({ ExpirationDate: null, ProtectionEnabled: false, TaskArn: agent.taskArn });
    expect(agent.history().map((h) => h.protectionEnabled)).to.deep.equal([true, false]);
  });

  it("lets protection lapse at its expiry, as ECS does", async () => {
    await call(stateUrl, "PUT", { ProtectionEnabled: true, ExpiresInMinutes: 1 });
    clock += 59_999;
    expect(agent.state().protectionEnabled).to.equal(true);

    clock += 1;

    expect(agent.state()).to.deep.equal({ protectionEnabled: false, expiresAtMs: null });
    expect(readProtectionEnabled((await call(stateUrl, "GET")).json)).to.equal(false);
  });

  const badBodies: Array<[string, unknown]> = [
    ["not JSON", "{nope"],
    ["no ProtectionEnabled", { ExpiresInMinutes: 5 }],
    ["ProtectionEnabled as a string", { ProtectionEnabled: "true" }],
    ["ExpiresInMinutes 0", { ProtectionEnabled: true, ExpiresInMinutes: 0 }],
    ["ExpiresInMinutes 2881", { ProtectionEnabled: true, ExpiresInMinutes: 2881 }],
    ["ExpiresInMinutes 1.5", { ProtectionEnabled: true, ExpiresInMinutes: 1.5 }],
  ];
  for (const [name, body] of badBodies) {
    it(`rejects a PUT with ${name}: 400 InvalidParameterException, state unchanged`, async () => {
      const res = await call(stateUrl, "PUT", body);

      expect(res.status).to.equal(400);
      expect((res.json.error as { Code?: string }).Code).to.equal("InvalidParameterException");
      expect(agent.history()).to.deep.equal([]);
    });
  }

  it("answers 404 on another path or another task's id", async () => {
    const base = new URL(agent.uri);
    expect((await call(`${base.origin}/v4/other/task-protection/v1/state`, "GET")).status).to.equal(404);
    expect((await call(`${agent.uri}/task-protection/v2/state`, "GET")).status).to.equal(404);
  });

  it("failNext(n) fails n requests with the status (500 error body; 200 with a failure body) and leaves the state alone", async () => {
    agent.failNext(1, 503);
    const failed = await call(stateUrl, "PUT", { ProtectionEnabled: true });
    agent.failNext(1, 200);
    const refused = await call(stateUrl, "PUT", { ProtectionEnabled: true });
    const ok = await call(stateUrl, "PUT", { ProtectionEnabled: true });

    expect(failed.status).to.equal(503);
    expect(failed.json.error).to.include({ Code: "ServerException" });
    expect(refused.status).to.equal(200);
    expect(refused.json.failure).to.include({ Reason: "TASK_NOT_VALID", Arn: agent.taskArn });
    expect(ok.status).to.equal(200);
    expect(agent.history()).to.have.length(1);
    expect(agent.requests().map((r) => r.status)).to.deep.equal([503, 200, 200]);
  });

  it("works with the worker's own TaskProtection client, including its failure path", async () => {
    const logger = new RecordingLogger();
    const metrics = new RecordingMetrics();
    const protection = new TaskProtection({ agentUri: agent.uri, expiresInMinutes: 15, logger, metrics, enableRetryMs: 60_000 });

    await protection.acquire();
    expect(agent.state().protectionEnabled).to.equal(true);
    agent.failNext(1);
    await protection.release();
    expect(agent.state().protectionEnabled, "a failed release leaves it on").to.equal(true);
    await protection.reconcile();

    expect(agent.history()).to.deep.equal([
      { atMs: clock, protectionEnabled: true, expiresInMinutes: 15 },
      { atMs: clock, protectionEnabled: false },
    ]);
    expect(metrics.count("TaskProtectionFailures")).to.equal(1);
  });
});

describe("local worker service: environment", () => {
  const td: LocalTaskDefinition = {
    urn: "urn:td",
    logicalName: "worker",
    arn: "arn:aws:ecs:us-east-1:123456789012:task-definition/worker:1",
    family: "worker",
    containerDefinitions: [
      { name: "sidecar", essential: false, environment: [{ name: "A", value: "sidecar" }] },
      {
        name: "worker",
        essential: true,
        stopTimeout: 120,
        environment: [
          { name: "A", value: "1" },
          { name: "AWS_REGION", value: "eu-west-1" },
          { name: "WORKER_SCRATCH_DIR", value: "/scratch" },
        ],
      },
    ],
  };

  it("picks the named container, else the first essential one", () => {
    expect(pickContainer(td).name).to.equal("worker");
    expect(pickContainer(td, "sidecar").name).to.equal("sidecar");
    expect(() => pickContainer(td, "nope")).to.throw(/no container nope/);
  });

  it("reads the container's name/value environment list", () => {
    expect(containerEnvironment(pickContainer(td))).to.deep.equal({ A: "1", AWS_REGION: "eu-west-1", WORKER_SCRATCH_DIR: "/scratch" });
    expect(containerEnvironment({ name: "bare" })).to.deep.equal({});
  });

  it("puts a task on moto's own origin and the run's clock: queue URLs rewritten, timers divided by the speed (at least 1 s), 1 s polls", () => {
    // Prepare: the container as the program declares it, queue URLs on the SQS clock proxy.
    const container = {
      WORK_QUEUE_URL: "http://127.0.0.1:5001/123456789012/worker-abc",
      QUARANTINE_QUEUE_URL: "http://127.0.0.1:5001/123456789012/worker-dlq-abc",
      WORKER_SHUTDOWN_GRACE_SECONDS: "100",
      WORKER_IDLE_WINDOW_SECONDS: "15",
      WORKER_HEARTBEAT_SECONDS: "60",
      WORKER_RETRY_DELAY_SECONDS: "30",
      WORKER_WAIT_TIME_SECONDS: "20",
      WORKER_CONCURRENCY: "2",
    };
    // Act
    const env = localTaskEnvironment(container, "http://127.0.0.1:7000", 60);
    // Assert
    expect(env).to.deep.equal({
      WORK_QUEUE_URL: "http://127.0.0.1:7000/123456789012/worker-abc",
      QUARANTINE_QUEUE_URL: "http://127.0.0.1:7000/123456789012/worker-dlq-abc",
      WORKER_SHUTDOWN_GRACE_SECONDS: "2",
      WORKER_IDLE_WINDOW_SECONDS: "1",
      WORKER_HEARTBEAT_SECONDS: "1",
      WORKER_RETRY_DELAY_SECONDS: "1",
      WORKER_WAIT_TIME_SECONDS: "1",
    });
    // A knob the stack leaves to the worker's default stays unset.
    expect(localTaskEnvironment({}, "http://127.0.0.1:7000", 60)).to.deep.equal({ WORKER_WAIT_TIME_SECONDS: "1" });
  });

  it("layers container env < awsEnv < ECS_AGENT_URI and scratch < extraEnv, and nothing else of the host", () => {
    const env = taskEnvironment({
      container: containerEnvironment(pickContainer(td)),
      awsEnv: { AWS_REGION: "us-east-1", AWS_ENDPOINT_URL: "http://127.0.0.1:1" },
      agentUri: "http://127.0.0.1:2/v4/x",
      scratchDir: "/tmp/s",
      extraEnv: { A: "extra" },
      path: "/bin",
    });

    expect(env).to.deep.equal({
      PATH: "/bin",
      A: "extra",
      AWS_REGION: "us-east-1",
      AWS_ENDPOINT_URL: "http://127.0.0.1:1",
      ECS_AGENT_URI: "http://127.0.0.1:2/v4/x",
      WORKER_SCRATCH_DIR: "/tmp/s",
    });
  });

  it("SIGKILLs a task that ignores SIGTERM once the stop timeout has passed", async function () {
    this.timeout(30_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "worker-svc-"));
    const entry = path.join(dir, "stubborn.mjs");
    fs.writeFileSync(entry, "process.on('SIGTERM', () => console.log('ignoring SIGTERM'));\nconsole.log('ready');\nsetInterval(() => {}, 1000);\n");
    const runner = new WorkerServiceRunner({ taskDefinition: td, count: 1, awsEnv: {}, entry, logDir: dir, scratchRoot: dir, stopTimeoutMs: 500 });
    try {
      await runner.start();
      await until(() => fs.readFileSync(path.join(dir, "worker-0.log"), "utf8").includes("ready"), "the stub to start");

      const out = await runner.interrupt(0);

      expect(out).to.include({ exitCode: null, signal: "SIGKILL" });
      expect(out.elapsedMs).to.be.at.least(500);
      expect(fs.readFileSync(path.join(dir, "worker-0.log"), "utf8")).to.include("ignoring SIGTERM");
    } finally {
      await runner.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("local worker service: the worker container as local processes against moto", function () {
  this.timeout(60_000);
  let world: AwsWorld;
  let work: Queue;
  let dlq: Queue;
  let dir: string;
  let runner: WorkerServiceRunner | undefined;

  beforeEach(async () => {
    await resetMoto();
    world = new AwsWorld();
    dlq = await world.createQueue("worker-dlq");
    work = await world.createQueue("worker", {
      VisibilityTimeout: "300",
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }),
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "worker-svc-"));
    await createLedgerTable(new DynamoDBClient({}));
  });
  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Shaped like the program's worker task definition, with short waits so a test is quick. */
  function taskDefinition(): LocalTaskDefinition {
    const env: Record<string, string> = {
      // Every variable the worker's env codec requires (the program sets them all), then this test's own.
      ...sampleEnv("worker"),
      AWS_REGION: "us-east-1",
      WORK_QUEUE_URL: work.url,
      QUARANTINE_QUEUE_URL: dlq.url,
      WORKER_CONCURRENCY: "1",
      WORKER_WAIT_TIME_SECONDS: "1",
      WORKER_IDLE_WINDOW_SECONDS: "2",
      WORKER_SHUTDOWN_GRACE_SECONDS: "1",
      TASK_PROTECTION_EXPIRES_MINUTES: "10",
      WORKER_EXECUTABLES: JSON.stringify({ nap: { command: "/bin/sleep", args: ["1"] }, long: { command: "/bin/sleep", args: ["60"] } }),
      WORKER_SCRATCH_DIR: "/scratch",
      WORKER_JOBS_TABLE: LEDGER_TABLE,
      POWERTOOLS_SERVICE_NAME: "worker",
      POWERTOOLS_METRICS_NAMESPACE: "Encache/Worker",
      POWERTOOLS_LOG_LEVEL: "INFO",
    };
    return {
      urn: "urn:pulumi:dev::local::aws:ecs/taskDefinition:TaskDefinition::worker",
      logicalName: "worker",
      arn: "arn:aws:ecs:us-east-1:123456789012:task-definition/worker:1",
      family: "worker",
      containerDefinitions: [
        { name: "worker", essential: true, memory: 512, stopTimeout: 120, environment: Object.entries(env).map(([name, value]) => ({ name, value })) },
      ],
    };
  }

  function startRunner(count: number, replaceAfterMs?: number): Promise<void> {
    runner = new WorkerServiceRunner({
      taskDefinition: taskDefinition(),
      count,
      awsEnv: motoClientEnv(motoEndpoint(), "us-east-1"),
      logDir: dir,
      scratchRoot: dir,
      ...(replaceAfterMs !== undefined ? { replaceAfterMs } : {}),
    });
    return runner.start();
  }

  const steps = (step: string) => (runner?.tasks() ?? []).flatMap((t) => logLines(t.logFile).filter((l) => l.step === step));

  it("two tasks drain the jobs, each protected while its jobs run and released when it goes idle", async () => {
    const jobs = Array.from({ length: 4 }, (_, i) => ({ job_id: `nap-${i}`, type: "nap", payload: { i }, estimated_seconds: 5 }));
    await startRunner(2);
    // Both polling before the work arrives, so each takes a share (one message per receive at N = 1).
    await until(() => steps("worker_started").length === 2, "both workers to start");
    for (const j of jobs) await world.send(work, JSON.stringify(j));

    await until(() => steps("job_succeeded").length === jobs.length, "every job to succeed");
    const tasks = runner?.tasks() ?? [];
    await until(() => tasks.every((t) => !t.agent.state().protectionEnabled), "protection to be released");

    expect(await world.depth(work)).to.deep.equal({ visible: 0, notVisible: 0 });
    expect(steps("job_succeeded").map((l) => l.job_id)).to.have.members(jobs.map((j) => j.job_id));
    for (const t of tasks) {
      expect(t.exitCode, `task ${t.index} is still running`).to.equal(null);
      const worked = logLines(t.logFile).filter((l) => l.step === "job_succeeded");
      const history = t.agent.history();
      if (worked.length === 0) continue;
      // Taken when the first job started, with the configured expiry, released after the last one.
      expect(history[0]).to.include({ protectionEnabled: true, expiresInMinutes: 10 });
      expect(history.at(-1)?.protectionEnabled).to.equal(false);
      const lastJobAt = Math.max(...worked.map((l) => Date.parse(String(l.timestamp))));
      expect(history.at(-1)?.atMs ?? 0).to.be.at.least(lastJobAt - 1000);
    }
    expect(
      tasks.filter((t) => t.agent.history().length > 0),
      "both tasks took work",
    ).to.have.length(2);
  });

  it("interrupt() during a long job hands it back (visible again, nothing lost), exits 0 and releases protection", async () => {
    const long = JSON.stringify({ job_id: "long-1", type: "long", payload: {}, estimated_seconds: 600 });
    await world.send(work, long);
    await startRunner(1);
    const r = runner;
    const [task] = r?.tasks() ?? [];
    if (!r || !task) throw new Error("no task");
    await until(() => task.agent.state().protectionEnabled, "the long job to take protection");
    expect(await world.depth(work)).to.deep.equal({ visible: 0, notVisible: 1 });

    const out = await r.interrupt(0);

    expect(out).to.include({ exitCode: 0, signal: null });
    expect(await world.depth(work)).to.deep.equal({ visible: 1, notVisible: 0 });
    const again = await world.sqs.send(new ReceiveMessageCommand({ QueueUrl: work.url, WaitTimeSeconds: 0, MaxNumberOfMessages: 10 }));
    expect((again.Messages ?? []).map((m) => m.Body)).to.deep.equal([long]);
    expect(await world.depth(dlq)).to.deep.equal({ visible: 0, notVisible: 0 });
    expect(steps("job_returned").map((l) => l.job_id)).to.deep.equal(["long-1"]);
    expect(task.agent.history().map((h) => h.protectionEnabled)).to.deep.equal([true, false]);
    expect(r.tasks()[0]).to.include({ exitCode: 0 });
  });
  const deaths: Array<{ name: string; end: (r: WorkerServiceRunner, pid: number) => Promise<unknown>; replaced: boolean }> = [
    {
      name: "a task SIGKILLed is replaced by a fresh task, as the ECS service keeps its count",
      end: async (_r, pid) => process.kill(pid, "SIGKILL"),
      replaced: true,
    },
    { name: "a task ended by interrupt() (SIGTERM, a scale-in) is not replaced", end: (r) => r.interrupt(0), replaced: false },
  ];
  for (const d of deaths)
    it(d.name, async () => {
      // Prepare
      await startRunner(1, 100);
      const r = runner;
      const [first] = r?.tasks() ?? [];
      if (!r || !first?.pid) throw new Error("no task");
      await until(() => steps("worker_started").length === 1, "the task to start");
      const arn = first.agent.taskArn;

      // Act
      await d.end(r, first.pid);
      if (d.replaced) await until(() => r.replaced() === 1 && steps("worker_started").length === 2, "a replacement to start");
      else await new Promise((resolve) => setTimeout(resolve, 1000));

      // Assess
      const [now] = r.tasks();
      expect(r.replaced()).to.equal(d.replaced ? 1 : 0);
      if (d.replaced) {
        expect(now?.pid).to.not.equal(first.pid);
        expect(now?.exitCode).to.equal(null);
        expect(now?.agent.taskArn).to.not.equal(arn);
        expect(now?.logOffset).to.be.above(0);
      } else expect(now?.pid).to.equal(first.pid);
    });
});
