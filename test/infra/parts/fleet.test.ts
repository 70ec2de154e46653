import { expect } from "chai";
import { validateTableArgs } from "../../../infra/components/table";
import { allowedActions } from "../../../infra/iam/document";
import { HOUSEKEEPING_SCHEDULES } from "../../../infra/parts/fleet.config";
import { fleetStatements, housekeepingMessage, jobsTableSpec } from "../../../infra/parts/fleet";
import { HOUSEKEEPING_IAM_ACTIONS, TERMINATION_IAM_ACTIONS } from "../../../functions/fleet/iam";
import { TASK_TYPES } from "../../../functions/fleet/messages";

describe("fleet part pure pieces", () => {
  it("schedules exactly the four task types of the seed", () => {
    expect(HOUSEKEEPING_SCHEDULES.map((s) => s.taskType)).to.deep.equal([...TASK_TYPES]);
  });

  it("the scheduled message is the seed's {task_type, timestamp, params} with Scheduler's time", () => {
    expect(housekeepingMessage("old_jobs")).to.deep.equal({ task_type: "old_jobs", timestamp: "<aws.scheduler.scheduled-time>", params: {} });
  });

  it("the jobs table spec is valid: job_id key, status/completed_at, instance_id and status/instance_id GSIs, TTL on expires_at", () => {
    const spec = jobsTableSpec();
    expect(() => validateTableArgs(spec)).to.not.throw();
    expect(spec.hashKey).to.equal("job_id");
    expect(spec.ttlAttribute).to.equal("expires_at");
    expect(spec.globalSecondaryIndexes?.map((g) => [g.name, g.hashKey, g.rangeKey])).to.deep.equal([
      ["status-completed_at-index", "status", "completed_at"],
      ["instance_id-index", "instance_id", undefined],
      ["status-instance_id-index", "status", "instance_id"],
    ]);
  });

  const names = {
    managedTagKey: "runs-fleet:managed",
    managedTagValue: "true",
    poolTagKey: "runs-fleet:pool",
    runnerParameterPath: "/runs-fleet/dev/runners",
    metricsNamespace: "RunsFleet",
  };
  const scope = {
    region: "us-east-1",
    accountId: "123456789012",
    tableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/jobs",
    terminationDlqArn: "arn:aws:sqs:us-east-1:123456789012:termination-dlq",
    housekeepingDlqArn: "arn:aws:sqs:us-east-1:123456789012:housekeeping-dlq",
    names,
    environment: "dev",
  };
  const terminationStatements = (s: typeof scope) => fleetStatements(s).termination;
  const housekeepingStatements = (s: typeof scope) => fleetStatements(s).housekeeping;
  const terminateManaged = (s: typeof scope) => housekeepingStatements(s).find((st) => st.Sid === "TerminateManagedInstances")!;

  it("the termination role grants exactly what its code calls", () => {
    expect(allowedActions(terminationStatements(scope))).to.deep.equal([...TERMINATION_IAM_ACTIONS].sort());
  });

  it("the housekeeping role grants exactly what its code calls", () => {
    expect(allowedActions(housekeepingStatements(scope))).to.deep.equal([...HOUSEKEEPING_IAM_ACTIONS].sort());
  });

  it("TerminateInstances is conditioned on the configured managed tag and the stack's environment tag", () => {
    expect(terminateManaged(scope).Condition).to.deep.equal({
      StringEquals: { "aws:ResourceTag/runs-fleet:managed": "true", "aws:ResourceTag/encache:environment": "dev" },
    });
    const renamed = { ...scope, environment: "prod", names: { ...names, managedTagKey: "encache-dev:managed", managedTagValue: "yes" } };
    expect(terminateManaged(renamed).Condition).to.deep.equal({
      StringEquals: { "aws:ResourceTag/encache-dev:managed": "yes", "aws:ResourceTag/encache:environment": "prod" },
    });
  });
});
