import { expect } from "chai";
import { type GroupTag, refreshThenUp } from "../helpers/group-tags-model";
import * as pulumi from "@pulumi/pulumi";
import { createMocks } from "../../../plan/mocks";
import { installRecorder, type Recorder } from "../../../plan/record";

// Component modules are loaded only after setMocks (see `before`), never by a static import.
type Components = {
  mq: typeof import("../../../infra/components/managed-queue");
  qc: typeof import("../../../infra/components/queue-consumer");
  gpu: typeof import("../../../infra/components/gpu-instance");
  fleet: typeof import("../../../infra/components/gpu-fleet");
  alerts: typeof import("../../../infra/components/alert-topic");
  bundle: typeof import("../../../infra/bundle");
  cluster: typeof import("../../../infra/components/fargate-cluster");
  qws: typeof import("../../../infra/components/queue-worker-service");
};

function promiseOf<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

describe("components under Pulumi mocks (in process)", function () {
  this.timeout(60_000);
  let c: Components;
  let recorder: Recorder;

  before(async () => {
    pulumi.runtime.setAllConfig({ "aws:region": "us-east-1" });
    await pulumi.runtime.setMocks(createMocks("us-east-1"), "encache", "unit", false);
    recorder = installRecorder();
    c = {
      mq: await import("../../../infra/components/managed-queue.js"),
      qc: await import("../../../infra/components/queue-consumer.js"),
      gpu: await import("../../../infra/components/gpu-instance.js"),
      fleet: await import("../../../infra/components/gpu-fleet.js"),
      alerts: await import("../../../infra/components/alert-topic.js"),
      bundle: await import("../../../infra/bundle.js"),
      cluster: await import("../../../infra/components/fargate-cluster.js"),
      qws: await import("../../../infra/components/queue-worker-service.js"),
    };
    // As in the plan: the bundle is rebuilt only when one of its inputs changed.
    c.bundle.useBundleCache(c.bundle.PLAN_BUNDLE_CACHE_DIR);
  });

  after(() => c.bundle.useBundleCache(undefined));

  it("ManagedQueue redrives to its DLQ after 3 receives and lets only its source redrive into the DLQ", async () => {
    const q = new c.mq.ManagedQueue("mq-a", {});
    const [redrive, dlqArn, queueArn, dlqRetention] = await Promise.all([
      promiseOf(q.queue.redrivePolicy),
      promiseOf(q.dlq.arn),
      promiseOf(q.queue.arn),
      promiseOf(q.dlq.messageRetentionSeconds),
    ]);
    expect(JSON.parse(redrive!)).to.deep.equal({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 });
    expect(dlqRetention).to.equal(1_209_600);
    const resources = await recorder.settle();
    const allow = resources.find((r) => r.name === "mq-a-dlq-redrive-allow");
    expect(JSON.parse(String(allow?.inputs.redriveAllowPolicy))).to.deep.equal({ redrivePermission: "byQueue", sourceQueueArns: [queueArn] });
    const children = resources.filter((r) => r.parent?.endsWith("::mq-a") && r.parent.includes("ManagedQueue"));
    expect(children.map((r) => r.name).sort()).to.deep.equal(["mq-a", "mq-a-dlq", "mq-a-dlq-depth", "mq-a-dlq-redrive-allow"]);
  });

  it("QueueConsumer refuses a queue visibility shorter than 6 × timeout + window", () => {
    expect(
      () =>
        new c.qc.QueueConsumer("qc-short", {
          entry: "functions/ingest/window.ts",
          queueArn: "arn:aws:sqs:us-east-1:123456789012:q",
          queueVisibilityTimeoutSeconds: 60,
          timeoutSeconds: 30,
          statements: [],
        }),
    ).to.throw(/shorter than 6 × timeout/);
  });

  describe("ManagedQueue declares its consumers: the ARN and the visibility come from the queue", () => {
    const cases = [
      {
        title: "consumer(): the source queue",
        name: "mq-sub",
        declare: (q: InstanceType<Components["mq"]["ManagedQueue"]>) => q.consumer,
        arnOf: (q: InstanceType<Components["mq"]["ManagedQueue"]>) => q.queue.arn,
      },
      {
        title: "dlqConsumer(): the DLQ",
        name: "mq-dlqsub",
        declare: (q: InstanceType<Components["mq"]["ManagedQueue"]>) => q.dlqConsumer,
        arnOf: (q: InstanceType<Components["mq"]["ManagedQueue"]>) => q.dlq.arn,
      },
    ];
    for (const t of cases) {
      it(`${t.title}: the mapping reads that queue, and the sizing rule is checked against its visibility`, async () => {
        // Prepare: visibility 180 s on both queues; 30 s timeouts fit (6 × 30), 31 s do not.
        const q = new c.mq.ManagedQueue(t.name, { visibilityTimeoutSeconds: 180, dlqVisibilityTimeoutSeconds: 180 });
        // Act
        const consumer = t.declare(q).call(q, `${t.name}-consumer`, { entry: "functions/ingest/window.ts", timeoutSeconds: 30, statements: [] });
        const tooSlow = () => t.declare(q).call(q, `${t.name}-slow`, { entry: "functions/ingest/window.ts", timeoutSeconds: 31, statements: [] });
        // Assess
        const [source, queueArn] = await Promise.all([promiseOf(consumer.mapping.eventSourceArn), promiseOf(t.arnOf(q))]);
        expect(source).to.equal(queueArn);
        expect(tooSlow).to.throw(/shorter than 6 × timeout/);
      });
    }
  });

  it("QueueConsumer deploys a content-hashed bundle behind a mapping that reports batch item failures", async () => {
    const consumer = new c.qc.QueueConsumer("qc-ok", {
      entry: "functions/ingest/window.ts",
      queueArn: "arn:aws:sqs:us-east-1:123456789012:q",
      queueVisibilityTimeoutSeconds: 200,
      batchSize: 5,
      batchingWindowSeconds: 2,
      maxConcurrency: 4,
      statements: [],
    });
    const [hash, responseTypes, scaling, window, role] = await Promise.all([
      promiseOf(consumer.function.sourceCodeHash),
      promiseOf(consumer.mapping.functionResponseTypes),
      promiseOf(consumer.mapping.scalingConfig),
      promiseOf(consumer.mapping.maximumBatchingWindowInSeconds),
      promiseOf(consumer.function.role),
    ]);
    expect(hash).to.equal(c.bundle.bundleFunction("functions/ingest/window.ts").sha256);
    expect(responseTypes).to.deep.equal(["ReportBatchItemFailures"]);
    expect(scaling).to.deep.equal({ maximumConcurrency: 4 });
    expect(window).to.equal(2);
    expect(role).to.equal(await promiseOf(consumer.role.arn));
  });

  it("GpuInstance resolves its AMI from SSM at deploy time, and replaces itself (delete first) when its user data changes", async () => {
    const g = new c.gpu.GpuInstance("gpu-a", {
      instanceType: "g5.xlarge",
      nameTag: "encache-gpu-worker-unit",
      environment: "unit",
      instanceIdParameter: "/encache/unit/gpu/instance_id",
      subnetId: "subnet-1",
      securityGroupIds: ["sg-1"],
      userData: "#cloud-config\n{}\n",
    });
    const [ami, tokens] = await Promise.all([promiseOf(g.instance.ami), promiseOf(g.instance.metadataOptions)]);
    expect(ami).to.equal("ami-0123456789abcdef0");
    expect(tokens.httpTokens).to.equal("required");
    const resources = await recorder.settle();
    const instance = resources.find((r) => r.type === "aws:ec2/instance:Instance" && r.name === "gpu-a");
    // A new AMI or user data is a visible diff: no ignoreChanges; cloud-init runs once per instance id, so a user-data change replaces it.
    expect(instance?.ignoreChanges ?? []).to.deep.equal([]);
    expect(instance?.inputs).to.deep.include({ userData: "#cloud-config\n{}\n", userDataReplaceOnChange: true });
    expect(instance?.deleteBeforeReplace).to.equal(true);
    // The tags its Start/Stop grants key on, set by the component itself (no `tags` passed here).
    expect(instance?.inputs.tags).to.deep.equal({ "encache:environment": "unit", Name: "encache-gpu-worker-unit" });
    // Session Manager's five actions, not AmazonSSMManagedInstanceCore (which reads every parameter):
    // the agent's heartbeat on this account's and region's instances (it has a resource type), the channels on `*`.
    expect(resources.some((r) => r.type === "aws:iam/rolePolicyAttachment:RolePolicyAttachment" && r.parent === instance?.parent)).to.equal(false);
    const sessionManager = resources.find((r) => r.name === "gpu-a-session-manager");
    expect(
      (sessionManager?.inputs.policy as { Statement: Array<{ Action: string[]; Resource: string }> }).Statement.map((s) => [s.Action, s.Resource]),
    ).to.deep.equal([
      [["ssm:UpdateInstanceInformation"], "arn:aws:ec2:us-east-1:123456789012:instance/*"],
      [["ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"], "*"],
    ]);
  });

  it("GpuInstance with deletionProtection is protected from Pulumi and from EC2's terminate (instance mode in a stack like prod)", async () => {
    // Prepare / Act
    const g = new c.gpu.GpuInstance("gpu-protected", {
      instanceType: "g5.xlarge",
      nameTag: "encache-gpu-worker-unit",
      environment: "unit",
      instanceIdParameter: "/encache/unit/gpu/instance_id",
      subnetId: "subnet-1",
      securityGroupIds: ["sg-1"],
      deletionProtection: true,
    });
    await promiseOf(g.instance.id);
    const resources = await recorder.settle();
    // Assess
    const instance = resources.find((r) => r.type === "aws:ec2/instance:Instance" && r.name === "gpu-protected");
    expect(instance?.protect).to.equal(true);
    expect(instance?.inputs.disableApiTermination).to.equal(true);
  });

  it("GpuFleet leaves desired capacity to the scaler (ignored after creation, never waited for) and names its children after itself", async () => {
    // Prepare / Act
    const f = new c.fleet.GpuFleet("fleet-a", {
      groupName: "encache-gpu-fleet-unit",
      instanceTypes: ["g5.xlarge"],
      maxSize: 2,
      warmPool: { minSize: 1 },
      vpcId: "vpc-1",
      subnetIds: ["subnet-1", "subnet-2"],
      instanceSecurityGroupId: "sg-gpu",
      loadBalancerSecurityGroupId: "sg-lb",
      servicePort: 8080,
      statusPath: "/status",
      drainSeconds: 60,
      environment: "unit",
    });
    const [host, groupName] = await Promise.all([promiseOf(f.serviceHost), promiseOf(f.group.name)]);
    const resources = await recorder.settle();
    // Assess
    const group = resources.find((r) => r.type === "aws:autoscaling/group:Group" && r.name === "fleet-a");
    // tags: the group's runtime tags survive a refresh; its declared ones are `-tag-<key>` resources (GROUP_IGNORE_CHANGES).
    expect(group?.ignoreChanges).to.deep.equal(["desiredCapacity", "tags", "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity"]);
    expect(group?.inputs).to.deep.include({
      waitForCapacityTimeout: "0",
      capacityRebalance: false,
      warmPool: { poolState: "Stopped", minSize: 1, maxGroupPreparedCapacity: 1 },
    });
    expect(group?.inputs.mixedInstancesPolicy).to.equal(undefined);
    // A refresh then an up, with the options the group was registered with: the operator's hold and
    // the scaler's stamp (undeclared) survive, and every declared tag keeps the program's value.
    const declared = group?.inputs.tags as GroupTag[];
    const tagResources = resources
      .filter((r) => r.type === "aws:autoscaling/tag:Tag" && r.name.startsWith("fleet-a-tag-"))
      .map((r) => r.inputs.tag as GroupTag);
    const declaredLive = Object.fromEntries(declared.map((t) => [t.key, t.value]));
    const runtime = { "encache:gpu-hold": "true", "encache:scaled-out-at": "2026-01-01T00:00:00.000Z" };
    expect(refreshThenUp({ ...declaredLive, ...runtime, Name: "renamed" }, declared, group?.ignoreChanges ?? [], tagResources)).to.deep.equal({
      ...declaredLive,
      ...runtime,
    });
    expect(groupName).to.equal("encache-gpu-fleet-unit");
    expect(host).to.match(/^internal-fleet-a-lb-/);
    const children = resources.filter((r) => /GpuFleet(\$encache:compute:InternalLoadBalancer)?::fleet-a$/.test(r.parent ?? "")).map((r) => r.name);
    expect(children.every((n) => n.startsWith("fleet-a"))).to.equal(true);
    expect(children).to.include.members([
      "fleet-a-lt",
      "fleet-a-lb",
      "fleet-a-tg",
      "fleet-a-listener",
      "fleet-a-role",
      "fleet-a-profile",
      "fleet-a-drain",
      "fleet-a-tag-Name",
    ]);
    // The load balancer's three moved into their own component, each aliased to where it was: no URN of an existing stack changes.
    for (const [type, child] of [
      ["aws:lb/loadBalancer:LoadBalancer", "fleet-a-lb"],
      ["aws:lb/targetGroup:TargetGroup", "fleet-a-tg"],
      ["aws:lb/listener:Listener", "fleet-a-listener"],
    ] as const) {
      const moved = resources.find((r) => r.name === child && r.type === type);
      expect(moved?.parent).to.match(/encache:compute:GpuFleet\$encache:compute:InternalLoadBalancer::fleet-a$/);
      // An alias spec: the same name and type (empty: unchanged) under the fleet itself, its former parent.
      const specs = (moved?.aliases ?? []) as Array<{ name: string; type: string; parenturn?: string }>;
      expect(
        specs.some((a) => a.name === "" && a.type === "" && /encache:compute:GpuFleet::fleet-a$/.test(a.parenturn ?? "")),
        JSON.stringify(specs),
      ).to.equal(true);
    }
  });

  describe("AlertTopic: every subscription it accepts can deliver", () => {
    const FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:pager";

    it("lets the topic invoke a lambda endpoint (a permission for sns.amazonaws.com from this topic only), before subscribing it", async () => {
      // Prepare
      const t = new c.alerts.AlertTopic("alerts-a", {
        accountId: "123456789012",
        subscriptions: [
          { protocol: "email", endpoint: "oncall@example.com" },
          { protocol: "lambda", endpoint: FUNCTION_ARN },
        ],
      });
      // Act
      const topicArn = await promiseOf(t.topic.arn);
      const resources = await recorder.settle();
      // Assess
      const mine = resources.filter((r) => r.name.startsWith("alerts-a-"));
      const permissions = mine.filter((r) => r.type === "aws:lambda/permission:Permission");
      expect(permissions.map((r) => r.name)).to.deep.equal(["alerts-a-subscription-1-invoke"]);
      expect(permissions[0]!.inputs).to.deep.include({
        action: "lambda:InvokeFunction",
        function: FUNCTION_ARN,
        principal: "sns.amazonaws.com",
        sourceArn: topicArn,
      });
      const subscription = mine.find((r) => r.name === "alerts-a-subscription-1");
      expect(subscription?.dependencies).to.include(permissions[0]!.urn);
      expect(mine.find((r) => r.name === "alerts-a-subscription-0")?.dependencies).to.not.include(permissions[0]!.urn);
    });

    const refused: Array<[string, { protocol: string; endpoint: string }, RegExp]> = [
      [
        "an sqs endpoint (its queue policy is not this stack's to write)",
        { protocol: "sqs", endpoint: "arn:aws:sqs:us-east-1:123456789012:q" },
        /subscriptions\[0\]\.protocol: sqs is not supported/,
      ],
      ["a lambda endpoint that is no function ARN", { protocol: "lambda", endpoint: "pager" }, /subscriptions\[0\]\.endpoint: must be a Lambda function ARN/],
    ];
    for (const [title, subscription, message] of refused) {
      it(`refuses ${title}`, () => {
        expect(() => new c.alerts.AlertTopic(`alerts-${subscription.protocol}`, { accountId: "123456789012", subscriptions: [subscription] })).to.throw(
          message,
        );
      });
    }
  });

  it("QueueWorkerService composes a FargateTaskDefinition, whose children keep their earlier URNs under the service by aliases", async () => {
    // Prepare: see each registration's alias specs, as the engine receives them.
    const monitor = pulumi.runtime.getMonitor() as unknown as { registerResource(req: AliasedRequest, cb: unknown): void };
    const original = monitor.registerResource.bind(monitor);
    const seen: Array<{ type: string; name: string; parent: string; aliases: Array<{ name: string; parenturn: string }> }> = [];
    monitor.registerResource = (req, cb) => {
      const aliases = req
        .getAliasesList()
        .map((a) => a.toObject().spec)
        .filter((x): x is { name: string; parenturn: string } => x !== undefined)
        .map((x) => ({ name: x.name, parenturn: x.parenturn }));
      seen.push({ type: req.getType(), name: req.getName(), parent: req.getParent(), aliases });
      original(req, cb);
    };

    // Act
    let service: InstanceType<Components["qws"]["QueueWorkerService"]>;
    try {
      const cluster = new c.cluster.FargateCluster("qws-a-cluster", {});
      service = new c.qws.QueueWorkerService("qws-a", {
        cluster,
        image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/w@sha256:" + "a".repeat(64),
        repositoryArn: "arn:aws:ecr:us-east-1:123456789012:repository/w",
        queueName: "q",
        taskRoleStatements: [{ Sid: "Work", Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: "*" }],
        vpcId: "vpc-1",
        subnetIds: ["subnet-1"],
        region: "us-east-1",
        family: "qws-a",
        scaling: { minTasks: 1, maxTasks: 2, backlogPerTaskTarget: 10 },
      });
      await promiseOf(service.service.name);
    } finally {
      monitor.registerResource = original;
    }

    // Assess
    const serviceUrn = await promiseOf(service.urn);
    const taskUrn = await promiseOf(service.task.urn);
    const underTask = seen.filter((r) => r.parent === taskUrn);
    expect(underTask.map((r) => r.name).sort()).to.deep.equal(
      [
        "qws-a",
        "qws-a-declared",
        "qws-a-execution",
        "qws-a-execution-policy",
        "qws-a-execution-policy-declared",
        "qws-a-logs",
        "qws-a-task",
        "qws-a-task-policy",
        "qws-a-task-policy-declared",
      ].sort(),
    );
    const earlier = c.qws.earlierChildNames("qws-a");
    for (const r of underTask) expect(r.aliases, r.name).to.deep.equal([{ name: earlier[r.name] ?? r.name, parenturn: serviceUrn }]);
    expect(seen.find((r) => r.type === "encache:compute:FargateTaskDefinition")?.aliases).to.deep.equal([]);
  });
});

interface AliasedRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getAliasesList(): Array<{ toObject(): { spec?: { name: string; parenturn: string } } }>;
}
