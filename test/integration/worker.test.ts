import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import { buildHandlers } from "../../functions/worker/handlers";
import { dynamoLedgerStore, JobLedger } from "../../functions/worker/ledger";
import { TaskProtection } from "../../functions/worker/protection";
import { createWorker } from "../../functions/worker/worker";
import { FakeEcsAgent } from "../functions/helpers/ecs-agent";
import { testWorkerConfig, waitFor } from "../functions/helpers/worker-deps";
import { RecordingLogger, RecordingMetrics } from "../functions/helpers/telemetry";
import { AwsWorld, type Queue } from "./helpers/aws-world";
import { resetMoto } from "./helpers/moto";
import { createLedgerTable, LEDGER_TABLE } from "./helpers/worker-ledger";

const MAX_RECEIVE_COUNT = 3;
describe("worker against moto: drains a queue, failures reach the DLQ after maxReceiveCount", function () {
  this.timeout(60_000);
  const agent = new FakeEcsAgent();
  let world: AwsWorld;
  let work: Queue;
  let dlq: Queue;
  let scratch: string;
  let dynamodb: DynamoDBClient;

  before(() => agent.start());
  after(() => agent.stop());
  beforeEach(async () => {
    await resetMoto();
    agent.reset();
    world = new AwsWorld();
    dynamodb = new DynamoDBClient({});
    await createLedgerTable(dynamodb);
    dlq = await world.createQueue("worker-dlq");
    work = await world.createQueue("worker", {
      VisibilityTimeout: "30",
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: MAX_RECEIVE_COUNT }),
    });
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "worker-it-"));
  });
  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it("runs allow-listed executables, deletes successes, quarantines garbage, and redrives failures after 3 receives", async () => {
    const logger = new RecordingLogger();
    const metrics = new RecordingMetrics();
    const config = testWorkerConfig({
      workQueueUrl: work.url,
      quarantineQueueUrl: dlq.url,
      concurrency: 4,
      waitTimeSeconds: 1,
      retryDelaySeconds: 0,
      agentUri: agent.uri,
      scratchDir: scratch,
    });
    const executables = {
      digest: { command: "/bin/sh", args: ["-c", "cat > payload.json && test -s payload.json"] },
      broken: { command: "/bin/sh", args: ["-c", "echo disk full >&2; exit 2"] },
    };
    const worker = createWorker({
      sqs: world.sqs,
      config,
      handlers: buildHandlers(executables, scratch),
      protection: new TaskProtection({ agentUri: agent.uri, expiresInMinutes: 30, logger, metrics }),
      ledger: new JobLedger({
        store: dynamoLedgerStore(DynamoDBDocumentClient.from(dynamodb), LEDGER_TABLE),
        holder: () => Promise.resolve("it-task"),
        leaseMs: 180_000,
      }),
      logger,
      metrics,
    });
    const good = Array.from({ length: 8 }, (_, i) => ({ job_id: `ok-${i}`, type: "digest", payload: { i }, estimated_seconds: 5 }));
    const bad = [{ job_id: "bad-1", type: "broken", payload: {}, estimated_seconds: 5 }];
    for (const j of [...good, ...bad]) await world.send(work, JSON.stringify(j));
    await world.send(work, "not a job");
    await world.send(work, JSON.stringify({ job_id: "x", type: "format-disk", payload: {} }));

    const running = worker.run();
    try {
      await waitFor(() => worker.stats.succeeded === good.length && worker.stats.quarantined === 2, 30_000, "the good jobs and the quarantines");
      await waitFor(() => worker.stats.failed === MAX_RECEIVE_COUNT, 30_000, "three failed attempts");
      // The next receive is the one that would exceed maxReceiveCount: moto moves the message then.
      await world.sqs.send(new ReceiveMessageCommand({ QueueUrl: work.url, WaitTimeSeconds: 0 }));
    } finally {
      worker.stop("test");
      await running;
    }

    expect(await world.depth(work)).to.deep.equal({ visible: 0, notVisible: 0 });
    const parked = await world.sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.url, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"] }));
    const byBody = (parked.Messages ?? []).map((m) => [m.Body, m.MessageAttributes?.["quarantine-reason"]?.StringValue]);
    expect(byBody).to.have.deep.members([
      [JSON.stringify(bad[0]), undefined],
      ["not a job", "body is not JSON"],
      [JSON.stringify({ job_id: "x", type: "format-disk", payload: {} }), 'unknown job type "format-disk"'],
    ]);
    expect(logger.withStep("job_failed").map((e) => e.fields.job_id)).to.deep.equal(["bad-1", "bad-1", "bad-1"]);
    expect(logger.withStep("job_output").some((e) => e.fields.line === "disk full" && e.fields.stream === "stderr")).to.equal(true);
    expect(metrics.count("JobsSucceeded")).to.equal(8);
    expect(agent.puts()[0]).to.equal(true);
    expect(agent.puts().at(-1)).to.equal(false);
    expect(agent.protectedNow).to.equal(false);
    // The ledger's expressions as DynamoDB (moto) judges them: each good job completed under one
    // lease; the broken one taken three times, each failure releasing its lease.
    const item = async (key: string) => (await dynamodb.send(new GetItemCommand({ TableName: LEDGER_TABLE, Key: { job_key: { S: key } } }))).Item;
    for (const j of good)
      expect(await item(j.job_id), j.job_id).to.deep.include({
        state: { S: "completed" },
        outcome: { S: "succeeded" },
        runs: { N: "1" },
        holder: { S: "it-task" },
      });
    expect(await item("bad-1")).to.deep.include({ state: { S: "running" }, runs: { N: "3" }, lease_expires_at: { N: "0" } });
  });
});
