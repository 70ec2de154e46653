/**
 * Part 1 (docs/parts/ingest.md) as the program declares it: the queues, both consumers and their
 * roles, in both stacks' offline plans; the single GPU instance and its policy in the stack that
 * runs `gpu.capacity.mode: instance` (dev). Prod runs the fleet, whose resources and grants
 * test/infra/mocks/gpu-fleet.test.ts holds.
 */
import { expect } from "chai";
import { allowedActions, logsStatement, sqsEventSourceStatement, vpcAccessStatements } from "../../../infra/iam/document";
import type { PlanDocument } from "../../../plan/render";
import { DLQ_IAM_ACTIONS, FLEET_DLQ_IAM_ACTIONS, FLEET_WINDOW_IAM_ACTIONS, WINDOW_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { STACKS, useStackPlans } from "../helpers/run-plan";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";
import { gpuMode } from "../helpers/stack-config";

type Doc = { Statement: Array<{ Effect: string; Action: string | string[] }> };

/** Everything a role may do: its inline RolePolicy documents plus attached managed policies. */
function roleActions(doc: PlanDocument, role: Res): string[] {
  const docs: Doc[] = [];
  for (const rp of of(doc, "aws:iam/rolePolicy:RolePolicy")) if (rp.dependencies.includes(role.urn)) docs.push(rp.inputs.policy as Doc);
  for (const att of of(doc, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")) {
    if (!att.dependencies.includes(role.urn)) continue;
    const policy = doc.resources.find((p) => p.type === "aws:iam/policy:Policy" && att.dependencies.includes(p.urn));
    if (policy) docs.push(policy.inputs.policy as Doc);
    else docs.push({ Statement: [{ Effect: "Allow", Action: `managed:${String(att.inputs.policyArn)}` }] });
  }
  return [...new Set(docs.flatMap((d) => d.Statement.filter((s) => s.Effect === "Allow").flatMap((s) => [s.Action].flat())))].sort();
}

/** What every consumer's role carries besides its code's calls: poller, logs, VPC ENIs. */
const PLATFORM_ACTIONS = allowedActions([
  sqsEventSourceStatement("queue"),
  logsStatement("log-group"),
  ...vpcAccessStatements({ accountId: "a", region: "r" }),
]);

describe("the ingest part under Pulumi mocks (offline plan, both stacks)", function () {
  this.timeout(120_000);

  const stacks = useStackPlans();

  it("covers both GPU modes: dev runs the single instance, prod the fleet", () => {
    // The instance-mode cases below run on dev alone; if dev left instance mode they would run nowhere.
    expect(Object.fromEntries(STACKS.map((s) => [s, gpuMode(s)]))).to.deep.equal({ dev: "instance", prod: "fleet" });
  });

  for (const stack of STACKS) {
    describe(`stack ${stack} (gpu.capacity.mode ${gpuMode(stack)})`, () => {
      const doc = () => stacks[stack]!;
      const instance = gpuMode(stack) === "instance";
      /** A case about the single GPU instance: declared only where the stack runs one (the fleet's are in gpu-fleet.test.ts). */
      const itInstance = (title: string, fn: () => void) => {
        if (instance) it(title, fn);
      };

      it("reads the DLQ with batch size 1 and the ingest queue with the configured batch", () => {
        const dlq = named(doc(), "aws:sqs/queue:Queue", "ingest-dlq");
        const dlqMapping = named(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping", "ingest-dlq-consumer-mapping");
        expect(dlqMapping.dependencies).to.include(dlq.urn);
        expect(dlqMapping.inputs.batchSize).to.equal(10);
        for (const m of of(doc(), "aws:lambda/eventSourceMapping:EventSourceMapping")) {
          expect(m.inputs.functionResponseTypes).to.deep.equal(["ReportBatchItemFailures"]);
        }
      });

      it("gives each consumer's role exactly the actions its code calls, and no others", () => {
        const window = roleActions(doc(), named(doc(), "aws:iam/role:Role", "ingest-window-role"));
        const dlq = roleActions(doc(), named(doc(), "aws:iam/role:Role", "ingest-dlq-consumer-role"));
        const [windowCalls, dlqCalls] = instance ? [WINDOW_IAM_ACTIONS, DLQ_IAM_ACTIONS] : [FLEET_WINDOW_IAM_ACTIONS, FLEET_DLQ_IAM_ACTIONS];
        expect(window).to.deep.equal([...new Set([...windowCalls, ...PLATFORM_ACTIONS])].sort());
        expect(dlq).to.deep.equal([...new Set([...dlqCalls, ...PLATFORM_ACTIONS])].sort());
        expect(window).to.not.include("ec2:StartInstances");
      });

      it("scopes the Lambda VPC ENI grants to this account's interfaces, subnets and groups", () => {
        // Prepare
        const policy = named(doc(), "aws:iam/rolePolicy:RolePolicy", "ingest-dlq-consumer-policy").inputs.policy as {
          Statement: Array<{ Sid: string; Action: string[]; Resource: unknown }>;
        };
        const bySid = (sid: string) => policy.Statement.find((s) => s.Sid === sid);
        const eni = "arn:aws:ec2:us-east-1:123456789012:network-interface/*";
        // Assess
        expect(bySid("LambdaVpcDescribe")).to.deep.include({ Action: ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"], Resource: "*" });
        expect(bySid("LambdaVpcCreateEni")?.Resource).to.deep.equal([
          eni,
          "arn:aws:ec2:us-east-1:123456789012:subnet/*",
          "arn:aws:ec2:us-east-1:123456789012:security-group/*",
        ]);
        expect(bySid("LambdaVpcManageEni")).to.deep.include({
          Action: ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"],
          Resource: eni,
        });
      });

      itInstance("attaches the GPU EC2 managed policy (tag-scoped StartInstances) to the DLQ consumer", () => {
        const policy = named(doc(), "aws:iam/policy:Policy", "ingest-gpu-ec2");
        const attachment = named(doc(), "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "ingest-dlq-consumer-attach-0");
        expect(attachment.dependencies).to.include(policy.urn);
        const start = (policy.inputs.policy as { Statement: Array<Record<string, unknown>> }).Statement.find((s) => s.Sid === "StartTaggedGpu");
        expect(start?.Condition).to.deep.equal({
          StringEquals: { "aws:ResourceTag/Name": `encache-gpu-worker-${stack}`, "aws:ResourceTag/encache:environment": stack },
        });
      });

      itInstance("tags the GPU with every tag its StartInstances and StopInstances grants key on, at the granted values", () => {
        // Prepare: the tag conditions of both grants that act on the GPU.
        const gpu = named(doc(), "aws:ec2/instance:Instance", "ingest-gpu");
        const tags = gpu.inputs.tags as Record<string, string>;
        const documents = [
          named(doc(), "aws:iam/policy:Policy", "ingest-gpu-ec2"),
          ...of(doc(), "aws:iam/rolePolicy:RolePolicy").filter((r) => r.name.startsWith("ingest-gpu-idle")),
        ];
        const grants = documents
          .flatMap((d) => (d.inputs.policy as { Statement: Array<{ Action: string[]; Condition?: { StringEquals?: Record<string, string> } }> }).Statement)
          .filter((s) => s.Action.some((a) => a === "ec2:StartInstances" || a === "ec2:StopInstances"));
        expect(grants.flatMap((s) => s.Action).sort()).to.deep.equal(["ec2:StartInstances", "ec2:StopInstances"]);
        for (const s of grants) {
          const wanted = Object.entries(s.Condition?.StringEquals ?? {}).filter(([k]) => k.startsWith("aws:ResourceTag/"));
          // Assess: both tags, and the instance carries each at the value the grant asks for.
          expect(wanted.map(([k]) => k).sort(), s.Action.join()).to.deep.equal(["aws:ResourceTag/Name", "aws:ResourceTag/encache:environment"]);
          for (const [k, v] of wanted) expect(tags[k.slice("aws:ResourceTag/".length)], k).to.equal(v);
        }
        expect((gpu.inputs.volumeTags as Record<string, string>)["encache:environment"]).to.equal(stack);
      });

      it("wires the functions' environment to the right queues and the GPU", () => {
        const env = (name: string) =>
          (named(doc(), "aws:lambda/function:Function", name).inputs.environment as { variables: Record<string, string> }).variables;
        const url = (name: string) => `https://sqs.us-east-1.amazonaws.com/123456789012/${name}-`;
        const dlqEnv = env("ingest-dlq-consumer");
        expect(dlqEnv.INGEST_DLQ_URL).to.satisfy((u: string) => u.startsWith(url("ingest-dlq")));
        expect(dlqEnv.QUARANTINE_QUEUE_URL).to.satisfy((u: string) => u.startsWith(url("ingest-quarantine")));
        expect(dlqEnv.DLQ_VISIBILITY_EXTENSION_SECONDS).to.equal("900");
        expect(dlqEnv.DLQ_MAX_AGE_SECONDS).to.equal("1123200");
        expect(env("ingest-window").QUARANTINE_QUEUE_URL).to.satisfy((u: string) => u.startsWith(url("ingest-dlq")));
        for (const e of [dlqEnv, env("ingest-window")]) {
          expect(e).to.include({
            GPU_INSTANCE_ID_PARAM: `/encache/${stack}/gpu/instance_id`,
            GPU_NAME_TAG: `encache-gpu-worker-${stack}`,
            GPU_SERVICE_PORT: "8080",
          });
        }
      });

      itInstance("hardens the GPU instance and publishes its id in SSM", () => {
        const gpu = named(doc(), "aws:ec2/instance:Instance", "ingest-gpu");
        expect(gpu.inputs).to.deep.include({ associatePublicIpAddress: false });
        expect(gpu.inputs.metadataOptions).to.deep.include({ httpTokens: "required" });
        expect(gpu.inputs.rootBlockDevice).to.deep.include({ encrypted: true, volumeType: "gp3" });
        expect(gpu.inputs).to.not.have.property("keyName");
        // Boots ready to serve (test/infra/mocks/gpu-host.test.ts reads the user data); a change replaces it.
        expect(String(gpu.inputs.userData)).to.match(/^#cloud-config\n/);
        expect(gpu.inputs.userDataReplaceOnChange).to.equal(true);
        expect(gpu.inputs.ami).to.equal("ami-0123456789abcdef0");
        expect((gpu.inputs.tags as Record<string, string>).Name).to.equal(`encache-gpu-worker-${stack}`);
        const param = named(doc(), "aws:ssm/parameter:Parameter", "ingest-gpu-instance-id");
        expect(param.inputs.name).to.equal(`/encache/${stack}/gpu/instance_id`);
        expect(param.dependencies).to.include(gpu.urn);
        // Pulumi must never own the run state: the auto-starter starts it, idleness stops it.
        expect(doc().resources.some((r) => r.type === "aws:ec2/instanceState:InstanceState")).to.equal(false);
      });

      it("puts a depth alarm on the DLQ and on the quarantine queue", () => {
        const alarms = of(doc(), "aws:cloudwatch/metricAlarm:MetricAlarm");
        for (const q of ["ingest-dlq", "ingest-quarantine"]) {
          const queue = named(doc(), "aws:sqs/queue:Queue", q);
          expect(
            alarms.some((a) => a.dependencies.includes(queue.urn) && a.inputs.metricName === "ApproximateNumberOfMessagesVisible"),
            q,
          ).to.equal(true);
        }
      });
    });
  }

  it("differs between dev and prod where real stacks do", () => {
    // The GPU's type and deletion protection: the instance's own (dev); in fleet mode (prod) the
    // launch template's first type and the load balancer's deletion protection.
    const gpu = (d: PlanDocument) =>
      d.resources.some((r) => r.type === "aws:ec2/instance:Instance" && r.name === "ingest-gpu")
        ? {
            instanceType: named(d, "aws:ec2/instance:Instance", "ingest-gpu").inputs.instanceType,
            deletionProtection: named(d, "aws:ec2/instance:Instance", "ingest-gpu").inputs.disableApiTermination,
          }
        : {
            instanceType: named(d, "aws:ec2/launchTemplate:LaunchTemplate", "ingest-gpu-fleet-lt").inputs.instanceType,
            deletionProtection: named(d, "aws:lb/loadBalancer:LoadBalancer", "ingest-gpu-fleet-lb").inputs.enableDeletionProtection,
          };
    const pick = (stack: string) => {
      const d = stacks[stack]!;
      return {
        ...gpu(d),
        logRetention: named(d, "aws:cloudwatch/logGroup:LogGroup", "ingest-window-logs").inputs.retentionInDays,
        concurrency: (
          named(d, "aws:lambda/eventSourceMapping:EventSourceMapping", "ingest-window-mapping").inputs.scalingConfig as { maximumConcurrency: number }
        ).maximumConcurrency,
        queueRetention: named(d, "aws:sqs/queue:Queue", "ingest").inputs.messageRetentionSeconds,
      };
    };
    expect(pick("dev")).to.deep.equal({ instanceType: "g5.xlarge", deletionProtection: false, logRetention: 7, concurrency: 2, queueRetention: 345_600 });
    expect(pick("prod")).to.deep.equal({ instanceType: "g5.2xlarge", deletionProtection: true, logRetention: 90, concurrency: 20, queueRetention: 604_800 });
  });
});
