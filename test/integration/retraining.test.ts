import { DescribeTasksCommand, ECSClient, ListTasksCommand, RunTaskCommand, StopTaskCommand } from "@aws-sdk/client-ecs";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EC2Client } from "@aws-sdk/client-ec2";
import { GetQueueAttributesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { expect } from "chai";
import type { LauncherConfig } from "../../functions/retraining/config";
import { STARTED_BY } from "../../functions/retraining/ecs";
import { DEFERRALS_ATTRIBUTE, ORIGIN_ATTRIBUTE } from "../../functions/retraining/defer";
import { createLauncherHandler } from "../../functions/retraining/handler";
import { jobIdFor } from "../../functions/retraining/job-id";
import { CAPACITY_LEASE_KEY } from "../../functions/retraining/lease";
import { RecordingLauncherMetrics } from "../functions/helpers/retraining-deps";
import { RecordingLogger } from "../functions/helpers/telemetry";
import { AwsWorld, createFargateWorld, type Queue } from "./helpers/aws-world";
import { pollOnce } from "./helpers/event-source-mapping";
import { motoEndpoint, resetMoto } from "./helpers/moto";

const CLUSTER = "platform-cluster";
const FAMILY = "tradai-strategy-generic-dev";
const TABLE = "retraining-state";
const INTENT_TABLE = "retraining-intent";

/** Tasks keep their state however often DescribeTasks is called (moto advances one step per call otherwise). */
async function pinTaskTransitions(): Promise<void> {
  const res = await fetch(`${motoEndpoint()}/moto-api/state-manager/set-transition`, {
    method: "POST",
    body: JSON.stringify({ model_name: "ecs::task", transition: { progression: "manual", times: 1_000_000 } }),
  });
  await res.arrayBuffer();
}

describe("retraining launcher against moto", () => {
  let world: AwsWorld;
  let ecs: ECSClient;
  let db: DynamoDBDocumentClient;
  let queue: Queue;
  let dlq: Queue;
  let config: LauncherConfig;

  beforeEach(async () => {
    await resetMoto();
    await pinTaskTransitions();
    world = new AwsWorld();
    ecs = new ECSClient({});
    db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
    const ec2 = new EC2Client({});
    dlq = await world.createQueue("retraining-dlq");
    queue = await world.createQueue("retraining", {
      VisibilityTimeout: "600",
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }),
    });
    const network = await createFargateWorld(ecs, ec2, { cluster: CLUSTER, family: FAMILY });
    await db.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [{ AttributeName: "model_name", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "model_name", AttributeType: "S" }],
      }),
    );
    await db.send(
      new CreateTableCommand({
        TableName: INTENT_TABLE,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [{ AttributeName: "origin_message_id", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "origin_message_id", AttributeType: "S" }],
      }),
    );
    config = {
      cluster: CLUSTER,
      taskDefinition: FAMILY,
      containerName: "strategy",
      subnets: network.subnets,
      securityGroups: network.securityGroups,
      useSpot: true,
      spotFallback: "on-demand",
      stateTable: TABLE,
      maxConcurrentTasks: 5,
      environment: "dev",
      quarantineQueueUrl: dlq.url,
      retrainingQueueUrl: queue.url,
      deferDelaySeconds: 60,
      intentTable: INTENT_TABLE,
      intentRetentionSeconds: 17 * 86_400,
    };
  });

  /** Every count SQS keeps for a queue, delayed messages included (deferred copies wait there). */
  async function counts(q: Queue): Promise<{ visible: number; notVisible: number; delayed: number }> {
    const { Attributes: a } = await world.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: q.url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
      }),
    );
    return {
      visible: Number(a?.ApproximateNumberOfMessages),
      notVisible: Number(a?.ApproximateNumberOfMessagesNotVisible),
      delayed: Number(a?.ApproximateNumberOfMessagesDelayed),
    };
  }

  const launcher = (overrides: Partial<LauncherConfig> = {}, more: { db?: DynamoDBDocumentClient; now?: () => Date } = {}) =>
    createLauncherHandler({
      ecs,
      db: more.db ?? db,
      sqs: world.sqs,
      config: { ...config, ...overrides },
      logger: new RecordingLogger(),
      metrics: new RecordingLauncherMetrics(),
      now: more.now ?? (() => new Date()),
      sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    });

  async function launcherTaskArns(): Promise<string[]> {
    return (await ecs.send(new ListTasksCommand({ cluster: CLUSTER, startedBy: STARTED_BY, desiredStatus: "RUNNING" }))).taskArns ?? [];
  }

  it("a batch launches one task per message on FARGATE_SPOT with the seed's overrides, tags and startedBy", async () => {
    const ids = [
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy-btc", trigger: "scheduled" })),
      await world.send(queue, JSON.stringify({ model_name: "Other", trigger: "manual" })),
    ];

    const run = await pollOnce(world.sqs, { queueUrl: queue.url, queueArn: queue.arn }, launcher());

    expect(run?.response.batchItemFailures).to.deep.equal([]);
    const arns = await launcherTaskArns();
    expect(arns).to.have.length(2);
    const tasks = (await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: arns, include: ["TAGS"] }))).tasks ?? [];
    const btc = tasks.find((t) => t.tags?.some((tag) => tag.key === "model_name" && tag.value === "PascalStrategy-btc"));
    const jobId = jobIdFor(ids[0] ?? "");
    expect(btc?.capacityProviderName).to.equal("FARGATE_SPOT");
    expect(btc?.launchType ?? "").to.equal("", "capacity provider launches carry no launch type");
    expect(btc?.startedBy).to.equal(STARTED_BY);
    expect(btc?.overrides?.containerOverrides?.[0]?.environment).to.deep.equal([
      { name: "JOB_ID", value: jobId },
      { name: "TRADING_MODE", value: "train" },
      { name: "STRATEGY", value: "PascalStrategy" },
      { name: "MODEL_NAME", value: "PascalStrategy-btc" },
      { name: "RETRAINING_TRIGGER", value: "scheduled" },
      { name: "ENVIRONMENT", value: "dev" },
    ]);
    expect(btc?.tags).to.deep.include.members([
      { key: "job_id", value: jobId },
      { key: "strategy", value: "PascalStrategy" },
      { key: "trigger", value: "scheduled" },
      { key: "environment", value: "dev" },
    ]);
  });

  it("records each launch in the state table", async () => {
    const id = await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "drift_detected" }));

    await pollOnce(world.sqs, { queueUrl: queue.url, queueArn: queue.arn }, launcher());

    const [taskArn] = await launcherTaskArns();
    const item = (await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: "PascalStrategy" } }))).Item;
    expect(item).to.deep.include({
      model_name: "PascalStrategy",
      task_arn: taskArn,
      job_id: jobIdFor(id),
      trigger_type: "drift_detected",
      status: "running",
      message_id: id,
    });
    expect(item?.started_at)
      .to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/)
      .and.equal(item?.updated_at);
  });

  it("holds the cap across a batch bigger than the remaining capacity; stopped tasks free capacity", async () => {
    const outside = async () =>
      (
        await ecs.send(
          new RunTaskCommand({
            cluster: CLUSTER,
            taskDefinition: FAMILY,
            startedBy: STARTED_BY,
            capacityProviderStrategy: [{ capacityProvider: "FARGATE", weight: 1 }],
            networkConfiguration: { awsvpcConfiguration: { subnets: config.subnets, securityGroups: config.securityGroups } },
          }),
        )
      ).tasks?.[0]?.taskArn ?? "";
    await outside();
    const stopped = await outside();
    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: stopped, reason: "done" }));
    for (let i = 0; i < 5; i++) await world.send(queue, JSON.stringify({ model_name: `M${i}`, trigger: "manual" }));

    const run = await pollOnce(world.sqs, { queueUrl: queue.url, queueArn: queue.arn }, launcher({ maxConcurrentTasks: 3 }));

    expect(await launcherTaskArns()).to.have.length(3, "1 already running + 2 launched; the stopped one does not count");
    expect(run?.response.batchItemFailures).to.deep.equal([], "the 3 that must wait are re-sent, not failed");
    expect(await counts(queue)).to.deep.equal({ visible: 0, notVisible: 0, delayed: 3 });
  });

  it("holds the cap across two invocations running at once over a batch bigger than the cap", async () => {
    for (let i = 0; i < 12; i++) await world.send(queue, JSON.stringify({ model_name: `M${i}`, trigger: "manual" }));
    const target = { queueUrl: queue.url, queueArn: queue.arn, batchSize: 6 };

    // Two mapping pollers, as with maximumConcurrency ≥ 2: each receives 6 messages and sees room for 3.
    const runs = await Promise.all([
      pollOnce(world.sqs, target, launcher({ maxConcurrentTasks: 3 })),
      pollOnce(world.sqs, target, launcher({ maxConcurrentTasks: 3 })),
    ]);

    expect(runs.map((r) => r?.event.Records.length)).to.deep.equal([6, 6]);
    expect(await launcherTaskArns()).to.have.length(3);
    expect(runs.reduce((n, r) => n + (r?.response.batchItemFailures.length ?? 0), 0)).to.equal(0, "nothing failed");
    expect(await counts(queue)).to.deep.equal({ visible: 0, notVisible: 0, delayed: 9 }, "the 9 others wait as delayed copies");
    expect(await counts(dlq)).to.deep.include({ visible: 0 });
    expect((await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: CAPACITY_LEASE_KEY } }))).Item).to.equal(undefined, "released");
  });

  it("waits out a live lease held by another invocation, and takes over a lapsed one", async () => {
    await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "manual" }));
    const target = { queueUrl: queue.url, queueArn: queue.arn };
    const lease = (expiresAt: number) =>
      db.send(new PutCommand({ TableName: TABLE, Item: { model_name: CAPACITY_LEASE_KEY, holder: "crashed", expires_at: expiresAt } }));

    await lease(Date.now() + 60_000);
    const busy = await pollOnce(world.sqs, target, launcher({ deferDelaySeconds: 0 }));
    expect(busy?.response.batchItemFailures).to.deep.equal([]);
    expect(await launcherTaskArns()).to.have.length(0);

    await lease(Date.now() - 1);
    const again = await pollOnce(world.sqs, target, launcher());
    expect(again?.event.Records[0]?.messageAttributes[ORIGIN_ATTRIBUTE]?.stringValue).to.equal(busy?.event.Records[0]?.messageId, "the deferred copy");
    expect(again?.response.batchItemFailures).to.deep.equal([]);
    expect(await launcherTaskArns()).to.have.length(1);
  });

  it("a message deferred three times never reaches the DLQ, and launches under its first message id's job id", async () => {
    const first = await world.send(queue, JSON.stringify({ model_name: "A", trigger: "manual" }));
    const waiting = await world.send(queue, JSON.stringify({ model_name: "B", trigger: "drift_detected" }));
    const target = { queueUrl: queue.url, queueArn: queue.arn };
    const handler = launcher({ maxConcurrentTasks: 1, deferDelaySeconds: 0 });

    // A takes the only slot; B is deferred, then its copy twice more: three receives, maxReceiveCount 3.
    const seen: SQSRecord[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await pollOnce(world.sqs, target, handler);
      expect(run?.response.batchItemFailures).to.deep.equal([]);
      seen.push(...(run?.event.Records ?? []));
    }
    const copies = seen.filter((r) => r.messageAttributes[ORIGIN_ATTRIBUTE] !== undefined);
    expect(copies.map((r) => [r.messageAttributes[ORIGIN_ATTRIBUTE]?.stringValue, r.messageAttributes[DEFERRALS_ATTRIBUTE]?.stringValue])).to.deep.equal([
      [waiting, "1"],
      [waiting, "2"],
    ]);
    expect(await counts(dlq)).to.deep.include({ visible: 0 });

    const [running] = await launcherTaskArns();
    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: running ?? "", reason: "done" }));
    const last = await pollOnce(world.sqs, target, handler);

    expect(last?.event.Records[0]?.messageAttributes[DEFERRALS_ATTRIBUTE]?.stringValue).to.equal("3");
    expect(last?.response.batchItemFailures).to.deep.equal([]);
    const item = (await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: "B" } }))).Item;
    expect(item).to.deep.include({ job_id: jobIdFor(waiting), message_id: waiting });
    const [task] = (await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: await launcherTaskArns(), include: ["TAGS"] }))).tasks ?? [];
    expect(task?.tags).to.deep.include({ key: "job_id", value: jobIdFor(waiting) });
    expect((await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: "A" } }))).Item).to.deep.include({ message_id: first });
    expect(await counts(queue)).to.deep.equal({ visible: 0, notVisible: 0, delayed: 0 });
    expect(await counts(dlq)).to.deep.include({ visible: 0 });
  });

  it("a redelivered message launches no second task", async () => {
    await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "scheduled" }));
    const handler = launcher();
    const first = await pollOnce(world.sqs, { queueUrl: queue.url, queueArn: queue.arn }, handler);
    expect(first?.response.batchItemFailures).to.deep.equal([]);

    // Lambda redelivers the same message (same id) when an invocation's acknowledgement is lost.
    const again = await handler(first?.event ?? { Records: [] });

    expect(again.batchItemFailures).to.deep.equal([]);
    expect(await launcherTaskArns()).to.have.length(1);
  });

  it("quarantines a malformed message in the DLQ with its reason, and launches nothing", async () => {
    const id = await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "nightly" }));

    const run = await pollOnce(world.sqs, { queueUrl: queue.url, queueArn: queue.arn }, launcher());

    expect(run?.deleted).to.deep.equal([id]);
    const [parked] = await world.receiveAll(dlq);
    expect(parked?.Body).to.equal(JSON.stringify({ model_name: "PascalStrategy", trigger: "nightly" }));
    expect(parked?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(/^invalid_trigger: /);
    expect(parked?.MessageAttributes?.["source-message-id"]?.StringValue).to.equal(id);
    expect(await launcherTaskArns()).to.have.length(0);
  });

  describe("RunTask once per origin message (issue 16); moto ignores clientToken, so every RunTask here is a task", () => {
    const target = () => ({ queueUrl: queue.url, queueArn: queue.arn });
    const redelivered = (e: SQSEvent | undefined, receives: number): SQSEvent => ({
      Records: (e?.Records ?? []).map((r) => ({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: String(receives) } })),
    });

    it("(a) A launches, B for the same model launches, A is redelivered: one task for A", async () => {
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "scheduled" }));
      const a = await pollOnce(world.sqs, target(), launcher());
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "drift_detected" }));
      await pollOnce(world.sqs, target(), launcher());

      const again = await launcher()(redelivered(a?.event, 2));

      expect(again.batchItemFailures).to.deep.equal([]);
      expect(await launcherTaskArns()).to.have.length(2);
      const state = (await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: "PascalStrategy" } }))).Item;
      expect(state?.trigger_type).to.equal("drift_detected", "B's record stands: A's redelivery does not roll it back");
    });

    it("(b) the same message delivered to two invocations at once: one task", async () => {
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "scheduled" }));
      const run = await pollOnce(world.sqs, target(), launcher({ deferDelaySeconds: 0 }));
      await db.send(new DeleteCommand({ TableName: INTENT_TABLE, Key: { origin_message_id: run?.event.Records[0]?.messageId ?? "" } }));
      for (const arn of await launcherTaskArns()) await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: arn, reason: "reset" }));

      // SQS delivers one message to two pollers (at-least-once): both invocations see it at once.
      const results = await Promise.all([
        launcher({ deferDelaySeconds: 0 })(redelivered(run?.event, 2)),
        launcher({ deferDelaySeconds: 0 })(redelivered(run?.event, 2)),
      ]);

      expect(results.flatMap((r) => r.batchItemFailures)).to.deep.equal([]);
      expect(await launcherTaskArns()).to.have.length(1);
    });

    it("(c) lost responses on the lease take, the intent claim and the lease release (applied, answer lost, SDK retried): launched once, nothing deferred", async () => {
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "manual" }));
      const lossy = DynamoDBDocumentClient.from(new DynamoDBClient({}));
      const lost: string[] = [];
      // The request reaches DynamoDB (moto) and applies; its response is dropped and the same request is sent again.
      lossy.middlewareStack.add(
        (next) => async (args) => {
          const request = args.request as { headers?: Record<string, string>; body?: string };
          const op = request.headers?.["x-amz-target"]?.split(".")[1] ?? "";
          if (["PutItem", "DeleteItem", "UpdateItem"].includes(op) && !lost.includes(op)) {
            lost.push(op);
            await next(args);
          }
          return next(args);
        },
        { step: "finalizeRequest", name: "loseFirstResponse" },
      );

      const run = await pollOnce(world.sqs, target(), launcher({}, { db: lossy }));

      expect(lost).to.have.members(["PutItem", "UpdateItem", "DeleteItem"]);
      expect(run?.response.batchItemFailures).to.deep.equal([]);
      expect(await launcherTaskArns()).to.have.length(1);
      expect(await counts(queue)).to.deep.equal({ visible: 0, notVisible: 0, delayed: 0 }, "nothing deferred");
      expect((await db.send(new GetCommand({ TableName: TABLE, Key: { model_name: CAPACITY_LEASE_KEY } }))).Item).to.equal(undefined, "released");
      const intent = (await db.send(new GetCommand({ TableName: INTENT_TABLE, Key: { origin_message_id: run?.event.Records[0]?.messageId ?? "" } }))).Item;
      expect(intent).to.deep.include({ status: "launched", task_arn: (await launcherTaskArns())[0] });
    });

    it("(d) past ECS's 24 h clientToken window: a redelivery 2 days later and a DLQ redrive 13 days later (new id, stamped origin) launch nothing", async () => {
      await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "scheduled" }));
      const first = await pollOnce(world.sqs, target(), launcher());
      const origin = first?.event.Records[0]?.messageId ?? "";
      const days = (n: number) => () => new Date(Date.now() + n * 86_400_000);

      const again = await launcher({}, { now: days(2) })(redelivered(first?.event, 2));
      await world.sqs.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: first?.event.Records[0]?.body ?? "",
          MessageAttributes: { [ORIGIN_ATTRIBUTE]: { DataType: "String", StringValue: origin } },
        }),
      );
      const redrive = await pollOnce(world.sqs, target(), launcher({}, { now: days(13) }));

      expect(again.batchItemFailures).to.deep.equal([]);
      expect(redrive?.response.batchItemFailures).to.deep.equal([]);
      expect(redrive?.event.Records[0]?.messageId).to.not.equal(origin);
      expect(await launcherTaskArns()).to.have.length(1);
      const intent = (await db.send(new GetCommand({ TableName: INTENT_TABLE, Key: { origin_message_id: origin } }))).Item;
      expect(Number(intent?.expires_at) * 1000).to.be.greaterThan(Date.now() + 16 * 86_400_000, "kept past the DLQ's 14 days and a redrive's day");
    });

    it("on the last receive a failing message is dead-lettered by the launcher with its origin stamped on, so its redrive finds its intent", async () => {
      const id = await world.send(queue, JSON.stringify({ model_name: "PascalStrategy", trigger: "manual" }));
      const run = await pollOnce(world.sqs, target(), launcher({ maxReceiveCount: 3, taskDefinition: "no-such-family" }));
      const last = await launcher({ maxReceiveCount: 3, taskDefinition: "no-such-family" })(redelivered(run?.event, 3));

      expect(last.batchItemFailures).to.deep.equal([]);
      const [parked] = await world.receiveAll(dlq);
      expect(parked?.MessageAttributes?.[ORIGIN_ATTRIBUTE]?.StringValue).to.equal(id);
      expect(parked?.MessageAttributes?.["dead-letter-reason"]?.StringValue).to.match(/^retries_exhausted: /);
    });
  });
});
