/**
 * Fleet mode (`gpu.capacity.mode: fleet`, issue 27) as the whole program declares it: prod's own
 * plan, since Pulumi.prod.yaml runs the GPU tier as a fleet. Every expected value is read from the
 * stack file's fleet block, so this test follows prod's config and restates none of it. Instance
 * mode keeps its coverage in dev (test/infra/mocks/ingest.test.ts); prod's first preview is clean
 * in test/plan/cli.test.ts.
 */
import { expect } from "chai";
import { allowedActions, logsStatement, sqsEventSourceStatement, vpcAccessStatements } from "../../../infra/iam/document";
import { FLEET_DLQ_IAM_ACTIONS, FLEET_WINDOW_IAM_ACTIONS, SCALER_IAM_ACTIONS } from "../../../functions/ingest/iam";
import { SCALED_OUT_AT_TAG, spotInterruptionTag } from "../../../functions/gpu/group-tags";
import { GROUP_IGNORE_CHANGES } from "../../../infra/components/gpu-fleet";
import type { PlanDocument } from "../../../plan/render";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";
import { allowed, type RequestStatement } from "../helpers/iam-request";
import { useStackPlans } from "../helpers/run-plan";
import { stackConfig } from "../helpers/stack-config";
import { type GroupTag, refreshThenUp, refreshThenUpInputs, valueAt } from "../helpers/group-tags-model";
import { ENVIRONMENT_TAG as ENVIRONMENT } from "../../../policy/contract";

type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
type Doc = { Statement: Statement[] };

