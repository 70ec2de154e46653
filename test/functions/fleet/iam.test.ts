import { BatchWriteItemCommand, QueryCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { DescribeInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand, DeleteParametersCommand, GetParametersByPathCommand } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { createHousekeepingHandler } from "../../../functions/fleet/housekeeping-handler";
import { HOUSEKEEPING_IAM_ACTIONS, TERMINATION_IAM_ACTIONS } from "../../../functions/fleet/iam";
import { createTerminationHandler } from "../../../functions/fleet/termination-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { housekeepingConfig, mockedClients, terminationConfig, terminationMessage } from "../helpers/fleet-deps";

type Harness = ReturnType<typeof mockedClients>;

/** "ssm:DeleteParameter" for every command the handler actually sent through the mocked clients. */
function actionsSent(t: Harness): string[] {
  const actions = new Set<string>();
  for (const [prefix, mock] of [
    ["dynamodb", t.dynamodbMock],
    ["ssm", t.ssmMock],
    ["sqs", t.sqsMock],
    ["ec2", t.ec2Mock],
  ] as const) {
    for (const call of mock.calls()) actions.add(`${prefix}:${call.args[0].constructor.name.replace(/Command$/, "")}`);
  }
  return [...actions];
}

describe("fleet IAM action lists match what the code calls", () => {
  it("termination handler: every path together sends exactly TERMINATION_IAM_ACTIONS", async () => {
    const t = mockedClients();
    t.dynamodbMock.on(UpdateItemCommand).resolves({});
    t.ssmMock.on(DeleteParameterCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    const handler = createTerminationHandler({ ...t.clients, logger: t.logger, metrics: t.metrics, config: terminationConfig() });

    await handler(sqsEvent(sqsRecord(terminationMessage()), sqsRecord("not json")));

    expect(actionsSent(t)).to.have.members([...TERMINATION_IAM_ACTIONS]);
  });

  it("housekeeping handler: the four tasks and quarantine together send exactly HOUSEKEEPING_IAM_ACTIONS", async () => {
    const t = mockedClients();
    const old = new Date(Date.now() - 86_400_000);
    t.ec2Mock.on(DescribeInstancesCommand).resolves({
      Reservations: [
        { Instances: [{ InstanceId: "i-0123456789abcdef0", LaunchTime: old, State: { Name: "running" }, Tags: [{ Key: "runs-fleet:pool", Value: "p" }] }] },
      ],
    });
    t.ec2Mock.on(TerminateInstancesCommand).resolves({});
    t.ssmMock.on(GetParametersByPathCommand).resolves({ Parameters: [{ Name: "/runs-fleet/dev/runners/i-00000000000000001/config", LastModifiedDate: old }] });
    t.ssmMock.on(DeleteParametersCommand).resolves({});
    t.dynamodbMock.on(QueryCommand).resolves({ Items: [{ job_id: { S: "j" } }], Count: 0 });
    t.dynamodbMock.on(BatchWriteItemCommand).resolves({});
    t.sqsMock.on(SendMessageCommand).resolves({});
    const config = housekeepingConfig({ pools: ["p"] });
    const handler = createHousekeepingHandler({ ...t.clients, logger: t.logger, metrics: t.metrics, config, now: () => new Date() });
    const msg = (task_type: string) => sqsRecord({ task_type, timestamp: "2025-11-25T10:00:00Z", params: {} });

    const response = await handler(sqsEvent(msg("orphaned_instances"), msg("stale_ssm"), msg("old_jobs"), msg("pool_audit"), msg("unknown")));

    expect(response.batchItemFailures).to.deep.equal([]);
    expect(actionsSent(t)).to.have.members([...HOUSEKEEPING_IAM_ACTIONS]);
    // The listing reads the runner path itself, and only it: the grant names that path (infra/parts/fleet.ts), nothing below.
    const paths = t.ssmMock.commandCalls(GetParametersByPathCommand).map((c) => c.args[0].input.Path);
    expect(paths.length).to.be.greaterThan(0);
    expect([...new Set(paths)]).to.deep.equal([config.runnerParameterPath]);
  });
});
