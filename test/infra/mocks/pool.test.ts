import { expect } from "chai";
import { CLAIM_IAM_ACTIONS, REFILL_ROLE_ACTIONS } from "../../../functions/pool/iam";
import { allowedActions, logsStatement, sqsEventSourceStatement } from "../../../infra/iam/document";
import { useStackPlans } from "../helpers/run-plan";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";

type Doc = { Statement: Array<{ Sid?: string; Effect: string; Action: string | string[]; Condition?: unknown }> };

const tagsOf = (r: Res) => (r.inputs.tags ?? {}) as Record<string, string>;
const actionsOf = (docs: Doc[]) => [...new Set(docs.flatMap((d) => d.Statement.filter((s) => s.Effect === "Allow").flatMap((s) => [s.Action].flat())))].sort();

/** The refill function is not in a VPC, so its role carries only the poller's and log actions besides its own. */
const PLATFORM_ACTIONS = allowedActions([sqsEventSourceStatement("queue"), logsStatement("log-group")]);

const EXPECTED = {
  dev: { classes: ["cpu-small", "gpu-small"], retention: 600, deletionProtection: false, everyMinutes: 5, poolTag: "encache-warm-pool-dev" },
  prod: { classes: ["cpu-small", "gpu-small", "gpu-large"], retention: 240, deletionProtection: true, everyMinutes: 2, poolTag: "encache-warm-pool-prod" },
} as const;