function roleStatements(doc: PlanDocument, role: Res): Statement[] {
  const docs: Doc[] = [];
  for (const rp of of(doc, "aws:iam/rolePolicy:RolePolicy")) if (rp.dependencies.includes(role.urn)) docs.push(rp.inputs.policy as Doc);
  for (const att of of(doc, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")) {
    if (!att.dependencies.includes(role.urn)) continue;
    const policy = doc.resources.find((p) => p.type === "aws:iam/policy:Policy" && att.dependencies.includes(p.urn));
    if (policy) docs.push(policy.inputs.policy as Doc);
  }
  return docs.flatMap((d) => d.Statement.filter((s) => s.Effect === "Allow"));
}
const actionsOf = (statements: Statement[]) => [...new Set(statements.flatMap((s) => [s.Action].flat()))].sort();

const PLATFORM_ACTIONS = allowedActions([
  sqsEventSourceStatement("queue"),
  logsStatement("log-group"),
  ...vpcAccessStatements({ accountId: "a", region: "r" }),
]);
const GROUP_ARN = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/encache-gpu-fleet-prod";

/** Prod's `encache:gpu` block as Pulumi.prod.yaml writes it (no defaults filled in). */
interface GpuBlock {
  instanceType: string;
  servicePort: number;
  capacity: {
    mode: string;
    fleet: {
      maxSize: number;
      instanceTypes: string[];
      onDemandBaseCapacity: number;
      spotPercent: number;
      spotAllocationStrategy: string;
      windowsPerInstance: number;
      scaleInCooldownSeconds: number;
      scaleCheckMinutes: number;
      drainSeconds: number;
      spotBreaker?: { interruptions?: number; windowMinutes?: number; cooldownMinutes?: number };
    };
  };
}
const gpu = () => stackConfig("prod").gpu as GpuBlock;

const fleet = () => gpu().capacity.fleet;

describe("ingest in fleet mode under Pulumi mocks (prod's own plan)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();
  let doc: PlanDocument;

  before(() => {
    doc = stacks.prod!;
  });

  it("is prod's mode: Pulumi.prod.yaml runs the GPU tier as a fleet, with Spot above an on-demand base", () => {
    expect(gpu().capacity.mode).to.equal("fleet");
    // The cases below are the Spot ones (mixed instances, capacity rebalancing): they need Spot in prod.
    expect(fleet().spotPercent).to.be.above(0);
    expect(fleet().instanceTypes.length).to.be.above(1);
  });

  it("plans cleanly: the pack passes the fleet (its DLQ consumer can raise the group's capacity)", () => {
    expect(doc.violations).to.deep.equal([]);
  });

  it("declares the group, its template, its internal load balancer and the scaler, and no single GPU instance or id parameter", () => {
    expect(of(doc, "aws:autoscaling/group:Group").map((r) => r.name)).to.deep.equal(["ingest-gpu-fleet"]);
    expect(of(doc, "aws:ec2/launchTemplate:LaunchTemplate").map((r) => r.name)).to.include("ingest-gpu-fleet-lt");
    expect(of(doc, "aws:lb/loadBalancer:LoadBalancer").map((r) => r.name)).to.deep.equal(["ingest-gpu-fleet-lb"]);
    const scaler = named(doc, "aws:lambda/function:Function", "ingest-gpu-scaler");
    expect(named(doc, "aws:lambda/eventSourceMapping:EventSourceMapping", "ingest-gpu-scaler-mapping").dependencies).to.include(scaler.urn);
    expect(of(doc, "aws:ec2/instance:Instance")).to.deep.equal([]);
    expect(doc.resources.filter((r) => r.type === "aws:ssm/parameter:Parameter" && r.name.startsWith("ingest-"))).to.deep.equal([]);
    // The AMI resolved at deploy time (the mocks' SSM answer), not `resolve:ssm:` at launch: a new AMI is a diff, and a refresh can roll back.
    expect(named(doc, "aws:ec2/launchTemplate:LaunchTemplate", "ingest-gpu-fleet-lt").inputs).to.deep.include({
      imageId: "ami-0123456789abcdef0",
      metadataOptions: { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 },
    });
  });

  it("mixes an on-demand base with Spot above it over the configured types, in their order, with capacity rebalancing", () => {
    const group = named(doc, "aws:autoscaling/group:Group", "ingest-gpu-fleet");
    const mixed = group.inputs.mixedInstancesPolicy as { instancesDistribution: unknown; launchTemplate: { overrides: unknown } };
    expect(group.inputs).to.deep.include({
      name: "encache-gpu-fleet-prod",
      minSize: 0,
      maxSize: fleet().maxSize,
      capacityRebalance: true,
      waitForCapacityTimeout: "0",
      healthCheckType: "ELB",
    });
    expect(group.inputs.desiredCapacity).to.equal(undefined);
    expect(mixed.instancesDistribution).to.deep.equal({
      onDemandBaseCapacity: fleet().onDemandBaseCapacity,
      onDemandPercentageAboveBaseCapacity: 100 - fleet().spotPercent,
      onDemandAllocationStrategy: "prioritized",
      // capacity-optimized honours the listed order only as capacity-optimized-prioritized.
      spotAllocationStrategy: fleet().spotAllocationStrategy === "capacity-optimized" ? "capacity-optimized-prioritized" : fleet().spotAllocationStrategy,
    });
    expect(mixed.launchTemplate.overrides).to.deep.equal(fleet().instanceTypes.map((instanceType) => ({ instanceType })));
    expect(named(doc, "aws:ec2/launchTemplate:LaunchTemplate", "ingest-gpu-fleet-lt").inputs.instanceType).to.equal(fleet().instanceTypes[0]);
    expect(group.inputs.warmPool).to.equal(undefined);
    expect(group.protect).to.equal(true);
  });

  describe("runtime state on the group survives a refresh and an up", () => {
    const HOLD = "encache:gpu-hold";
    const declared = () => named(doc, "aws:autoscaling/group:Group", "ingest-gpu-fleet").inputs.tags as GroupTag[];
    const tagResources = () => {
      const group = named(doc, "aws:autoscaling/group:Group", "ingest-gpu-fleet");
      return of(doc, "aws:autoscaling/tag:Tag")
        .filter((t) => t.dependencies.includes(group.urn))
        .map((t) => t.inputs.tag as GroupTag);
    };
    const liveWith = (extra: Record<string, string>) => ({ ...Object.fromEntries(declared().map((t) => [t.key, t.value])), ...extra });

    it("keeps the operator's hold and the scaler's stamp, which the program does not declare", () => {
      // Arrange
      const runtime = { [HOLD]: "true", [SCALED_OUT_AT_TAG]: "2026-01-01T00:00:00.000Z" };
      // Act
      const after = refreshThenUp(liveWith(runtime), declared(), GROUP_IGNORE_CHANGES, tagResources());
      // Assess
      expect(after).to.deep.equal(liveWith(runtime));
    });

    it("still writes every declared tag: a drifted or changed one gets the program's value back", () => {
      // Arrange: the live group's environment tag differs from the program's (as after a change of it)
      const live = liveWith({ [ENVIRONMENT]: "drifted", [HOLD]: "true" });
      // Act
      const after = refreshThenUp(live, declared(), GROUP_IGNORE_CHANGES, tagResources());
      // Assess
      expect(after).to.deep.equal(liveWith({ [HOLD]: "true" }));
    });

    describe("the second up: the Spot breaker's records and the on-demand share the scaler set", () => {
      const ON_DEMAND_PATH = "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity";
      const groupInputs = () => named(doc, "aws:autoscaling/group:Group", "ingest-gpu-fleet").inputs;
      const breakerRecords = {
        [spotInterruptionTag("i-0a1b2c3d4e5f60001")]: "2026-11-25T11:50:00Z",
        [spotInterruptionTag("i-0a1b2c3d4e5f60002")]: "2026-11-25T11:58:00Z",
      };
      /** The live group while the breaker is open: its records as tags, and on demand only above the base. */
      const openGroup = () => {
        const live = structuredClone(groupInputs());
        (valueAt(live, "mixedInstancesPolicy.instancesDistribution") as Record<string, unknown>).onDemandPercentageAboveBaseCapacity = 100;
        return live;
      };

      it("ignores the path the program declares the share at (the spelling the engine matches)", () => {
        expect(GROUP_IGNORE_CHANGES).to.include(ON_DEMAND_PATH);
        expect(valueAt(groupInputs(), ON_DEMAND_PATH)).to.equal(100 - fleet().spotPercent);
      });

      it("keeps the breaker's records and its 100 % on demand after a refresh and an up", () => {
        // Prepare
        const live = openGroup();
        // Act
        const tagsAfter = refreshThenUp(liveWith(breakerRecords), declared(), GROUP_IGNORE_CHANGES, tagResources());
        const inputsAfter = refreshThenUpInputs(live, groupInputs(), GROUP_IGNORE_CHANGES);
        // Assess
        expect(tagsAfter).to.deep.equal(liveWith(breakerRecords));
        expect(valueAt(inputsAfter, ON_DEMAND_PATH)).to.equal(100);
      });

      it("(without the path ignored, the up would set the configured share back while the breaker is open)", () => {
        const inputsAfter = refreshThenUpInputs(openGroup(), groupInputs(), ["desiredCapacity", "tags"]);
        expect(valueAt(inputsAfter, ON_DEMAND_PATH)).to.equal(100 - fleet().spotPercent);
      });

      it("changes nothing else of the mixed instances policy: a new template version or type list still reaches the group", () => {
        // Prepare: the program's policy with other values than the live group's
        const declaredNow = structuredClone(groupInputs());
        const policy = declaredNow.mixedInstancesPolicy as { instancesDistribution: Record<string, unknown>; launchTemplate: { overrides: unknown[] } };
        policy.instancesDistribution.onDemandBaseCapacity = 2;
        policy.launchTemplate.overrides = [{ instanceType: "g6.2xlarge" }];
        // Act
        const inputsAfter = refreshThenUpInputs(openGroup(), declaredNow, GROUP_IGNORE_CHANGES);
        // Assess
        expect(valueAt(inputsAfter, "mixedInstancesPolicy.instancesDistribution.onDemandBaseCapacity")).to.equal(2);
        expect(valueAt(inputsAfter, "mixedInstancesPolicy.launchTemplate.overrides")).to.deep.equal([{ instanceType: "g6.2xlarge" }]);
        expect(valueAt(inputsAfter, ON_DEMAND_PATH)).to.equal(100);
      });
    });

    it("declares each of the group's tags as its own Tag, propagated at launch like the group's", () => {
      expect(tagResources()).to.have.deep.members(declared());
      expect(declared().every((t) => t.propagateAtLaunch === true)).to.equal(true);
    });
  });

  it("raises the launch alarm when the group wants more instances than it has in service for 20 minutes, to the stack's alert topic", () => {
    // Arrange
    const alarm = named(doc, "aws:cloudwatch/metricAlarm:MetricAlarm", "ingest-gpu-fleet-launch");
    const capacity = named(doc, "aws:cloudwatch/metricAlarm:MetricAlarm", "ingest-gpu-capacity");
    const queries = alarm.inputs.metricQueries as Array<{ id: string; expression?: string; returnData: boolean; metric?: Record<string, unknown> }>;
    const metric = (id: string) => queries.find((q) => q.id === id)?.metric;
    // Assess
    expect(queries.find((q) => q.returnData)?.expression).to.equal("desired - inservice");
    expect(metric("desired")).to.deep.include({
      namespace: "AWS/AutoScaling",
      metricName: "GroupDesiredCapacity",
      dimensions: { AutoScalingGroupName: "encache-gpu-fleet-prod" },
      period: 60,
    });
    expect(metric("inservice")).to.deep.include({ namespace: "AWS/AutoScaling", metricName: "GroupInServiceInstances", period: 60 });
    expect(alarm.inputs).to.deep.include({ evaluationPeriods: 20, datapointsToAlarm: 20, threshold: 1, comparisonOperator: "GreaterThanOrEqualToThreshold" });
    expect(alarm.inputs.alarmActions).to.deep.equal(capacity.inputs.alarmActions).and.to.have.length(1);
  });

  it("publishes the group's metrics every minute, and gives a leaving instance its drain (terminate hook and deregistration delay)", () => {
    const group = named(doc, "aws:autoscaling/group:Group", "ingest-gpu-fleet");
    // What the dashboard's fleet row reads (test/infra/mocks/platform-dashboard.test.ts).
    expect(group.inputs.enabledMetrics).to.include.members(["GroupInServiceInstances", "GroupDesiredCapacity"]);
    expect(group.inputs.metricsGranularity).to.equal("1Minute");
    const drain = fleet().drainSeconds;
    const hook = named(doc, "aws:autoscaling/lifecycleHook:LifecycleHook", "ingest-gpu-fleet-drain");
    expect(hook.inputs).to.deep.equal({
      name: "drain",
      autoscalingGroupName: "encache-gpu-fleet-prod",
      lifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
      heartbeatTimeout: drain,
      defaultResult: "CONTINUE",
    });
    expect(hook.dependencies).to.include(group.urn);
    const tg = named(doc, "aws:lb/targetGroup:TargetGroup", "ingest-gpu-fleet-tg");
    expect(tg.inputs).to.deep.include({ protocol: "HTTP", deregistrationDelay: drain, loadBalancingAlgorithmType: "least_outstanding_requests" });
    expect((tg.inputs.healthCheck as { path: string }).path).to.equal("/status");
    expect(group.dependencies).to.include(tg.urn);
  });

  it("puts an internal ALB in front, which admits the consumers only; the GPUs admit the ALB, and the consumers' group for the scaler", () => {
    const lb = named(doc, "aws:lb/loadBalancer:LoadBalancer", "ingest-gpu-fleet-lb");
    const lbSg = named(doc, "aws:ec2/securityGroup:SecurityGroup", "ingest-gpu-lb-sg");
    const gpuSg = named(doc, "aws:ec2/securityGroup:SecurityGroup", "ingest-gpu-sg");
    const consumers = named(doc, "aws:ec2/securityGroup:SecurityGroup", "ingest-consumers-sg");
    expect(lb.inputs).to.deep.include({ internal: true, loadBalancerType: "application" });
    expect(lb.dependencies).to.include(lbSg.urn);
    const ingress = (sg: Res) => sg.inputs.ingress as Array<{ cidrBlocks?: unknown; securityGroups?: unknown[] }>;
    expect(ingress(lbSg).map((i) => [i.cidrBlocks, i.securityGroups?.length])).to.deep.equal([[undefined, 1]]);
    expect(lbSg.dependencies).to.include(consumers.urn);
    expect(ingress(gpuSg).map((i) => [i.cidrBlocks, i.securityGroups?.length])).to.deep.equal([
      [undefined, 1],
      [undefined, 1],
    ]);
    expect(gpuSg.dependencies).to.include(lbSg.urn);
    expect(named(doc, "aws:lb/listener:Listener", "ingest-gpu-fleet-listener").inputs).to.deep.include({ port: gpu().servicePort, protocol: "HTTP" });
  });

  it("gives the window consumer, the DLQ consumer and the scaler exactly the calls their code makes", () => {
    const role = (name: string) => roleStatements(doc, named(doc, "aws:iam/role:Role", name));
    expect(actionsOf(role("ingest-window-role"))).to.deep.equal([...new Set([...FLEET_WINDOW_IAM_ACTIONS, ...PLATFORM_ACTIONS])].sort());
    expect(actionsOf(role("ingest-dlq-consumer-role"))).to.deep.equal([...new Set([...FLEET_DLQ_IAM_ACTIONS, ...PLATFORM_ACTIONS])].sort());
    expect(actionsOf(role("ingest-gpu-scaler-role"))).to.deep.equal([...new Set([...SCALER_IAM_ACTIONS, ...PLATFORM_ACTIONS])].sort());
  });

  it("scopes every change to the group to this stack's group: its ARN and the environment tag", () => {
    const changes = [
      ...roleStatements(doc, named(doc, "aws:iam/role:Role", "ingest-dlq-consumer-role")),
      ...roleStatements(doc, named(doc, "aws:iam/role:Role", "ingest-gpu-scaler-role")),
    ].filter((s) => [s.Action].flat().some((a) => a.startsWith("autoscaling:") && !a.startsWith("autoscaling:Describe")));
    // The DLQ consumer's capacity raise; the scaler's sizing, scale-out stamp, Spot records and on-demand share.
    expect(changes.map((s) => s.Sid).sort()).to.deep.equal([
      "RaiseGpuGroupCapacity",
      "RecordSpotInterruptions",
      "ShiftStackGpuGroupOnDemand",
      "SizeStackGpuGroup",
      "StampScaleOut",
    ]);
    for (const s of changes) {
      expect(s.Resource).to.equal(GROUP_ARN);
      expect((s.Condition as Record<string, unknown>).StringEquals).to.deep.equal({ "aws:ResourceTag/encache:environment": "prod" });
    }
  });

  // The scaler's role as deployed, judged as IAM judges a request: the keys a CreateOrUpdateTags or DeleteTags names are aws:TagKeys.
  describe("the scaler writes its scale-out stamp and its Spot records, and no other tag", () => {
    const scaler = () => roleStatements(doc, named(doc, "aws:iam/role:Role", "ingest-gpu-scaler-role"));
    const group =
      "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0b5c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3:autoScalingGroupName/encache-gpu-fleet-prod";
    const own = { "aws:ResourceTag/encache:environment": "prod" };
    const tagging = (keys: string[]) => ({ ...own, "aws:TagKeys": keys, ...Object.fromEntries(keys.map((k) => [`aws:RequestTag/${k}`, "x"])) });
    const cases: Array<[string, string, Record<string, string | string[]>, boolean]> = [
      ["the stamp", "autoscaling:CreateOrUpdateTags", tagging([SCALED_OUT_AT_TAG]), true],
      ["the operator's hold", "autoscaling:CreateOrUpdateTags", tagging(["encache:gpu-hold"]), false],
      ["the stack's environment tag", "autoscaling:CreateOrUpdateTags", tagging(["encache:environment"]), false],
      ["the stamp and another tag in one call", "autoscaling:CreateOrUpdateTags", tagging([SCALED_OUT_AT_TAG, "Name"]), false],
      ["a Spot interruption record", "autoscaling:CreateOrUpdateTags", tagging([spotInterruptionTag("i-0a1b2c3d4e5f60001")]), true],
      ["a record and the operator's hold in one call", "autoscaling:CreateOrUpdateTags", tagging([spotInterruptionTag("i-1"), "encache:gpu-hold"]), false],
      [
        "the stamp and a record in one call (two statements, neither holds for both)",
        "autoscaling:CreateOrUpdateTags",
        tagging([SCALED_OUT_AT_TAG, spotInterruptionTag("i-1")]),
        false,
      ],
      ["pruning records", "autoscaling:DeleteTags", tagging([spotInterruptionTag("i-1"), spotInterruptionTag("i-2")]), true],
      ["deleting the operator's hold", "autoscaling:DeleteTags", tagging(["encache:gpu-hold"]), false],
      ["deleting the environment tag beside a record", "autoscaling:DeleteTags", tagging([spotInterruptionTag("i-1"), "encache:environment"]), false],
      ["DeleteTags naming no key", "autoscaling:DeleteTags", own, false],
      ["the on-demand share (UpdateAutoScalingGroup)", "autoscaling:UpdateAutoScalingGroup", own, true],
      ["UpdateAutoScalingGroup on another stack's group", "autoscaling:UpdateAutoScalingGroup", { "aws:ResourceTag/encache:environment": "dev" }, false],
      ["the desired capacity (no tags)", "autoscaling:SetDesiredCapacity", own, true],
      ["instance protection (no tags)", "autoscaling:SetInstanceProtection", own, true],
    ];
    for (const [label, action, context, expected] of cases) {
      it(`${expected ? "allows" : "denies"} ${action.split(":")[1]}: ${label}`, () => {
        // Prepare
        const request = { action, resource: group, context };
        // Act
        const verdict = allowed(scaler() as RequestStatement[], request);
        // Assess
        expect(verdict).to.equal(expected);
      });
    }
  });

  it("tells the consumers the group and the load balancer, and the scaler its sizing", () => {
    const env = (name: string) => (named(doc, "aws:lambda/function:Function", name).inputs.environment as { variables: Record<string, string> }).variables;
    for (const fn of ["ingest-window", "ingest-dlq-consumer"]) {
      expect(env(fn)).to.include({ GPU_FLEET_GROUP_NAME: "encache-gpu-fleet-prod" });
      expect(env(fn).GPU_FLEET_SERVICE_HOST).to.be.a("string").and.not.equal("");
    }
    expect(env("ingest-gpu-scaler")).to.include({
      GPU_FLEET_GROUP_NAME: "encache-gpu-fleet-prod",
      GPU_FLEET_WINDOWS_PER_INSTANCE: String(fleet().windowsPerInstance),
      GPU_FLEET_SCALE_IN_COOLDOWN_SECONDS: String(fleet().scaleInCooldownSeconds),
      GPU_FLEET_SPOT_PERCENT: String(fleet().spotPercent),
      // The breaker's defaults unless the stack file sets them.
      GPU_SPOT_BREAKER_INTERRUPTIONS: String(fleet().spotBreaker?.interruptions ?? 2),
      GPU_SPOT_BREAKER_WINDOW_MINUTES: String(fleet().spotBreaker?.windowMinutes ?? 15),
      GPU_SPOT_BREAKER_COOLDOWN_MINUTES: String(fleet().spotBreaker?.cooldownMinutes ?? 30),
    });
    const every = fleet().scaleCheckMinutes;
    expect(named(doc, "aws:scheduler/schedule:Schedule", "ingest-gpu-scaler-check").inputs.scheduleExpression).to.equal(
      `rate(${every} minute${every === 1 ? "" : "s"})`,
    );
  });

  describe("the Spot breaker's signal: EC2's interruption warnings and rebalance recommendations, into the scaler's queue", () => {
    const rule = () => named(doc, "aws:cloudwatch/eventRule:EventRule", "ingest-gpu-spot-signals");
    const queue = () => named(doc, "aws:sqs/queue:Queue", "ingest-gpu-scaler");
    const scheduleDlq = () => named(doc, "aws:sqs/queue:Queue", "ingest-gpu-scaler-schedule-dlq");

    it("matches both EC2 events (every Spot instance's: the scaler keeps its group's)", () => {
      expect(JSON.parse(String(rule().inputs.eventPattern))).to.deep.equal({
        source: ["aws.ec2"],
        "detail-type": ["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"],
      });
    });

    it("delivers to the queue the schedule already feeds, retrying for window + cool-down, failures to the schedule's DLQ", () => {
      const target = named(doc, "aws:cloudwatch/eventTarget:EventTarget", "ingest-gpu-spot-signals-target");
      expect(target.inputs).to.deep.include({ arn: queue().arn, deadLetterConfig: { arn: scheduleDlq().arn } });
      expect(target.inputs.retryPolicy).to.deep.equal({ maximumRetryAttempts: 185, maximumEventAgeInSeconds: 45 * 60 });
      expect(named(doc, "aws:scheduler/schedule:Schedule", "ingest-gpu-scaler-check").inputs.target).to.deep.include({ arn: queue().arn });
      const mapping = named(doc, "aws:lambda/eventSourceMapping:EventSourceMapping", "ingest-gpu-scaler-mapping");
      expect(mapping.inputs.eventSourceArn).to.equal(queue().arn);
    });

    it("lets this rule only send to the queue and the DLQ (aws:SourceArn); the schedule keeps sending with its role", () => {
      for (const [policyName, q] of [
        ["ingest-gpu-scaler-queue-policy", queue()],
        ["ingest-gpu-scaler-schedule-dlq-queue-policy", scheduleDlq()],
      ] as const) {
        const policy = JSON.parse(String(named(doc, "aws:sqs/queuePolicy:QueuePolicy", policyName).inputs.policy)) as { Statement: unknown[] };
        expect(policy.Statement).to.deep.equal([
          {
            Sid: "SpotSignalsRule",
            Effect: "Allow",
            Principal: { Service: "events.amazonaws.com" },
            Action: "sqs:SendMessage",
            Resource: q.arn,
            Condition: { ArnEquals: { "aws:SourceArn": rule().arn } },
          },
        ]);
      }
      // Scheduler sends on its role's identity policy, which the queue policy (no Deny) leaves as it was.
      const scheduleRole = named(doc, "aws:iam/role:Role", "ingest-gpu-scaler-check-role");
      expect(roleStatements(doc, scheduleRole).flatMap((st) => [st.Resource].flat())).to.include(queue().arn);
    });
  });

  it("shows the fleet on the dashboard: in service against desired, and the backlog", () => {
    const body = JSON.parse(String(named(doc, "aws:cloudwatch/dashboard:Dashboard", "platform-dashboard").inputs.dashboardBody)) as {
      widgets: Array<{ properties: { title?: string } }>;
    };
    const titles = body.widgets.map((w) => w.properties.title);
    expect(titles).to.include.members(["GPU fleet: in service and desired", "GPU fleet backlog (windows)"]);
    expect(titles).to.not.include("GPU CPU (%)");
  });
});
