/**
 * `npx tsx scripts/bench-fleet.ts`: the fleet part's numbers. Bundle sizes, AWS calls per
 * termination message (fresh, duplicate, malformed), AWS calls per housekeeping run for fixed
 * scenarios, and termination handler throughput. Handlers run on aws-sdk-client-mock stubs, so
 * call counts are exact and throughput measures our code, not the network.
 */
import * as zlib from "node:zlib";
import { BatchWriteItemCommand, QueryCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand, DeleteParametersCommand, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import { bundleFunction } from "../infra/bundle";
import { FLEET_ENTRIES } from "../infra/parts/fleet";
import { createHousekeepingHandler } from "../functions/fleet/housekeeping-handler";
import { createTerminationHandler } from "../functions/fleet/termination-handler";
import { awsError, housekeepingConfig, mockedClients, terminationConfig, terminationMessage } from "../test/functions/helpers/fleet-deps";
import { sqsEvent, sqsRecord } from "../test/functions/helpers/sqs-events";

type Harness = ReturnType<typeof mockedClients>;

function callsByAction(t: Harness): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [prefix, mock] of [
    ["dynamodb", t.dynamodbMock],
    ["ssm", t.ssmMock],
    ["sqs", t.sqsMock],
    ["ec2", t.ec2Mock],
  ] as const) {
    for (const call of mock.calls()) {
      const action = `${prefix}:${call.args[0].constructor.name.replace(/Command$/, "")}`;
      out[action] = (out[action] ?? 0) + 1;
    }
  }
  return out;
}
const total = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
const describe = (calls: Record<string, number>) =>
  Object.entries(calls)
    .map(([a, n]) => `${a}×${n}`)
    .join(", ");

function terminationHarness(duplicate: boolean) {
  const t = mockedClients();
  if (duplicate) t.dynamodbMock.on(UpdateItemCommand).rejects(awsError("ConditionalCheckFailedException"));
  else t.dynamodbMock.on(UpdateItemCommand).resolves({});
  t.ssmMock.on(DeleteParameterCommand).resolves({});
  t.sqsMock.on(SendMessageCommand).resolves({});
  return { t, handler: createTerminationHandler({ ...t.clients, logger: t.logger, metrics: t.metrics, config: terminationConfig() }) };
}

async function terminationCalls(): Promise<Array<[string, string]>> {
  const rows: Array<[string, string]> = [];
  for (const [label, body, duplicate] of [
    ["fresh completion", terminationMessage(), false],
    ["duplicate delivery", terminationMessage(), true],
    ["malformed (quarantined)", "{nope", false],
  ] as const) {
    const { t, handler } = terminationHarness(duplicate);
    await handler(sqsEvent(sqsRecord(body)));
    const calls = callsByAction(t);
    rows.push([label, `${total(calls)} (${describe(calls)}); metrics emitted: ${t.metrics.emitted.length}`]);
  }
  return rows;
}

async function housekeepingCalls(): Promise<Array<[string, string]>> {
  const old = new Date(Date.now() - 86_400_000);
  const scenarios: Array<{ label: string; task: string; arrange: (t: Harness) => void }> = [
    {
      label: "orphaned_instances: 120 old instances, none busy",
      task: "orphaned_instances",
      arrange: (t) => {
        t.ec2Mock.on(DescribeInstancesCommand).resolves({
          Reservations: [{ Instances: Array.from({ length: 120 }, (_, i) => ({ InstanceId: `i-${i.toString(16).padStart(17, "0")}`, LaunchTime: old })) }],
        });
        t.ec2Mock.on(TerminateInstancesCommand).resolves({});
        t.dynamodbMock.on(QueryCommand).resolves({ Count: 0 });
      },
    },
    {
      label: "stale_ssm: 25 parameters, all instances gone",
      task: "stale_ssm",
      arrange: (t) => {
        const params = Array.from({ length: 25 }, (_, i) => ({
          Name: `/runs-fleet/runners/i-${i.toString(16).padStart(17, "0")}/config`,
          LastModifiedDate: old,
        }));
        // A cursor NextToken (after the last name returned) over a path that deletions shrink, as SSM's.
        t.ssmMock.on(GetParametersByPathCommand).callsFake((input: { NextToken?: string }) => {
          const after = input.NextToken;
          const rest = after === undefined ? params : params.filter((p) => p.Name > after);
          const page = rest.slice(0, 10);
          return { Parameters: page, NextToken: rest.length > 10 ? page.at(-1)!.Name : undefined };
        });
        t.ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
        t.ssmMock.on(DeleteParametersCommand).callsFake((input: { Names: string[] }) => {
          for (const n of input.Names)
            params.splice(
              params.findIndex((p) => p.Name === n),
              1,
            );
          return { DeletedParameters: input.Names };
        });
      },
    },
    {
      label: "old_jobs: 60 old jobs in one status",
      task: "old_jobs",
      arrange: (t) => {
        t.dynamodbMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, { S: string }> }) => ({
          Items: input.ExpressionAttributeValues[":status"]!.S === "completed" ? Array.from({ length: 60 }, (_, i) => ({ job_id: { S: `j${i}` } })) : [],
        }));
        t.dynamodbMock.on(BatchWriteItemCommand).resolves({});
      },
    },
  ];
  const rows: Array<[string, string]> = [];
  for (const s of scenarios) {
    const t = mockedClients();
    s.arrange(t);
    const handler = createHousekeepingHandler({ ...t.clients, logger: t.logger, metrics: t.metrics, config: housekeepingConfig(), now: () => new Date() });
    await handler(sqsEvent(sqsRecord({ task_type: s.task, timestamp: new Date().toISOString(), params: {} })));
    const calls = callsByAction(t);
    rows.push([s.label, `${total(calls)} (${describe(calls)})`]);
  }
  return rows;
}

async function terminationThroughput(): Promise<string> {
  const { handler } = terminationHarness(false);
  const batches = 400;
  const batchSize = 5;
  const events = Array.from({ length: batches }, () =>
    sqsEvent(...Array.from({ length: batchSize }, (_, i) => sqsRecord(terminationMessage({ job_id: `j${i}` })))),
  );
  await handler(events[0]!);
  const start = process.hrtime.bigint();
  for (const e of events) await handler(e);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return `${Math.round((batches * batchSize) / seconds)} messages/s (batches of ${batchSize}, mocked AWS, one process)`;
}

async function main(): Promise<void> {
  const rows: Array<[string, string]> = [];
  for (const entry of Object.values(FLEET_ENTRIES)) {
    const b = bundleFunction(entry);
    rows.push([`bundle ${entry}`, `${(b.bytes / 1024).toFixed(1)} KiB raw, ${(zlib.gzipSync(b.code, { level: 9 }).byteLength / 1024).toFixed(1)} KiB gzip`]);
  }
  for (const [label, value] of await terminationCalls()) rows.push([`AWS calls / termination message, ${label}`, value]);
  for (const [label, value] of await housekeepingCalls()) rows.push([`AWS calls / run, ${label}`, value]);
  rows.push(["termination handler throughput", await terminationThroughput()]);
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(`${"measure".padEnd(width)}  value`);
  console.log(`${"-".repeat(width)}  -----`);
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
