import { QueryCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import type * as HousekeepingEntry from "../../../functions/fleet/housekeeping";
import { createHousekeepingHandler } from "../../../functions/fleet/housekeeping-handler";
import type { FleetMetrics } from "../../../functions/fleet/telemetry";
import type * as TerminationEntry from "../../../functions/fleet/termination";
import { createTerminationHandler } from "../../../functions/fleet/termination-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { contextWithRemaining, housekeepingConfig, mockedClients, terminationConfig, terminationMessage } from "../helpers/fleet-deps";
import { sampleEnv } from "../helpers/env-samples";

const URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";
/** What the entry modules parse at import, plus the service name Powertools would turn into a dimension. */
const ENV: Record<string, string> = {
  ...sampleEnv("fleet termination"),
  ...sampleEnv("fleet housekeeping"),
  POWERTOOLS_SERVICE_NAME: "fleet-under-test",
  POWERTOOLS_METRICS_NAMESPACE: "RunsFleet",
  RUNS_FLEET_JOBS_TABLE: "fleet-jobs",
  RUNS_FLEET_TERMINATION_QUEUE_URL: URL,
  RUNS_FLEET_TERMINATION_DLQ_URL: URL,
  RUNS_FLEET_HOUSEKEEPING_QUEUE_URL: URL,
  RUNS_FLEET_HOUSEKEEPING_DLQ_URL: URL,
  RUNS_FLEET_RUNNER_PARAMETER_PATH: "/runs-fleet/dev/runners",
  RUNS_FLEET_ENVIRONMENT: "dev",
};

interface EmfLine {
  _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][]; Metrics: Array<{ Name: string }> }> };
}

/** Runs `act` with stdout captured and returns, per metric name, the dimension sets of its EMF lines. */
async function emfDimensions(act: () => Promise<unknown>): Promise<Record<string, string[][]>> {
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    await act();
  } finally {
    process.stdout.write = write;
  }
  const byName: Record<string, string[][]> = {};
  for (const line of chunks.join("").split("\n")) {
    if (!line.includes('"_aws"')) continue;
    for (const directive of (JSON.parse(line) as EmfLine)._aws.CloudWatchMetrics) {
      for (const m of directive.Metrics) byName[m.Name] = directive.Dimensions;
    }
  }
  return byName;
}

describe("fleet entry modules emit EMF in the seed's dimension sets (no Powertools service dimension)", () => {
  const saved: Record<string, string | undefined> = {};
  let termination: typeof TerminationEntry;
  let housekeeping: typeof HousekeepingEntry;

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    // Dynamic: the entry modules parse process.env at import, as at a Lambda cold start.
    termination = await import("../../../functions/fleet/termination.js");
    housekeeping = await import("../../../functions/fleet/housekeeping.js");
  });

  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("termination: JobDuration {Status}, JobSuccess {}, JobFailure {Error}", async () => {
    const t = mockedClients();
    t.dynamodbMock.on(UpdateItemCommand).resolves({});
    t.ssmMock.on(DeleteParameterCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    const metrics: FleetMetrics = termination.defaultDeps(ENV).metrics;
    const handler = createTerminationHandler({ ...t.clients, logger: t.logger, metrics, config: terminationConfig() });

    const success = await emfDimensions(() => handler(sqsEvent(sqsRecord(terminationMessage({ status: "success" })))));
    const failure = await emfDimensions(() =>
      handler(sqsEvent(sqsRecord(terminationMessage({ job_id: "2", status: "failure", exit_code: 2, error: "boom" })))),
    );

    expect(success).to.deep.equal({ JobDuration: [["Status"]], JobSuccess: [] });
    expect(failure).to.deep.equal({ JobDuration: [["Status"]], JobFailure: [["Error"]] });
  });

  it("housekeeping: Pool* {PoolName}", async () => {
    const t = mockedClients();
    t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    t.sqsMock.on(SendMessageCommand).resolves({});
    const metrics: FleetMetrics = housekeeping.defaultDeps(ENV).metrics;
    const handler = createHousekeepingHandler({
      ...t.clients,
      logger: t.logger,
      metrics,
      config: housekeepingConfig({ pools: ["default"] }),
      now: () => new Date("2025-11-25T12:00:00Z"),
    });
    const message = { task_type: "pool_audit", timestamp: "2025-11-25T12:00:00Z", params: {} };

    const emitted = await emfDimensions(() =>
      handler(
        sqsEvent(sqsRecord(message)),
        contextWithRemaining(() => 600_000),
      ),
    );

    expect(emitted).to.deep.equal({ PoolIdleCost: [["PoolName"]], PoolComputeCost: [["PoolName"]], PoolUtilization: [["PoolName"]] });
  });

  it("housekeeping: a task's stored metric (JobRecordsArchived) carries no dimension", async () => {
    // Prepare: old_jobs over an empty table, with the entry module's metrics.
    const t = mockedClients();
    t.dynamodbMock.on(QueryCommand).resolves({ Items: [], Count: 0 });
    t.sqsMock.on(SendMessageCommand).resolves({});
    const metrics: FleetMetrics = housekeeping.defaultDeps(ENV).metrics;
    const handler = createHousekeepingHandler({
      ...t.clients,
      logger: t.logger,
      metrics,
      config: housekeepingConfig(),
      now: () => new Date("2025-11-25T12:00:00Z"),
    });
    const message = { task_type: "old_jobs", timestamp: "2025-11-25T12:00:00Z", params: {} };
    // Act
    const emitted = await emfDimensions(() =>
      handler(
        sqsEvent(sqsRecord(message)),
        contextWithRemaining(() => 600_000),
      ),
    );
    // Assess
    expect(emitted["JobRecordsArchived"]).to.deep.equal([]);
  });

  it("housekeeping's default clock reads the current time", () => {
    // Act
    const before = Date.now();
    const now = housekeeping.defaultDeps(ENV).now();
    // Assess
    expect(now).to.be.instanceOf(Date);
    expect(now.getTime()).to.be.within(before, Date.now());
  });
});
