import { BatchWriteItemCommand, CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, RunInstancesCommand } from "@aws-sdk/client-ec2";
import { GetParametersByPathCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { createHousekeepingHandler } from "../../functions/fleet/housekeeping-handler";
import { ENVIRONMENT_TAG } from "../../policy/contract";
import { FLEET_NAME_DEFAULTS } from "../../infra/parts/fleet.config";
import { JOBS_TABLE } from "../../functions/shared/tables";

const MANAGED_TAG = { key: FLEET_NAME_DEFAULTS.managedTagKey, value: FLEET_NAME_DEFAULTS.managedTagValue };
/** The stack under test is dev; an instance of prod's fleet carries the same managed tag. */
const ENVIRONMENT_TAG_OF = (environment: string) => ({ key: ENVIRONMENT_TAG, value: environment });
const RUNNER_PATH = "/runs-fleet/dev/runners";
import { createTerminationHandler } from "../../functions/fleet/termination-handler";
import { RecordingLogger } from "../functions/helpers/telemetry";
import { RecordingFleetMetrics } from "../functions/helpers/fleet-deps";
import { AwsWorld, type Queue } from "./helpers/aws-world";
import { pollOnce } from "./helpers/event-source-mapping";
import { loseResponses } from "./helpers/lost-response";
import { resetMoto } from "./helpers/moto";

const TABLE = "fleet-jobs";

/** The jobs table as the part declares it (keys, both GSIs). */
async function createJobsTable(dynamodb: DynamoDBClient): Promise<void> {
  await dynamodb.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: "PAY_PER_REQUEST",
      KeySchema: [{ AttributeName: JOBS_TABLE.hashKey, KeyType: "HASH" }],
      AttributeDefinitions: ["job_id", "status", "completed_at", "instance_id"].map((name) => ({ AttributeName: name, AttributeType: "S" })),
      GlobalSecondaryIndexes: [
        {
          IndexName: JOBS_TABLE.completedIndex.name,
          KeySchema: [
            { AttributeName: "status", KeyType: "HASH" },
            { AttributeName: "completed_at", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "KEYS_ONLY" },
        },
        {
          IndexName: JOBS_TABLE.instanceIndex.name,
          KeySchema: [{ AttributeName: "instance_id", KeyType: "HASH" }],
          Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["status"] },
        },
        {
          IndexName: JOBS_TABLE.activeIndex.name,
          KeySchema: [
            { AttributeName: "status", KeyType: "HASH" },
            { AttributeName: "instance_id", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "KEYS_ONLY" },
        },
      ],
    }),
  );
}

