/**
 * Every `ops` command against the local platform (`npm start -- --keep`, in a child process: the
 * deploy may run once per process), through the operator endpoint that judges each call against
 * the stack's declared operator policy. Failure paths too: an unknown queue, a move task already
 * running, a message with no source to return to, a missing permission, no confirmation.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { type OpsIo, runOps } from "../../../ops/cli";

const ROOT = path.resolve(__dirname, "../../..");
const WORK = path.join(ROOT, ".local", "dev");
const OPS_FILE = path.join(WORK, "ops.json");

interface Kept {
  outputs: string;
  endpoint: string;
  policy: string;
  moto: string;
}

interface Ran {
  code: number;
  out: string;
  err: string;
}

/** One `ops` command in this process, as a script would run it (no terminal unless `tty`). */
async function ops(args: string[], opts: { tty?: boolean; answer?: string } = {}): Promise<Ran> {
  let out = "";
  let err = "";
  const io: OpsIo = { out: (t) => (out += t), err: (t) => (err += t), tty: opts.tty ?? false, ask: async () => opts.answer ?? "" };
  const code = await runOps([...args, "--stack", "dev", "--local"], io);
  return { code, out, err };
}

async function waitUntil(what: string, done: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("npm run ops against the local platform (npm start -- --keep)", function () {
  this.timeout(240_000);
  let child: ChildProcess | undefined;
  let kept: Kept;
  let log = "";
  let sqs: SQSClient;
  let queues: Record<string, { url: string; arn: string }>;
  /** A queue's URL on moto itself (the test arranges state there, outside the operator's policy). */
  const onMoto = (name: string) => `${kept.moto}${new URL(queues[name]?.url ?? "").pathname}`;
  const depth = async (name: string) => {
    const a = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: onMoto(name), AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
    );
    return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  };
  /** Sends bodies to pool-cpu-small (nothing polls an advert queue) and receives them until SQS (moto) moves them to its DLQ. */
  const deadLetter = async (bodies: string[]) => {
    const before = await depth("pool-cpu-small-dlq");
    for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: onMoto("pool-cpu-small"), MessageBody: body }));
    await waitUntil("the messages in pool-cpu-small-dlq", async () => {
      await sqs.send(new ReceiveMessageCommand({ QueueUrl: onMoto("pool-cpu-small"), MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
      return (await depth("pool-cpu-small-dlq")) >= before + bodies.length;
    });
  };

  before(async () => {
    fs.rmSync(OPS_FILE, { force: true });
    child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "local/cli.ts"), "--keep", "--no-tty", "--stack", "dev"], {
      cwd: ROOT,
      env: process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (c: Buffer) => (log += c.toString()));
    child.stderr?.on("data", (c: Buffer) => (log += c.toString()));
    await waitUntil("npm start -- --keep to write .local/dev/ops.json", async () => fs.existsSync(OPS_FILE) || child?.exitCode !== null, 180_000);
    if (!fs.existsSync(OPS_FILE)) throw new Error(`the platform did not stay up:\n${log.slice(-4000)}`);
    kept = JSON.parse(fs.readFileSync(OPS_FILE, "utf8")) as Kept;
    queues = (JSON.parse(fs.readFileSync(kept.outputs, "utf8")) as { opsQueues: typeof queues }).opsQueues;
    sqs = new SQSClient({ region: "us-east-1", endpoint: kept.moto, credentials: { accessKeyId: "test", secretAccessKey: "test" } });
  });

  after(async () => {
    sqs?.destroy();
    if (child && child.exitCode === null) {
      const closed = new Promise((r) => child?.once("close", r));
      child.kill("SIGINT");
      await closed;
    }
  });

  it("status: every queue, the GPU, the worker's tasks with their protection, the pool's adverts", async () => {
    // Act
    const screen = await ops(["status"]);
    const json = await ops(["status", "--json"]);
    // Assess
    expect(screen.code, screen.err).to.equal(0);
    for (const name of Object.keys(queues)) expect(screen.out).to.include(`  ${name} `);
    expect(screen.out).to.match(/gpu \(instance\)\n {2}i-[0-9a-f]+: running; no hold; idle stop after 30 min/);
    expect(screen.out).to.match(/worker service \S+: 1 running of 1 desired\n {2}[0-9a-f]{32} {2}RUNNING {2}(not protected|protected until)/);
    expect(screen.out).to.match(/pool: advertised instances per class\n {2}cpu-small/);
    const doc = JSON.parse(json.out) as { queues: unknown[]; gpu: { mode: string }; worker: { tasks: unknown[] } };
    expect(doc.queues).to.have.length(Object.keys(queues).length);
    expect(doc.gpu.mode).to.equal("instance");
    expect(doc.worker.tasks).to.have.length(1);
  });

  it("refuses an unknown queue and names the ones there are", async () => {
    // Act
    const peek = await ops(["dlq", "peek", "no-such-dlq"]);
    const redrive = await ops(["dlq", "redrive", "no-such-dlq", "--yes"]);
    // Assess
    expect(peek.code).to.equal(1);
    expect(peek.err).to.include("unknown dlq or quarantine or schedule-dlq no-such-dlq").and.include("pool-cpu-small-dlq");
    expect(redrive.code).to.equal(1);
    expect(redrive.err).to.include("no-such-dlq");
  });

  it("peek: why each message is there and its receive count, and the messages stay", async () => {
    // Prepare
    await deadLetter(["peek-1", "peek-2"]);
    const before = await depth("pool-cpu-small-dlq");
    // Act
    const peeked = await ops(["dlq", "peek", "pool-cpu-small-dlq", "-n", "10", "--json"]);
    // Assess
    expect(peeked.code, peeked.err).to.equal(0);
    const doc = JSON.parse(peeked.out) as { messages: Array<{ body: string; why: string; receiveCount: number; firstReceivedAt: string | null }> };
    const mine = doc.messages.filter((m) => m.body.startsWith("peek-"));
    expect(mine.map((m) => m.body).sort()).to.deep.equal(["peek-1", "peek-2"]);
    for (const m of mine) {
      expect(m.why).to.equal("failed its receives on pool-cpu-small");
      expect(m.receiveCount).to.be.greaterThan(3);
      expect(m.firstReceivedAt).to.match(/^\d{4}-/);
    }
    expect(await depth("pool-cpu-small-dlq")).to.equal(before);
  });

  it("peek on a DLQ a consumer reads (ingest-dlq) warns, and asks first", async () => {
    // Act
    const unasked = await ops(["dlq", "peek", "ingest-dlq"]);
    const confirmed = await ops(["dlq", "peek", "ingest-dlq", "--yes"]);
    // Assess
    expect(unasked.code).to.equal(1);
    expect(unasked.err).to.include("ingest-dlq is consumed").and.include("needs --yes");
    expect(confirmed.code, confirmed.err).to.equal(0);
    expect(confirmed.out).to.match(/^ingest-dlq: \d+ message\(s\)/);
  });

  it("redrive: moves every message back to its source with StartMessageMoveTask and follows it to COMPLETED", async () => {
    // Prepare: the DLQ holds the peeked messages and one more
    await deadLetter(["redrive-1"]);
    const waiting = await depth("pool-cpu-small-dlq");
    // Act
    const run = await ops(["dlq", "redrive", "pool-cpu-small-dlq", "--yes"]);
    // Assess
    expect(run.code, run.err).to.equal(0);
    expect(run.out).to.include(`pool-cpu-small-dlq → pool-cpu-small: COMPLETED, ${waiting} of ${waiting} moved`);
    expect(run.err).to.match(/(RUNNING|COMPLETED): \d+ of \d+ moved/);
    expect(await depth("pool-cpu-small-dlq")).to.equal(0);
    const bodies = new Set<string>();
    for (let round = 0; round < 5; round++) {
      const back = await sqs.send(new ReceiveMessageCommand({ QueueUrl: onMoto("pool-cpu-small"), MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
      for (const m of back.Messages ?? []) bodies.add(m.Body ?? "");
    }
    expect([...bodies]).to.include.members(["peek-1", "peek-2", "redrive-1"]);
  });

  it("a move task already running: a second redrive is refused, --cancel stops the first (CANCELLED)", async () => {
    // Prepare: enough messages for a slow task at 1 a second
    await deadLetter(["slow-1", "slow-2", "slow-3", "slow-4", "slow-5", "slow-6"]);
    // Act
    const first = ops(["dlq", "redrive", "pool-cpu-small-dlq", "--rate", "1", "--yes"]);
    await new Promise((r) => setTimeout(r, 1500));
    const second = await ops(["dlq", "redrive", "pool-cpu-small-dlq", "--yes"]);
    const cancel = await ops(["dlq", "redrive", "pool-cpu-small-dlq", "--cancel", "--yes"]);
    const ended = await first;
    // Assess
    expect(second.code).to.equal(1);
    expect(second.err).to.include("a move task is already running on pool-cpu-small-dlq");
    expect(cancel.code, cancel.err).to.equal(0);
    expect(ended.code).to.equal(1);
    const [, moved, toMove] = /CANCELLED, (\d+) of (\d+) moved/.exec(ended.out) ?? [];
    expect(ended.out, ended.err).to.include("CANCELLED");
    expect(Number(moved)).to.be.lessThan(Number(toMove));
    expect(await depth("pool-cpu-small-dlq")).to.be.greaterThan(0);
  });

  it("a message the code sent to a DLQ has no source: the redrive names the DLQ's source as destination and moves it", async () => {
    // Prepare: a malformed job, which the worker quarantines into its DLQ with a plain send
    const before = await depth("worker-dlq");
    await sqs.send(new SendMessageCommand({ QueueUrl: onMoto("worker"), MessageBody: "{not json" }));
    await waitUntil("the worker to quarantine the job into worker-dlq", async () => (await depth("worker-dlq")) > before);
    // Act
    const peeked = await ops(["dlq", "peek", "worker-dlq", "--json"]);
    const run = await ops(["dlq", "redrive", "worker-dlq", "--yes", "--json"]);
    // Assess: the task completes (without a destination it failed on the message with no source)
    const why = (JSON.parse(peeked.out) as { messages: Array<{ why: string }> }).messages.map((m) => m.why);
    expect(why.some((w) => w.startsWith("quarantine-reason: "))).to.equal(true);
    expect(run.code, run.out + run.err).to.equal(0);
    const task = (JSON.parse(run.out) as { task: { status: string; moved: number } }).task;
    expect(task.status).to.equal("COMPLETED");
    expect(task.moved).to.be.greaterThan(0);
  });

  it("a permission the policy lacks: the call is denied, naming the missing action", async () => {
    // Prepare: the declared policy without what SQS checks on the source for a redrive, and without ReadQueueAges
    const declared = fs.readFileSync(kept.policy, "utf8");
    const doc = JSON.parse(declared) as { Statement: Array<{ Sid: string }> };
    const without = (...sids: string[]) => JSON.stringify({ ...doc, Statement: doc.Statement.filter((s) => !sids.includes(s.Sid)) });
    await deadLetter(["denied-1"]);
    try {
      fs.writeFileSync(kept.policy, without("RedriveReturnsToSource", "ReadQueueAges"));
      // Act
      const redrive = await ops(["dlq", "redrive", "pool-cpu-small-dlq", "--yes"]);
      const status = await ops(["status"]);
      // Assess
      expect(redrive.code).to.equal(1);
      expect(redrive.err).to.match(
        /AccessDenied: .*not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:us-east-1:123456789012:pool-cpu-small-/,
      );
      expect(status.code).to.equal(1);
      expect(status.err).to.include("not authorized to perform: cloudwatch:GetMetricStatistics");
    } finally {
      fs.writeFileSync(kept.policy, declared);
    }
    // With the declared policy the same redrive goes through.
    const again = await ops(["dlq", "redrive", "pool-cpu-small-dlq", "--yes"]);
    expect(again.code, again.err).to.equal(0);
  });

  it("quarantine: list groups by reason with an example; release resends to the source and logs who", async () => {
    // Prepare: a malformed window; the window consumer sends it to ingest-dlq, whose consumer quarantines it
    await sqs.send(new SendMessageCommand({ QueueUrl: onMoto("ingest"), MessageBody: "not a window" }));
    await waitUntil("the window in ingest-quarantine", async () => (await depth("ingest-quarantine")) > 0, 90_000);
    // Act
    const list = await ops(["quarantine", "list", "--json"]);
    const reasons = (JSON.parse(list.out) as { reasons: Array<{ reason: string; count: number; example: { body: string } }> }).reasons;
    const mine = reasons.find((r) => r.example.body === "not a window");
    const released = await ops(["quarantine", "release", "--reason", mine?.reason ?? "?", "--yes"]);
    // Assess
    expect(list.code, list.err).to.equal(0);
    expect(mine?.count).to.be.at.least(1);
    expect(released.code, released.err).to.equal(0);
    expect(released.err).to.match(/released \S+ from ingest-quarantine to ingest(-dlq)? as \S+, by arn:aws:(sts|iam)::/);
  });

  it("gpu: hold (with --until), no stop while held, release, then stop", async () => {
    // Act
    const past = await ops(["gpu", "hold", "--until", "2020-01-01T00:00:00Z", "--yes"]);
    const held = await ops(["gpu", "hold", "--yes"]);
    const refused = await ops(["gpu", "stop", "--yes"]);
    const released = await ops(["gpu", "release", "--yes"]);
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const heldUntil = await ops(["gpu", "hold", "--until", until, "--json", "--yes"]);
    await ops(["gpu", "release", "--yes"]);
    const stopped = await ops(["gpu", "stop", "--yes", "--json"]);
    // Assess
    expect(past.code).to.equal(1);
    expect(past.err).to.include("already past");
    expect(held.code, held.err).to.equal(0);
    expect(held.out).to.include("held (encache:gpu-hold=true)");
    expect(refused.code).to.equal(1);
    expect(refused.err).to.include("the GPU is held");
    expect(released.code, released.err).to.equal(0);
    expect(released.out).to.include("no hold");
    expect((JSON.parse(heldUntil.out) as { hold: string; holdActive: boolean }).hold).to.equal(until);
    expect(stopped.code, stopped.err).to.equal(0);
    expect((JSON.parse(stopped.out) as { state: string }).state).to.match(/^(stopping|stopped)$/);
  });

  it("changes nothing without --yes off a terminal, nor on a terminal without a yes", async () => {
    // Act
    const script = await ops(["gpu", "hold"]);
    const declined = await ops(["gpu", "hold"], { tty: true, answer: "n" });
    const status = await ops(["gpu", "status", "--json"]);
    // Assess
    expect(script.code).to.equal(1);
    expect(script.err).to.include("needs --yes");
    expect(declined.code).to.equal(1);
    expect((JSON.parse(status.out) as { hold: string | null }).hold).to.equal(null);
  });
});
