import { expect } from "chai";
import { allowedActions, logsStatement, sqsEventSourceStatement } from "../../../infra/iam/document";
import { MOCK_ACCOUNT_ID } from "../../../plan/mocks";
import type { PlanDocument } from "../../../plan/render";
import { LAUNCHER_IAM_ACTIONS } from "../../../functions/retraining/iam";
import { stackPlan } from "../helpers/run-plan";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";

type Doc = { Statement: Array<{ Sid?: string; Effect: string; Action: string[]; Resource: string | string[] }> };

const children = (doc: PlanDocument, parent: Res, type: string) => doc.resources.filter((r) => r.parent === parent.urn && r.type === type);

const expected = {
  dev: {
    maxConcurrency: 2,
    maxTasks: "2",
    deferDelay: "30",
    useSpot: "true",
    models: ["PascalStrategy"],
    deletionProtection: false,
    cpu: "1024",
    memory: "2048",
  },
  prod: {
    maxConcurrency: 5,
    maxTasks: "5",
    deferDelay: "120",
    useSpot: "false",
    models: ["PascalStrategy", "PascalStrategy-eth"],
    deletionProtection: true,
    cpu: "2048",
    memory: "8192",
  },
} as const;

describe("the retraining part in the program under Pulumi mocks (both stacks)", function () {
  this.timeout(120_000);

  for (const stack of ["dev", "prod"] as const) {
    describe(stack, () => {
      let doc: PlanDocument;
      const e = expected[stack];
      before(async () => {
        const { run, doc: d } = await stackPlan(stack);
        expect(run.code, run.stderr).to.equal(0);
        doc = d;
      });

      it("has no mandatory violation and no violation on a retraining resource", () => {
        expect(doc.summary.mandatory).to.equal(0);
        expect(doc.violations.filter((v) => v.urn?.includes("retraining"))).to.deep.equal([]);
      });

      it("runs on the shared cluster: Container Insights and FARGATE + FARGATE_SPOT, and declares no second cluster", () => {
        const clusters = of(doc, "aws:ecs/cluster:Cluster");
        expect(clusters.map((c) => c.name)).to.deep.equal(["platform-cluster"]);
        expect(clusters[0]?.inputs.settings).to.deep.equal([{ name: "containerInsights", value: "enabled" }]);
        expect(named(doc, "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders", "platform-cluster-capacity").inputs.capacityProviders).to.deep.equal([
          "FARGATE",
          "FARGATE_SPOT",
        ]);
      });

      it("declares the retraining queue as the seed configures it, with a 14-day DLQ after 3 receives", () => {
        const q = named(doc, "aws:sqs/queue:Queue", "retraining");
        expect(q.inputs).to.include({ visibilityTimeoutSeconds: 600, messageRetentionSeconds: 86_400 });
        const redrive = JSON.parse(String(q.inputs.redrivePolicy)) as { maxReceiveCount: number; deadLetterTargetArn: string };
        expect(redrive.maxReceiveCount).to.equal(3);
        expect(named(doc, "aws:sqs/queue:Queue", "retraining-dlq").inputs.messageRetentionSeconds).to.equal(1_209_600);
      });

      it("maps the launcher with batch 10, window 5, partial batch responses and a maximum concurrency", () => {
        const m = named(doc, "aws:lambda/eventSourceMapping:EventSourceMapping", "retraining-launcher-mapping");
        expect(m.inputs).to.deep.include({
          batchSize: 10,
          maximumBatchingWindowInSeconds: 5,
          functionResponseTypes: ["ReportBatchItemFailures"],
          scalingConfig: { maximumConcurrency: e.maxConcurrency },
        });
      });

      it("gives the launcher 30 s, 256 MB and every env var of the seed's table", () => {
        const fn = named(doc, "aws:lambda/function:Function", "retraining-launcher");
        expect(fn.inputs).to.include({ timeout: 30, memorySize: 256 });
        const env = (fn.inputs.environment as { variables: Record<string, string> }).variables;
        expect(env).to.include({
          ECS_TASK_DEFINITION_FAMILY: "tradai-strategy-generic",
          ECS_CONTAINER_NAME: "strategy",
          USE_SPOT: e.useSpot,
          MAX_CONCURRENT_TASKS: e.maxTasks,
          DEFER_DELAY_SECONDS: e.deferDelay,
          ENVIRONMENT: stack,
          POWERTOOLS_METRICS_NAMESPACE: "Encache/RetrainingPipeline",
        });
        expect(env.ECS_TASK_DEFINITION_ARN).to.match(new RegExp(`task-definition/tradai-strategy-generic-${stack}:\\d+$`));
        for (const key of ["ECS_CLUSTER", "ECS_SUBNETS", "ECS_SECURITY_GROUPS", "RETRAINING_STATE_TABLE", "QUARANTINE_QUEUE_URL"])
          expect(env[key], key).to.be.a("string").and.not.equal("");
        expect(env.ECS_SUBNETS.split(",")).to.have.length.of.at.least(2);
        // Physical names carry the engine's suffix: the retraining queue itself, not its DLQ.
        expect(env.RETRAINING_QUEUE_URL, "deferred copies go back to the launcher's own queue").to.match(
          new RegExp(`/${MOCK_ACCOUNT_ID}/retraining-[0-9a-f]{7}$`),
        );
        expect(env.QUARANTINE_QUEUE_URL).to.match(new RegExp(`/${MOCK_ACCOUNT_ID}/retraining-dlq-[0-9a-f]{7}$`));
      });

      it("declares the generic strategy task definition with its own roles, logs and container-level memory", () => {
        const td = named(doc, "aws:ecs/taskDefinition:TaskDefinition", "retraining-strategy");
        expect(td.inputs).to.include({ family: `tradai-strategy-generic-${stack}`, networkMode: "awsvpc", cpu: e.cpu, memory: e.memory });
        const [container] = JSON.parse(String(td.inputs.containerDefinitions)) as Array<{
          name: string;
          memory: number;
          logConfiguration: { logDriver: string };
        }>;
        expect(container).to.deep.include({ name: "strategy", memory: Number(e.memory) });
        expect(container?.logConfiguration.logDriver).to.equal("awslogs");
        const task = named(doc, "aws:iam/role:Role", "retraining-strategy-task");
        const execution = named(doc, "aws:iam/role:Role", "retraining-strategy-execution");
        expect(td.dependencies).to.include.members([task.urn, execution.urn]);
      });

      it("keeps state in a model_name table with PITR, deletion-protected in prod only", () => {
        const t = named(doc, "aws:dynamodb/table:Table", "retraining-state");
        expect(t.inputs).to.deep.include({ hashKey: "model_name", pointInTimeRecovery: { enabled: true }, deletionProtectionEnabled: e.deletionProtection });
      });

      it("keeps one launch intent per origin message in its own table: TTL on expires_at, PITR, encrypted, deletion-protected in prod only, tagged", () => {
        const t = named(doc, "aws:dynamodb/table:Table", "retraining-intent");
        expect(t.inputs).to.deep.include({
          hashKey: "origin_message_id",
          attributes: [{ name: "origin_message_id", type: "S" }],
          ttl: { attributeName: "expires_at", enabled: true },
          pointInTimeRecovery: { enabled: true },
          serverSideEncryption: { enabled: true },
          deletionProtectionEnabled: e.deletionProtection,
        });
        expect(t.protect).to.equal(e.deletionProtection);
        expect(t.inputs.tags).to.deep.include({ "encache:environment": stack });
      });

      it("passes the intent table, its retention (queue 1 d + DLQ 14 d + a redrive's 1 d + 1 d) and maxReceiveCount to the launcher", () => {
        const env = (named(doc, "aws:lambda/function:Function", "retraining-launcher").inputs.environment as { variables: Record<string, string> }).variables;
        const table = named(doc, "aws:dynamodb/table:Table", "retraining-intent");
        expect(env.RETRAINING_INTENT_TABLE)
          .to.be.a("string")
          .and.match(/^retraining-intent/);
        expect(table.inputs.name ?? env.RETRAINING_INTENT_TABLE).to.be.a("string");
        expect(env).to.include({ RETRAINING_INTENT_RETENTION_SECONDS: String(17 * 86_400), MAX_RECEIVE_COUNT: "3" });
      });

      it("grants on the intent table exactly what intent.ts calls, on that table only", () => {
        const consumer = named(doc, "encache:compute:QueueConsumer", "retraining-launcher");
        const [policy] = children(doc, consumer, "aws:iam/rolePolicy:RolePolicy");
        const onIntent = (policy?.inputs.policy as Doc).Statement.filter((s) => [s.Resource].flat().some((r) => /:table\/retraining-intent/.test(r)));
        expect(onIntent).to.have.length(1);
        expect(onIntent[0]?.Action).to.have.members(["dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]);
        expect([onIntent[0]?.Resource].flat()).to.have.length(1);
        expect(String(onIntent[0]?.Resource)).to.not.include("*");
      });

      it("schedules each configured model with {model_name, trigger: scheduled}, a retry policy and the part's DLQ", () => {
        const schedules = of(doc, "aws:scheduler/schedule:Schedule").filter((s) => s.name.startsWith("retraining-schedule-"));
        const dlq = named(doc, "aws:sqs/queue:Queue", "retraining-schedule-dlq");
        expect(dlq.inputs.tags).to.include({ "encache:queue-role": "dlq" });
        expect(schedules.map((s) => (JSON.parse(String((s.inputs.target as { input: string }).input)) as { model_name: string }).model_name)).to.deep.equal([
          ...e.models,
        ]);
        for (const s of schedules) {
          const target = s.inputs.target as { input: string; retryPolicy: unknown; deadLetterConfig: { arn: string } };
          expect(JSON.parse(target.input)).to.have.property("trigger", "scheduled");
          expect(target.retryPolicy).to.deep.equal({ maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 });
          expect(target.deadLetterConfig.arn).to.match(/retraining-schedule-dlq/);
        }
      });

      it("grants the launcher's role exactly its code's actions plus the poller and log writes", () => {
        const consumer = named(doc, "encache:compute:QueueConsumer", "retraining-launcher");
        const [role] = children(doc, consumer, "aws:iam/role:Role");
        const [policy] = children(doc, consumer, "aws:iam/rolePolicy:RolePolicy");
        expect(policy?.dependencies).to.include(role?.urn);
        const actions = [...new Set((policy?.inputs.policy as Doc).Statement.filter((s) => s.Effect === "Allow").flatMap((s) => s.Action))].sort();
        const platform = allowedActions([sqsEventSourceStatement("q"), logsStatement("l")]);
        expect(actions).to.deep.equal([...new Set([...LAUNCHER_IAM_ACTIONS, ...platform])].sort());
        expect(children(doc, consumer, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")).to.deep.equal([]);
      });

      it("scopes tag-on-create to the cluster's tasks in this account, and the lease writes to the state table", () => {
        const consumer = named(doc, "encache:compute:QueueConsumer", "retraining-launcher");
        const [policy] = children(doc, consumer, "aws:iam/rolePolicy:RolePolicy");
        const statements = (policy?.inputs.policy as Doc).Statement;
        const tag = statements.find((s) => s.Action.includes("ecs:TagResource"));
        // The cluster's physical name carries the engine's random suffix; the account is the point.
        expect(tag?.Resource)
          .to.be.a("string")
          .and.match(new RegExp(`^arn:aws:ecs:us-east-1:${MOCK_ACCOUNT_ID}:task/platform-cluster[^/*]*/\\*$`));
        const lease = statements.filter((s) => s.Action.includes("dynamodb:PutItem"));
        expect(lease).to.have.length(1);
        expect(lease[0]?.Resource)
          .to.be.a("string")
          .and.match(new RegExp(`^arn:aws:dynamodb:us-east-1:${MOCK_ACCOUNT_ID}:table/retraining-state`));
      });

      it("lets the launcher send only to the retraining DLQ (quarantine) and its own queue (deferral)", () => {
        const consumer = named(doc, "encache:compute:QueueConsumer", "retraining-launcher");
        const [policy] = children(doc, consumer, "aws:iam/rolePolicy:RolePolicy");
        const sendTo = (policy?.inputs.policy as Doc).Statement.filter((s) => s.Action.includes("sqs:SendMessage")).flatMap((s) => [s.Resource].flat());
        expect(sendTo).to.have.length(2);
        expect(
          sendTo.find((arn) => /:retraining-dlq-[0-9a-f]{7}$/.test(arn)),
          "the DLQ",
        ).to.be.a("string");
        expect(
          sendTo.find((arn) => /:retraining-[0-9a-f]{7}$/.test(arn)),
          "the retraining queue",
        ).to.be.a("string");
      });

      it(
        stack === "dev"
          ? "useSpot: a rule on this cluster's Spot-interrupted launcher tasks feeds the interruptions queue, consumed by the relaunch Lambda"
          : "no Spot: no relaunch rule, queue or consumer",
        () => {
          const rules = of(doc, "aws:cloudwatch/eventRule:EventRule").filter((r) => r.name.startsWith("retraining"));
          if (stack === "prod") {
            expect(rules).to.deep.equal([]);
            expect(doc.resources.filter((r) => r.name.startsWith("retraining-interruptions") || r.name.startsWith("retraining-relaunch"))).to.deep.equal([]);
            return;
          }
          const rule = named(doc, "aws:cloudwatch/eventRule:EventRule", "retraining-spot-interruptions");
          const cluster = named(doc, "aws:ecs/cluster:Cluster", "platform-cluster");
          expect(JSON.parse(String(rule.inputs.eventPattern))).to.deep.equal({
            source: ["aws.ecs"],
            "detail-type": ["ECS Task State Change"],
            detail: { clusterArn: [cluster.arn], lastStatus: ["STOPPED"], stopCode: ["SpotInterruption"], startedBy: ["retraining-scheduler"] },
          });
          const target = named(doc, "aws:cloudwatch/eventTarget:EventTarget", "retraining-spot-interruptions-target");
          const queue = named(doc, "aws:sqs/queue:Queue", "retraining-interruptions");
          const dlq = named(doc, "aws:sqs/queue:Queue", "retraining-interruptions-dlq");
          expect(target.inputs).to.deep.include({ arn: queue.arn, deadLetterConfig: { arn: dlq.arn } });
          expect(target.inputs.retryPolicy).to.deep.equal({ maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86_400 });
          // EventBridge sends to SQS on the queue's own policy (its SQS targets take no role): this rule only.
          for (const [policyName, q] of [
            ["retraining-interruptions-policy", queue],
            ["retraining-interruptions-dlq-policy", dlq],
          ] as const) {
            const policy = JSON.parse(String(named(doc, "aws:sqs/queuePolicy:QueuePolicy", policyName).inputs.policy)) as {
              Statement: Array<{ Principal: unknown; Action: string; Resource: string; Condition: unknown }>;
            };
            expect(policy.Statement).to.deep.equal([
              {
                Sid: "SpotInterruptionRule",
                Effect: "Allow",
                Principal: { Service: "events.amazonaws.com" },
                Action: "sqs:SendMessage",
                Resource: q.arn,
                Condition: { ArnEquals: { "aws:SourceArn": rule.arn } },
              },
            ]);
          }
          const consumer = named(doc, "encache:compute:QueueConsumer", "retraining-relaunch");
          const [rolePolicy] = children(doc, consumer, "aws:iam/rolePolicy:RolePolicy");
          const sends = (rolePolicy?.inputs.policy as Doc).Statement.filter((st) => st.Action.includes("sqs:SendMessage")).flatMap((st) =>
            [st.Resource].flat(),
          );
          expect(sends.sort()).to.deep.equal([String(dlq.arn), String(named(doc, "aws:sqs/queue:Queue", "retraining").arn)].sort());
          const fn = children(doc, consumer, "aws:lambda/function:Function")[0];
          const vars = (fn?.inputs.environment as { variables: Record<string, string> }).variables;
          expect(vars.ECS_CLUSTER_ARN).to.equal(cluster.arn);
          expect(vars.QUARANTINE_QUEUE_URL).to.match(/\/retraining-interruptions-dlq-[0-9a-f]{7}$/);
          expect(vars.RETRAINING_QUEUE_URL).to.match(/\/retraining-[0-9a-f]{7}$/);
        },
      );
    });
  }
});
