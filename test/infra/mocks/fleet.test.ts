import { expect } from "chai";
import { allowedActions, logsStatement, sqsEventSourceStatement } from "../../../infra/iam/document";
import type { PlanDocument } from "../../../plan/render";
import { HOUSEKEEPING_IAM_ACTIONS, TERMINATION_IAM_ACTIONS } from "../../../functions/fleet/iam";
import { cursorKey, SWEEP_CURSORS } from "../../../functions/fleet/tasks/cursor";
import { allowed, type RequestStatement } from "../helpers/iam-request";
import { useStackPlans } from "../helpers/run-plan";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";

type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: string | string[]; Condition?: unknown };

const statementsOf = (doc: PlanDocument, role: Res): Statement[] =>
  of(doc, "aws:iam/rolePolicy:RolePolicy")
    .filter((rp) => rp.dependencies.includes(role.urn))
    .flatMap((rp) => (rp.inputs.policy as { Statement: Statement[] }).Statement);
const actionsOf = (statements: Statement[]) => [...new Set(statements.filter((s) => s.Effect === "Allow").flatMap((s) => [s.Action].flat()))].sort();

/** Fleet consumers run outside the VPC: the poller's actions and log writes only. */
const PLATFORM_ACTIONS = allowedActions([sqsEventSourceStatement("queue"), logsStatement("log-group")]);
const TASKS = ["orphaned_instances", "stale_ssm", "old_jobs", "pool_audit"];
describe("the fleet part under Pulumi mocks (offline plan, both stacks)", function () {
  this.timeout(120_000);

  const stacks = useStackPlans();

  for (const stack of ["dev", "prod"]) {
    describe(`stack ${stack}`, () => {
      const doc = () => stacks[stack]!;

      it("has no mandatory violation", () => {
        expect(
          doc().violations.filter((v) => v.enforcementLevel === "mandatory"),
          JSON.stringify(doc().violations),
        ).to.deep.equal([]);
      });

      it("declares the termination and housekeeping queues, each redriving to its own DLQ after 3 receives", () => {
        for (const name of ["fleet-termination", "fleet-housekeeping"]) {
          const queue = named(doc(), "aws:sqs/queue:Queue", name);
          const dlq = named(doc(), "aws:sqs/queue:Queue", `${name}-dlq`);
          expect(queue.dependencies).to.include(dlq.urn);
          const redrive = JSON.parse(String(queue.inputs.redrivePolicy)) as { deadLetterTargetArn: string; maxReceiveCount: number };
          expect(redrive.maxReceiveCount).to.equal(3);
          expect(redrive.deadLetterTargetArn).to.match(new RegExp(`:${name}-dlq-`));
          expect(dlq.inputs.messageRetentionSeconds).to.equal(1_209_600);
          const alarms = of(doc(), "aws:cloudwatch/metricAlarm:MetricAlarm").filter((a) => a.dependencies.includes(dlq.urn));
          expect(alarms, `${name}-dlq alarm`).to.have.length(1);
        }
      });

      it("consumes each queue with a bounded, partial-batch Lambda mapping", () => {
        for (const [queue, fn] of [
          ["fleet-termination", "fleet-termination-consumer"],
          ["fleet-housekeeping", "fleet-housekeeping-consumer"],
        ] as const) {
          const mapping = named(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping", `${fn}-mapping`);
          expect(mapping.dependencies).to.include(named(doc(), "aws:sqs/queue:Queue", queue).urn);
          expect(mapping.dependencies).to.include(named(doc(), "aws:lambda/function:Function", fn).urn);
          expect(mapping.inputs.functionResponseTypes).to.deep.equal(["ReportBatchItemFailures"]);
          expect((mapping.inputs.scalingConfig as { maximumConcurrency: number }).maximumConcurrency).to.be.within(2, 1000);
        }
        expect(named(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping", "fleet-housekeeping-consumer-mapping").inputs.batchSize).to.equal(1);
        expect(named(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping", "fleet-termination-consumer-mapping").inputs.batchSize).to.equal(5);
      });

      it("schedules each housekeeping task to the housekeeping queue with the seed's message, a retry policy and the shared DLQ", () => {
        const housekeeping = named(doc(), "aws:sqs/queue:Queue", "fleet-housekeeping");
        const dlq = named(doc(), "aws:sqs/queue:Queue", "fleet-schedules-dlq");
        expect((dlq.inputs.tags as Record<string, string>)["encache:queue-role"]).to.equal("dlq");
        for (const task of TASKS) {
          const schedule = named(doc(), "aws:scheduler/schedule:Schedule", `fleet-${task.replace(/_/g, "-")}`);
          const target = schedule.inputs.target as { arn: string; input: string; retryPolicy: Record<string, number>; deadLetterConfig: { arn: string } };
          expect(schedule.dependencies).to.include.members([housekeeping.urn, dlq.urn]);
          expect(JSON.parse(target.input)).to.deep.equal({ task_type: task, timestamp: "<aws.scheduler.scheduled-time>", params: {} });
          expect(target.retryPolicy.maximumRetryAttempts).to.be.greaterThan(0);
          expect(target.deadLetterConfig.arn).to.match(/:fleet-schedules-dlq-/);
          expect(String(schedule.inputs.scheduleExpression)).to.match(/^rate\(/);
        }
      });

      it("declares the jobs table with its GSIs, TTL, PITR and the jobs marker", () => {
        const table = named(doc(), "aws:dynamodb/table:Table", "fleet-jobs");
        expect(table.inputs.hashKey).to.equal("job_id");
        expect(
          (table.inputs.globalSecondaryIndexes as Array<{ name: string; hashKey: string; rangeKey?: string }>).map((g) => [g.name, g.hashKey, g.rangeKey]),
        ).to.deep.equal([
          ["status-completed_at-index", "status", "completed_at"],
          ["instance_id-index", "instance_id", undefined],
          ["status-instance_id-index", "status", "instance_id"],
        ]);
        expect(table.inputs.ttl).to.deep.equal({ attributeName: "expires_at", enabled: true });
        expect(table.inputs.pointInTimeRecovery).to.deep.equal({ enabled: true });
        expect((table.inputs.tags as Record<string, string>)["encache:table-role"]).to.equal("jobs");
        expect(table.inputs.deletionProtectionEnabled).to.equal(stack === "prod");
      });

      it("gives each consumer's role exactly the actions its code calls, plus the poller's and log writes", () => {
        const termination = actionsOf(statementsOf(doc(), named(doc(), "aws:iam/role:Role", "fleet-termination-consumer-role")));
        const housekeeping = actionsOf(statementsOf(doc(), named(doc(), "aws:iam/role:Role", "fleet-housekeeping-consumer-role")));
        expect(termination).to.deep.equal([...new Set([...TERMINATION_IAM_ACTIONS, ...PLATFORM_ACTIONS])].sort());
        expect(housekeeping).to.deep.equal([...new Set([...HOUSEKEEPING_IAM_ACTIONS, ...PLATFORM_ACTIONS])].sort());
      });

      it("scopes TerminateInstances by the managed and environment tags, SSM to the stack's runner path and the table actions to the jobs table", () => {
        const statements = statementsOf(doc(), named(doc(), "aws:iam/role:Role", "fleet-housekeeping-consumer-role"));
        const terminate = statements.find((s) => [s.Action].flat().includes("ec2:TerminateInstances"))!;
        expect(terminate.Condition).to.deep.equal({
          StringEquals: { "aws:ResourceTag/runs-fleet:managed": "true", "aws:ResourceTag/encache:environment": stack },
        });
        expect(terminate.Resource).to.equal("arn:aws:ec2:us-east-1:123456789012:instance/*");
        const ssm = [...statements, ...statementsOf(doc(), named(doc(), "aws:iam/role:Role", "fleet-termination-consumer-role"))].filter((s) =>
          [s.Action].flat().some((a) => a.startsWith("ssm:")),
        );
        for (const r of ssm.flatMap((s) => [s.Resource].flat()))
          expect(r).to.match(new RegExp(`^arn:aws:ssm:us-east-1:123456789012:parameter/runs-fleet/${stack}/runners(/\\*)?$`));
        // Listing is authorised on the path the code lists (stale-ssm.ts: Path = the runner path), and nothing below it.
        const list = ssm.filter((s) => [s.Action].flat().includes("ssm:GetParametersByPath"));
        expect(list.map((s) => s.Resource)).to.deep.equal([`arn:aws:ssm:us-east-1:123456789012:parameter/runs-fleet/${stack}/runners`]);
        const tableArn = "arn:aws:dynamodb:us-east-1:123456789012:table/fleet-jobs-";
        for (const s of statements.filter((x) => [x.Action].flat().some((a) => a.startsWith("dynamodb:")))) {
          for (const r of [s.Resource].flat()) expect(r.startsWith(tableArn)).to.equal(true);
        }
      });

      // The roles as deployed, judged as IAM judges a request: its partition keys are dynamodb:LeadingKeys.
      describe("the sweep cursors share the jobs table: only the cursor writer reaches them", () => {
        const role = (name: string) => statementsOf(doc(), named(doc(), "aws:iam/role:Role", `fleet-${name}-consumer-role`));
        const tableArn = () => {
          const tables = role("termination").flatMap((s) => (s.Sid === "CompleteJob" ? [s.Resource].flat() : []));
          expect(tables).to.have.length(1);
          return tables[0]!;
        };
        const cursors = SWEEP_CURSORS.map(cursorKey);
        const cases: Array<[string, "termination" | "housekeeping", string, string[], boolean]> = [
          ["the termination consumer completes a job", "termination", "dynamodb:UpdateItem", ["0f6c1a2e-job"], true],
          ...cursors.map((k): [string, "termination", string, string[], boolean] => [
            `the termination consumer writes cursor ${k}`,
            "termination",
            "dynamodb:UpdateItem",
            [k],
            false,
          ]),
          ["the old-jobs sweep deletes a batch of jobs", "housekeeping", "dynamodb:BatchWriteItem", ["job-1", "job-2"], true],
          ...cursors.map((k): [string, "housekeeping", string, string[], boolean] => [
            `the old-jobs sweep's batch also names cursor ${k}`,
            "housekeeping",
            "dynamodb:BatchWriteItem",
            ["job-1", k],
            false,
          ]),
          ...cursors.map((k): [string, "housekeeping", string, string[], boolean] => [
            `the sweep saves cursor ${k}`,
            "housekeeping",
            "dynamodb:PutItem",
            [k],
            true,
          ]),
          ...cursors.map((k): [string, "housekeeping", string, string[], boolean] => [
            `the sweep reads cursor ${k}`,
            "housekeeping",
            "dynamodb:GetItem",
            [k],
            true,
          ]),
          ["the cursor writer puts a job item", "housekeeping", "dynamodb:PutItem", ["job-1"], false],
          ["the housekeeping consumer updates a cursor", "housekeeping", "dynamodb:UpdateItem", [cursorKey("stale_ssm")], false],
        ];
        for (const [label, who, action, keys, expected] of cases) {
          it(`${expected ? "allows" : "denies"}: ${label}`, () => {
            // Prepare
            const request = { action, resource: tableArn(), context: { "dynamodb:LeadingKeys": keys } };
            // Act
            const verdict = allowed(role(who) as RequestStatement[], request);
            // Assess
            expect(verdict).to.equal(expected);
          });
        }
      });

      it("wires the seed's env vars", () => {
        const env = (name: string) =>
          (named(doc(), "aws:lambda/function:Function", name).inputs.environment as { variables: Record<string, string> }).variables;
        const url = (name: string) => new RegExp(`^https://sqs\\.us-east-1\\.amazonaws\\.com/123456789012/${name}-[0-9a-f]{7}$`);
        const t = env("fleet-termination-consumer");
        const h = env("fleet-housekeeping-consumer");
        expect(t.RUNS_FLEET_TERMINATION_QUEUE_URL).to.match(url("fleet-termination"));
        expect(t.RUNS_FLEET_TERMINATION_DLQ_URL).to.match(url("fleet-termination-dlq"));
        expect(h.RUNS_FLEET_HOUSEKEEPING_QUEUE_URL).to.match(url("fleet-housekeeping"));
        expect(h.RUNS_FLEET_HOUSEKEEPING_DLQ_URL).to.match(url("fleet-housekeeping-dlq"));
        for (const e of [t, h]) {
          expect(e.RUNS_FLEET_JOBS_TABLE).to.match(/^fleet-jobs-/);
          expect(e).to.include({ RUNS_FLEET_JOB_RETENTION_DAYS: "7", POWERTOOLS_METRICS_NAMESPACE: "RunsFleet" });
        }
        expect(JSON.parse(h.RUNS_FLEET_POOLS!)).to.be.an("array").that.includes("default");
        expect(Number(h.RUNS_FLEET_MAX_RUNTIME_MINUTES)).to.be.greaterThan(0);
      });
    });
  }

  it("differs between dev and prod where real stacks do", () => {
    const pick = (stack: string) => {
      const d = stacks[stack]!;
      return {
        orphans: named(d, "aws:scheduler/schedule:Schedule", "fleet-orphaned-instances").inputs.scheduleExpression,
        terminationConcurrency: (
          named(d, "aws:lambda/eventSourceMapping:EventSourceMapping", "fleet-termination-consumer-mapping").inputs.scalingConfig as {
            maximumConcurrency: number;
          }
        ).maximumConcurrency,
        housekeepingTimeout: named(d, "aws:lambda/function:Function", "fleet-housekeeping-consumer").inputs.timeout,
        deletionProtection: named(d, "aws:dynamodb/table:Table", "fleet-jobs").inputs.deletionProtectionEnabled,
      };
    };
    expect(pick("dev")).to.deep.equal({ orphans: "rate(30 minutes)", terminationConcurrency: 2, housekeepingTimeout: 300, deletionProtection: false });
    expect(pick("prod")).to.deep.equal({ orphans: "rate(10 minutes)", terminationConcurrency: 10, housekeepingTimeout: 900, deletionProtection: true });
  });
});