describe("pool part in the program under Pulumi mocks (both stacks)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  for (const stack of ["dev", "prod"] as const) {
    describe(`stack ${stack}`, () => {
      const doc = () => stacks[stack]!;
      const want = EXPECTED[stack];

      it("has no violation on any pool resource", () => {
        const poolUrns = new Set(
          doc()
            .resources.filter((r) => r.urn.includes("encache:parts:Pool") || r.name.startsWith("pool"))
            .map((r) => r.urn),
        );
        expect(doc().violations.filter((v) => v.urn && poolUrns.has(v.urn))).to.deep.equal([]);
        expect(doc().summary.mandatory).to.equal(0);
      });

      it("declares one SSE pool queue per class, short retention, with a 14-day DLQ", () => {
        const queues = of(doc(), "aws:sqs/queue:Queue");
        const pools = queues.filter((q) => tagsOf(q)["encache:pool-class"] && tagsOf(q)["encache:queue-role"] === "source");
        expect(pools.map((q) => q.name)).to.deep.equal(want.classes.map((c) => `pool-${c}`));
        for (const q of pools) {
          expect(q.inputs).to.deep.include({ sqsManagedSseEnabled: true, messageRetentionSeconds: want.retention, visibilityTimeoutSeconds: 30 });
          const dlq = named(doc(), "aws:sqs/queue:Queue", `${q.name}-dlq`);
          expect(q.dependencies).to.include(dlq.urn);
          expect(dlq.inputs).to.deep.include({ messageRetentionSeconds: 1_209_600, sqsManagedSseEnabled: true });
        }
      });

      it("lets RunInstances launch exactly the instance types its launch templates declare", () => {
        // Prepare: the types the stack's templates launch (one each), and the refill role's condition.
        const templates = of(doc(), "aws:ec2/launchTemplate:LaunchTemplate").filter((t) => t.name.startsWith("pool-"));
        expect(templates.length).to.equal(want.classes.length);
        const launched = [...new Set(templates.map((t) => t.inputs.instanceType as string))].sort();
        const refillPolicies = doc().resources.filter((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.name.startsWith("pool-refill"));
        const run = refillPolicies
          .flatMap(
            (r) =>
              (
                (typeof r.inputs.policy === "string" ? JSON.parse(r.inputs.policy) : r.inputs.policy) as {
                  Statement: Array<{ Sid?: string; Condition?: { StringEquals?: Record<string, unknown> } }>;
                }
              ).Statement,
          )
          .find((s) => s.Sid === "RunTaggedPoolInstances");
        // Assess: one source; a class's other configured types (g6.xlarge, m6i.large) are not launchable.
        expect(run?.Condition?.StringEquals?.["ec2:InstanceType"]).to.deep.equal(launched);
        expect(launched).to.not.include.members(["g6.xlarge", "m6i.large"]);
      });

      it("declares the claim table with TTL, PITR and the stack's deletion protection", () => {
        const table = named(doc(), "aws:dynamodb/table:Table", "pool-claims");
        expect(table.inputs).to.deep.include({
          hashKey: "instance_id",
          ttl: { attributeName: "expires_at", enabled: true },
          pointInTimeRecovery: { enabled: true },
          deletionProtectionEnabled: want.deletionProtection,
        });
      });

      it("schedules a refill per class into the refill queue, with retries and a terminal DLQ", () => {
        const refillQueue = named(doc(), "aws:sqs/queue:Queue", "pool-refill");
        const scheduleDlq = named(doc(), "aws:sqs/queue:Queue", "pool-refill-schedule-dlq");
        expect(tagsOf(scheduleDlq)["encache:queue-role"]).to.equal("dlq");
        for (const c of want.classes) {
          const s = named(doc(), "aws:scheduler/schedule:Schedule", `pool-refill-${c}`);
          expect(s.inputs.scheduleExpression).to.equal(`rate(${want.everyMinutes} minutes)`);
          expect(s.dependencies).to.include.members([refillQueue.urn, scheduleDlq.urn]);
          const target = s.inputs.target as { input: string; retryPolicy: { maximumRetryAttempts: number } };
          expect(JSON.parse(target.input)).to.deep.equal({ resource_class: c, scheduled_time: "<aws.scheduler.scheduled-time>" });
          expect(target.retryPolicy.maximumRetryAttempts).to.equal(3);
        }
        const mapping = named(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping", "pool-refill-mapping");
        expect(mapping.dependencies).to.include(refillQueue.urn);
        expect(mapping.inputs).to.deep.include({ batchSize: 1, functionResponseTypes: ["ReportBatchItemFailures"] });
      });

      it("hardens one launch template per class and tags it with pool membership and class", () => {
        for (const c of want.classes) {
          const lt = named(doc(), "aws:ec2/launchTemplate:LaunchTemplate", `pool-${c}-lt`);
          expect(lt.inputs.metadataOptions).to.deep.include({ httpTokens: "required" });
          expect((lt.inputs.networkInterfaces as Array<Record<string, unknown>>).map((n) => n.associatePublicIpAddress)).to.deep.equal(["false"]);
          expect((lt.inputs.blockDeviceMappings as Array<{ ebs: Record<string, unknown> }>).map((m) => m.ebs.encrypted)).to.deep.equal(["true"]);
          expect(tagsOf(lt)).to.deep.include({ "encache:pool": want.poolTag, "encache:pool-class": c });
          const specs = lt.inputs.tagSpecifications as Array<{ resourceType: string; tags: Record<string, string> }>;
          expect(specs.map((s) => s.resourceType)).to.deep.equal(["instance", "volume", "network-interface"]);
          expect(specs.every((s) => s.tags["encache:pool-class"] === c)).to.equal(true);
          // EC2 resolves the AMI at each launch: a new AMI release changes nothing in the template.
          expect(lt.inputs.imageId).to.match(/^resolve:ssm:\/aws\/service\//);
        }
      });

      it("gives the refill role exactly its code's actions (plus those RunInstances implies) and the claim policy the claim API's", () => {
        const role = named(doc(), "aws:iam/role:Role", "pool-refill-role");
        const docs = of(doc(), "aws:iam/rolePolicy:RolePolicy")
          .filter((rp) => rp.dependencies.includes(role.urn))
          .map((rp) => rp.inputs.policy as Doc);
        expect(actionsOf(docs)).to.deep.equal([...new Set([...REFILL_ROLE_ACTIONS, ...PLATFORM_ACTIONS])].sort());
        const claim = named(doc(), "aws:iam/policy:Policy", "pool-claim");
        expect(actionsOf([claim.inputs.policy as Doc])).to.deep.equal([...CLAIM_IAM_ACTIONS].sort());
        const start = (claim.inputs.policy as Doc).Statement.find((s) => s.Sid === "StartPoolInstances");
        expect(start?.Condition).to.deep.equal({ StringEquals: { "aws:ResourceTag/encache:pool": want.poolTag } });
      });

      it("hands the refill function every class with its queue URL and launch template", () => {
        const fn = named(doc(), "aws:lambda/function:Function", "pool-refill");
        const env = (fn.inputs.environment as { variables: Record<string, string> }).variables;
        const classes = JSON.parse(env.POOL_CLASSES ?? "[]") as Array<{ name: string; queueUrl: string; launchTemplateId: string }>;
        expect(classes.map((c) => c.name)).to.deep.equal(want.classes);
        for (const c of classes) {
          expect(c.queueUrl).to.match(new RegExp(`^https://sqs\\.us-east-1\\.amazonaws\\.com/123456789012/pool-${c.name}-`));
          expect(c.launchTemplateId).to.match(/^lt-/);
        }
        expect(env).to.include({ POOL_TAG: want.poolTag, POWERTOOLS_SERVICE_NAME: `pool-refill-${stack}` });
        expect(env.CLAIM_TABLE_NAME).to.match(/^pool-claims-/);
        expect(env.QUARANTINE_QUEUE_URL).to.match(/pool-refill-dlq-/);
      });
    });
  }
});