describe("fleet consumers against moto", () => {
  let world: AwsWorld;
  let dynamodb: DynamoDBClient;
  let termination: Queue;
  let terminationDlq: Queue;
  let housekeeping: Queue;
  let housekeepingDlq: Queue;
  let logger: RecordingLogger;
  let metrics: RecordingFleetMetrics;

  beforeEach(async () => {
    await resetMoto();
    world = new AwsWorld();
    dynamodb = new DynamoDBClient({});
    await createJobsTable(dynamodb);
    terminationDlq = await world.createQueue("fleet-termination-dlq");
    termination = await world.createQueue("fleet-termination");
    housekeepingDlq = await world.createQueue("fleet-housekeeping-dlq");
    housekeeping = await world.createQueue("fleet-housekeeping");
    logger = new RecordingLogger();
    metrics = new RecordingFleetMetrics();
  });

  const terminationHandler = () =>
    createTerminationHandler({
      dynamodb,
      ssm: world.ssm,
      sqs: world.sqs,
      logger,
      metrics,
      config: { jobsTable: TABLE, retentionDays: 7, queueUrl: termination.url, quarantineQueueUrl: terminationDlq.url, runnerParameterPath: RUNNER_PATH },
    });

  const housekeepingHandler = (now: () => Date = () => new Date()) =>
    createHousekeepingHandler({
      dynamodb,
      ec2: world.ec2,
      ssm: world.ssm,
      sqs: world.sqs,
      logger,
      metrics,
      now,
      config: {
        jobsTable: TABLE,
        retentionDays: 7,
        queueUrl: housekeeping.url,
        quarantineQueueUrl: housekeepingDlq.url,
        maxRuntimeMinutes: 60,
        ssmMinAgeMinutes: 0,
        pools: [],
        instancePrices: {},
        timeMarginMs: 10_000,
        runnerParameterPath: RUNNER_PATH,
        managedTag: MANAGED_TAG,
        environmentTag: ENVIRONMENT_TAG_OF("dev"),
        poolTagKey: FLEET_NAME_DEFAULTS.poolTagKey,
      },
    });

  async function runHousekeeping(task: string, params: Record<string, unknown> = {}, now?: () => Date) {
    await world.send(housekeeping, JSON.stringify({ task_type: task, timestamp: new Date().toISOString(), params }));
    const run = await pollOnce(world.sqs, { queueUrl: housekeeping.url, queueArn: housekeeping.arn, batchSize: 1 }, housekeepingHandler(now));
    expect(run?.response.batchItemFailures).to.deep.equal([]);
    return run;
  }

  async function launch(tags: Record<string, string>): Promise<{ id: string; launchTime: Date }> {
    const out = await world.ec2.send(
      new RunInstancesCommand({
        ImageId: await world.anyAmi(),
        InstanceType: "c7g.large",
        MinCount: 1,
        MaxCount: 1,
        TagSpecifications: [{ ResourceType: "instance", Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) }],
      }),
    );
    const i = out.Instances?.[0];
    if (!i?.InstanceId || !i.LaunchTime) throw new Error("RunInstances returned no instance");
    return { id: i.InstanceId, launchTime: i.LaunchTime };
  }

  async function state(id: string): Promise<string | undefined> {
    const out = await world.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
    return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
  }

  it("a duplicate termination message leaves one completion and one set of metrics", async () => {
    const instanceId = (await launch({ [MANAGED_TAG.key]: MANAGED_TAG.value, [ENVIRONMENT_TAG]: "dev" })).id;
    await dynamodb.send(new PutItemCommand({ TableName: TABLE, Item: { job_id: { S: "67890" }, status: { S: "running" }, instance_id: { S: instanceId } } }));
    await world.ssm.send(new PutParameterCommand({ Name: `/runs-fleet/dev/runners/${instanceId}/config`, Value: "{}", Type: "String" }));
    const body = JSON.stringify({
      instance_id: instanceId,
      job_id: "67890",
      status: "success",
      exit_code: 0,
      duration_seconds: 123,
      started_at: "2025-11-25T10:00:00Z",
      completed_at: "2025-11-25T10:02:03Z",
    });
    await world.send(termination, body);
    await world.send(termination, body);

    const first = await pollOnce(world.sqs, { queueUrl: termination.url, queueArn: termination.arn, batchSize: 1 }, terminationHandler());
    const second = await pollOnce(world.sqs, { queueUrl: termination.url, queueArn: termination.arn, batchSize: 1 }, terminationHandler());

    expect(first?.response.batchItemFailures).to.deep.equal([]);
    expect(second?.response.batchItemFailures).to.deep.equal([]);
    const item = (await dynamodb.send(new GetItemCommand({ TableName: TABLE, Key: { job_id: { S: "67890" } } }))).Item;
    expect(item).to.deep.include({ status: { S: "completed" }, completed_at: { S: "2025-11-25T10:02:03Z" }, exit_code: { N: "0" } });
    expect(Number(item?.expires_at?.N)).to.equal(Date.parse("2025-12-02T10:02:03Z") / 1000);
    expect(logger.steps().filter((s) => s === "job_marked_complete")).to.have.length(1);
    expect(logger.steps().filter((s) => s === "job_already_complete")).to.have.length(1);
    expect(metrics.named("JobDuration")).to.have.length(1);
    expect(metrics.named("JobSuccess")).to.have.length(1);
    expect(metrics.named("JobFailure")).to.have.length(0);
    expect((await world.ssm.send(new GetParametersByPathCommand({ Path: "/runs-fleet/dev/runners", Recursive: true }))).Parameters).to.deep.equal([]);
    expect(await world.depth(termination)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("a completion whose UpdateItem response is lost (the SDK retries into its own write) emits its metrics once, and a later duplicate none", async () => {
    const instanceId = (await launch({ [MANAGED_TAG.key]: MANAGED_TAG.value, [ENVIRONMENT_TAG]: "dev" })).id;
    await dynamodb.send(new PutItemCommand({ TableName: TABLE, Item: { job_id: { S: "lost-1" }, status: { S: "running" }, instance_id: { S: instanceId } } }));
    const body = JSON.stringify({
      instance_id: instanceId,
      job_id: "lost-1",
      status: "failure",
      exit_code: 2,
      duration_seconds: 60,
      started_at: "2025-11-25T10:00:00Z",
      completed_at: "2025-11-25T10:01:00Z",
    });
    const messageId = await world.send(termination, body);
    const fault = loseResponses(dynamodb, "UpdateItemCommand");

    const first = await pollOnce(world.sqs, { queueUrl: termination.url, queueArn: termination.arn, batchSize: 1 }, terminationHandler());
    fault.remove();
    await world.send(termination, body);
    const duplicate = await pollOnce(world.sqs, { queueUrl: termination.url, queueArn: termination.arn, batchSize: 1 }, terminationHandler());

    expect(fault.lost, "the fault fired").to.equal(1);
    expect(first?.response.batchItemFailures).to.deep.equal([]);
    expect(duplicate?.response.batchItemFailures).to.deep.equal([]);
    expect(
      metrics.named("JobDuration").map((m) => m.dimensions),
      "one set of metrics",
    ).to.deep.equal([{ Status: "failure" }]);
    expect(metrics.named("JobFailure").map((m) => m.dimensions)).to.deep.equal([{ Error: "exit_2" }]);
    expect(logger.withStep("job_marked_complete")).to.have.length(1);
    expect(logger.withStep("job_marked_complete")[0]?.fields).to.include({ job_id: "lost-1", recovered: true });
    expect(logger.withStep("job_already_complete")[0]?.fields).to.include({ completed_by: messageId, redelivery: false });
    const item = (await dynamodb.send(new GetItemCommand({ TableName: TABLE, Key: { job_id: { S: "lost-1" } }, ConsistentRead: true }))).Item;
    expect(item).to.deep.include({ status: { S: "failed" }, completed_by: { S: messageId } });
  });

  it("a malformed termination message is quarantined in the termination DLQ", async () => {
    await world.send(termination, JSON.stringify({ job_id: "1" }));

    await pollOnce(world.sqs, { queueUrl: termination.url, queueArn: termination.arn }, terminationHandler());

    const [parked] = await world.receiveAll(terminationDlq);
    expect(parked?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(/instance_id/);
    expect(await world.depth(termination)).to.deep.equal({ visible: 0, notVisible: 0 });
  });

  it("orphaned_instances terminates an old orphan and keeps one with an active job, a young one, an unmanaged one and another stack's", async () => {
    const managed = { [MANAGED_TAG.key]: MANAGED_TAG.value, [ENVIRONMENT_TAG]: "dev" };
    const orphan = await launch(managed);
    const busy = await launch(managed);
    const unmanaged = await launch({ Name: "someone-else" });
    // prod's fleet in the same account: managed, old, no job in dev's table. Not dev's to sweep.
    const prods = await launch({ [MANAGED_TAG.key]: MANAGED_TAG.value, [ENVIRONMENT_TAG]: "prod" });
    // moto stamps LaunchTime with the current second; a young instance must launch a second later.
    await new Promise((r) => setTimeout(r, 1100));
    const young = await launch(managed);
    expect(young.launchTime.getTime()).to.be.greaterThan(busy.launchTime.getTime());
    await dynamodb.send(new PutItemCommand({ TableName: TABLE, Item: { job_id: { S: "active" }, status: { S: "running" }, instance_id: { S: busy.id } } }));
    await dynamodb.send(
      new PutItemCommand({
        TableName: TABLE,
        Item: { job_id: { S: "done" }, status: { S: "completed" }, instance_id: { S: orphan.id }, completed_at: { S: "2025-11-25T10:00:00Z" } },
      }),
    );
    // The cutoff (now − 60 − 10 min) falls just before the young instance's launch.
    const now = new Date(young.launchTime.getTime() - 500 + 70 * 60_000);

    const run = await runHousekeeping("orphaned_instances", {}, () => now);

    expect(run).to.not.equal(null);
    expect(await state(orphan.id)).to.equal("terminated");
    expect(await state(busy.id)).to.equal("running");
    expect(await state(young.id)).to.equal("running");
    expect(await state(unmanaged.id)).to.equal("running");
    expect(await state(prods.id)).to.equal("running");
    expect(metrics.named("OrphanedInstancesTerminated").map((m) => m.value)).to.deep.equal([1]);
    expect(logger.withStep("orphan_skipped_active_job")[0]?.fields).to.include({ instance_id: busy.id });
  });

  it("stale_ssm cleans 25 stale parameters across pages and keeps a live instance's", async () => {
    const live = (await launch({ [MANAGED_TAG.key]: MANAGED_TAG.value, [ENVIRONMENT_TAG]: "dev" })).id;
    const gone = Array.from({ length: 25 }, (_, i) => `i-${(0xabc000 + i).toString(16).padStart(17, "0")}`);
    for (const id of [live, ...gone]) {
      await world.ssm.send(new PutParameterCommand({ Name: `/runs-fleet/dev/runners/${id}/config`, Value: "{}", Type: "String" }));
    }

    await runHousekeeping("stale_ssm");

    const left = (await world.ssm.send(new GetParametersByPathCommand({ Path: "/runs-fleet/dev/runners", Recursive: true }))).Parameters ?? [];
    expect(left.map((p) => p.Name)).to.deep.equal([`/runs-fleet/dev/runners/${live}/config`]);
    expect(metrics.named("SSMParametersDeleted").map((m) => m.value)).to.deep.equal([25]);
    // moto's NextToken is an offset that deletions shift: complete only after a pass that deleted nothing.
    expect(logger.withStep("housekeeping_task_completed")[0]?.fields).to.include({ deleted: 25, stale: 25, complete: true });
  });

  it("old_jobs deletes 60 jobs completed before the cutoff through the GSI, and nothing else", async () => {
    const statuses = ["completed", "failed", "timeout", "interrupted"];
    const old = "2025-01-01T00:00:00Z";
    const recent = new Date(Date.now() - 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const items = [
      ...Array.from({ length: 60 }, (_, i) => ({ job_id: `old-${i}`, status: statuses[i % 4]!, completed_at: old })),
      ...Array.from({ length: 5 }, (_, i) => ({ job_id: `recent-${i}`, status: "completed", completed_at: recent })),
    ];
    for (let i = 0; i < items.length; i += 25) {
      await dynamodb.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [TABLE]: items.slice(i, i + 25).map((it) => ({
              PutRequest: {
                Item: { job_id: { S: it.job_id }, status: { S: it.status }, completed_at: { S: it.completed_at }, instance_id: { S: "i-0123456789abcdef0" } },
              },
            })),
          },
        }),
      );
    }
    await dynamodb.send(new PutItemCommand({ TableName: TABLE, Item: { job_id: { S: "running-1" }, status: { S: "running" } } }));

    await runHousekeeping("old_jobs");

    const remaining = ((await dynamodb.send(new ScanCommand({ TableName: TABLE }))).Items ?? []).map((i) => i.job_id?.S).sort();
    expect(remaining).to.deep.equal(["recent-0", "recent-1", "recent-2", "recent-3", "recent-4", "running-1"]);
    expect(metrics.named("JobRecordsArchived").map((m) => m.value)).to.deep.equal([60]);
  });

  it("an unknown housekeeping task type is quarantined in the housekeeping DLQ", async () => {
    await world.send(housekeeping, JSON.stringify({ task_type: "defragment", timestamp: "2025-11-25T10:00:00Z", params: {} }));

    await pollOnce(world.sqs, { queueUrl: housekeeping.url, queueArn: housekeeping.arn }, housekeepingHandler());

    const [parked] = await world.receiveAll(housekeepingDlq);
    expect(parked?.MessageAttributes?.["quarantine-reason"]?.StringValue).to.match(/unknown task_type "defragment"/);
  });
});
