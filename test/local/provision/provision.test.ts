import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DescribeImagesCommand, DescribeInstancesCommand, DescribeLaunchTemplateVersionsCommand, DescribeSubnetsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { DescribeClustersCommand, DescribeServicesCommand, DescribeTaskDefinitionCommand, ECSClient } from "@aws-sdk/client-ecs";
import { AutoScalingClient, DescribeAutoScalingGroupsCommand, DescribeLifecycleHooksCommand } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient, DescribeAlarmsCommand } from "@aws-sdk/client-cloudwatch";
import {
  GetSubscriptionAttributesCommand,
  GetTopicAttributesCommand,
  ListSubscriptionsByTopicCommand,
  ListTopicsCommand,
  SNSClient,
} from "@aws-sdk/client-sns";
import { GetQueueAttributesCommand, GetQueueUrlCommand, ListQueuesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { GetParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { containersForMoto, createMotoMocks, launchTemplateData, physicalName, type MotoMocks } from "../../../local/provision";
import { splitCreated } from "../../../local/provision/topology";
import {
  alarmsFrom,
  functionNameOf,
  functionsFrom,
  instancesFrom,
  mappingsFrom,
  queuesFrom,
  schedulesFrom,
  taskDefinitionsFrom,
  topicsFrom,
} from "../../../local/provision/topology-parsers";
import type { Topology } from "../../../local/provision/topology-types";
import type { RecordedResource } from "../../../policy/testing/types";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";
import { provisionInChild, runProvisionChild } from "../helpers/provision-run";

const sqs = () => new SQSClient({});
const byLogical = <T extends { logicalName: string }>(items: T[], name: string): T => {
  const found = items.find((i) => i.logicalName === name);
  if (!found) throw new Error(`no ${name} in ${items.map((i) => i.logicalName).join(", ")}`);
  return found;
};
const recorded = (t: Topology, type: string, name: string): RecordedResource => {
  const found = t.resources.find((r) => r.type === type && r.name === name);
  if (!found) throw new Error(`no ${type} ${name} in the recording`);
  return found;
};

describe("deployLocally: the dev stack deployed into moto (child process)", function () {
  let topology: Topology;
  let codeDir: string;

  before(async function () {
    this.timeout(180_000);
    await resetMoto();
    codeDir = fs.mkdtempSync(path.join(os.tmpdir(), "provision-test-"));
    const { topology: t, run } = await provisionInChild("dev", codeDir);
    topology = t;
    console.log(`      (provisioning the dev stack: ${run.wallMs} ms wall in the child; ${/deployLocally took \d+ ms/.exec(run.stderr)?.[0] ?? ""})`);
  });

  after(() => fs.rmSync(codeDir, { recursive: true, force: true }));

  it("creates the ingest queue with its real visibility timeout and a redrive policy naming the DLQ's moto ARN", async () => {
    const ingest = byLogical(topology.queues, "ingest");
    const dlq = byLogical(topology.queues, "ingest-dlq");

    const attrs = (await sqs().send(new GetQueueAttributesCommand({ QueueUrl: ingest.url, AttributeNames: ["All"] }))).Attributes ?? {};
    const dlqArn = (await sqs().send(new GetQueueAttributesCommand({ QueueUrl: dlq.url, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn;

    expect(attrs.VisibilityTimeout).to.equal(String(recorded(topology, "aws:sqs/queue:Queue", "ingest").inputs.visibilityTimeoutSeconds));
    expect(attrs.VisibilityTimeout).to.equal(String(ingest.visibilityTimeoutSeconds));
    const redrive = JSON.parse(attrs.RedrivePolicy ?? "{}") as { deadLetterTargetArn?: string; maxReceiveCount?: number | string };
    expect(redrive.deadLetterTargetArn).to.equal(dlqArn).and.to.equal(dlq.arn);
    expect(Number(redrive.maxReceiveCount)).to.equal(3);
    expect(ingest.redrive).to.deep.equal({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 });
    expect(ingest.role).to.equal("source");
    expect(ingest.url.startsWith(motoEndpoint())).to.equal(true);
  });

  it("creates the jobs and claim tables with their GSIs and TTL", async () => {
    const ddb = new DynamoDBClient({});
    for (const logical of ["fleet-jobs", "pool-claims"]) {
      const table = byLogical(topology.tables, logical);
      const declared = (recorded(topology, "aws:dynamodb/table:Table", logical).inputs.globalSecondaryIndexes as Array<{ name: string }>)
        .map((g) => g.name)
        .sort();

      const described = await ddb.send(new DescribeTableCommand({ TableName: table.name }));
      const ttl = await ddb.send(new DescribeTimeToLiveCommand({ TableName: table.name }));

      expect(described.Table?.TableArn, logical).to.equal(table.arn);
      expect((described.Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName).sort(), logical).to.deep.equal(declared);
      expect(ttl.TimeToLiveDescription?.AttributeName, logical).to.equal("expires_at");
    }
    expect(byLogical(topology.tables, "fleet-jobs").name).to.match(/^fleet-jobs-[0-9a-f]{7}$/);
  });

  it("runs the GPU instance in moto and stores its id in the SSM parameter", async () => {
    const gpu = byLogical(topology.instances, "ingest-gpu");

    const described = await new EC2Client({}).send(new DescribeInstancesCommand({ InstanceIds: [gpu.id] }));
    const param = await new SSMClient({}).send(new GetParameterCommand({ Name: "/encache/dev/gpu/instance_id" }));

    const instance = described.Reservations?.[0]?.Instances?.[0];
    expect(instance?.InstanceId).to.equal(gpu.id);
    expect(instance?.Tags?.find((t) => t.Key === "Name")?.Value).to.equal("encache-gpu-worker-dev");
    expect(param.Parameter?.Value).to.equal(gpu.id);
  });

  it("answers the VPC with moto's subnets, and the pool launch templates use them", async () => {
    const vpc = topology.resources.find((r) => r.type === "awsx:ec2:Vpc");
    const subnetIds = (vpc?.outputs.privateSubnetIds ?? []) as string[];
    const lt = topology.resources.find((r) => r.type === "aws:ec2/launchTemplate:LaunchTemplate");
    const ltId = String(lt?.outputs.arn).split("/").pop();

    const subnets = await new EC2Client({}).send(new DescribeSubnetsCommand({ SubnetIds: subnetIds }));
    const versions = await new EC2Client({}).send(new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: ltId }));

    expect(subnetIds).to.have.length.greaterThan(0);
    expect((subnets.Subnets ?? []).map((s) => s.SubnetId).sort()).to.deep.equal([...subnetIds].sort());
    const data = versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
    expect(subnetIds).to.include(data?.NetworkInterfaces?.[0]?.SubnetId);
    expect(data?.ImageId).to.match(/^ami-/);
  });

  it("creates the ECS cluster, both task definitions with container memory, and the worker service", async () => {
    const ecs = new ECSClient({});
    const [cluster] = topology.clusters;
    expect(topology.taskDefinitions).to.have.length(2);

    const clusters = await ecs.send(new DescribeClustersCommand({ clusters: [cluster!.arn] }));
    const defs = await Promise.all(topology.taskDefinitions.map((td) => ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: td.arn }))));
    const service = topology.services[0]!;
    const services = await ecs.send(new DescribeServicesCommand({ cluster: service.clusterArn, services: [service.name] }));

    expect(clusters.clusters?.[0]?.clusterName).to.equal(cluster!.name);
    for (const d of defs) {
      for (const c of d.taskDefinition?.containerDefinitions ?? []) expect(c.memory, `${d.taskDefinition?.family}/${c.name}`).to.be.a("number");
    }
    expect(topology.taskDefinitions.map((t) => t.containerDefinitions[0]?.name).sort()).to.deep.equal(["strategy", "worker"]);
    expect(services.services?.[0]?.serviceName).to.equal(service.name);
    expect(services.services?.[0]?.taskDefinition).to.equal(byLogical(topology.taskDefinitions, "worker").arn);
    expect(service.desiredCount).to.equal(services.services?.[0]?.desiredCount);
  });

  it("writes each function's bundle and gives it moto's real queue URLs", async () => {
    const queueUrls = new Set((await sqs().send(new ListQueuesCommand({ MaxResults: 1000 }))).QueueUrls ?? []);
    const dlqUrl = (await sqs().send(new GetQueueUrlCommand({ QueueName: byLogical(topology.queues, "ingest-dlq").name }))).QueueUrl;
    expect(topology.functions).to.have.length.greaterThan(0);

    for (const fn of topology.functions) {
      expect(fs.statSync(fn.codePath).size, fn.logicalName).to.be.greaterThan(1000);
      const urls = Object.values(fn.environment).filter((v) => /\/123456789012\/[\w-]+$/.test(v));
      for (const url of urls) expect(queueUrls.has(url), `${fn.logicalName}: ${url}`).to.equal(true);
    }
    expect(byLogical(topology.functions, "ingest-dlq-consumer").environment.INGEST_DLQ_URL).to.equal(dlqUrl);
    expect(fs.readFileSync(byLogical(topology.functions, "ingest-window").codePath, "utf8")).to.include("exports");
  });

  it("resolves every mapping to a real queue URL and a function of the topology", async () => {
    expect(topology.mappings).to.have.length(topology.functions.length);
    for (const m of topology.mappings) {
      const arn = (await sqs().send(new GetQueueAttributesCommand({ QueueUrl: m.queueUrl, AttributeNames: ["QueueArn"] }))).Attributes?.QueueArn;
      expect(arn, m.logicalName).to.equal(m.queueArn);
      expect(
        topology.functions.map((f) => f.name),
        m.logicalName,
      ).to.include(m.functionName);
      expect(m.reportBatchItemFailures, m.logicalName).to.equal(true);
    }
  });

  it("carries each schedule's input and targets a declared queue", () => {
    const arns = topology.queues.map((q) => q.arn);
    const retrain = topology.schedules.find((s) => s.logicalName.startsWith("retraining-schedule-"));

    expect(JSON.parse(retrain?.target.input ?? "{}")).to.include({ trigger: "scheduled" });
    for (const s of topology.schedules) {
      expect(arns, s.logicalName).to.include(s.target.arn);
      expect(arns, s.logicalName).to.include(s.target.deadLetterArn);
      expect(s.enabled).to.equal(true);
    }
  });

  it("lists what moto holds as created (queues, the alert topic, alarms…) and the rest (Lambda, log groups…) as uncreated", () => {
    const uncreatedTypes = new Set(topology.uncreated.map((u) => u.type));
    const createdTypes = new Set(topology.resources.filter((r) => topology.created.includes(r.urn)).map((r) => r.type));

    expect(uncreatedTypes).to.include("aws:lambda/function:Function");
    expect(uncreatedTypes).to.include("aws:cloudwatch/logGroup:LogGroup");
    for (const type of ["aws:sns/topic:Topic", "aws:sns/topicPolicy:TopicPolicy", "aws:cloudwatch/metricAlarm:MetricAlarm"])
      expect(createdTypes, type).to.include(type);
    expect(topology.created).to.include(byLogical(topology.queues, "ingest").urn);
    expect(topology.created).to.include(byLogical(topology.instances, "ingest-gpu").urn);
    expect(topology.created.filter((u) => topology.uncreated.some((x) => x.urn === u))).to.deep.equal([]);
  });

  it("creates the alert topic with its policy for this account's CloudWatch, and the subscriptions the stack config names", async () => {
    const sns = new SNSClient({});
    const topic = byLogical(topology.topics, "platform-alerts");

    const listed = (await sns.send(new ListTopicsCommand({}))).Topics?.map((t) => t.TopicArn);
    const attrs = (await sns.send(new GetTopicAttributesCommand({ TopicArn: topic.arn }))).Attributes ?? {};
    const subscriptions = (await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topic.arn }))).Subscriptions ?? [];

    expect(listed).to.include(topic.arn);
    expect(topic.name).to.match(/^platform-alerts-[0-9a-f]{7}$/);
    const statement = (JSON.parse(attrs.Policy ?? "{}") as { Statement: Array<Record<string, unknown>> }).Statement[0];
    expect(statement).to.deep.include({
      Sid: "CloudWatchAlarmsOfThisAccount",
      Effect: "Allow",
      Principal: { Service: "cloudwatch.amazonaws.com" },
      Action: "sns:Publish",
      Resource: topic.arn,
    });
    expect(statement?.Condition).to.deep.equal({ StringEquals: { "aws:SourceAccount": "123456789012" } });
    // Pulumi.dev.yaml names no encache:alerts subscriptions; the deploy must not invent any.
    expect(subscriptions.map((x) => ({ protocol: x.Protocol, endpoint: x.Endpoint }))).to.deep.equal(topic.subscriptions);
  });

  it("creates every alarm in moto with its metric, threshold and the alert topic as action", async () => {
    const topic = byLogical(topology.topics, "platform-alerts");
    const queueNames = new Set(topology.queues.map((q) => q.name));
    expect(topology.alarms).to.have.length.greaterThan(0);

    const described = await new CloudWatchClient({}).send(new DescribeAlarmsCommand({ AlarmNames: topology.alarms.map((a) => a.name) }));

    const byName = new Map((described.MetricAlarms ?? []).map((m) => [m.AlarmName, m]));
    for (const a of topology.alarms) {
      const m = byName.get(a.name);
      expect(m?.AlarmArn, a.logicalName).to.equal(a.arn);
      expect(m, a.logicalName).to.deep.include({
        Namespace: a.namespace,
        MetricName: a.metricName,
        Statistic: a.statistic,
        Period: a.periodSeconds,
        EvaluationPeriods: a.evaluationPeriods,
        Threshold: a.threshold,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
      });
      expect(m?.Dimensions, a.logicalName).to.have.deep.members(Object.entries(a.dimensions).map(([Name, Value]) => ({ Name, Value })));
      expect(m?.AlarmActions, a.logicalName).to.include(topic.arn);
      if (a.namespace === "AWS/SQS") expect(queueNames.has(a.queueName ?? ""), `${a.logicalName} watches ${a.queueName}`).to.equal(true);
      expect(topology.created, a.logicalName).to.include(a.urn);
    }
    // Every queue alarm is a depth alarm on Maximum visible; the one EMF alarm is the GPU capacity alarm.
    const depth = topology.alarms.filter((a) => a.namespace === "AWS/SQS");
    expect(depth.every((a) => a.metricName === "ApproximateNumberOfMessagesVisible" && a.statistic === "Maximum")).to.equal(true);
    expect(topology.alarms.filter((a) => a.namespace !== "AWS/SQS").map((a) => [a.logicalName, a.namespace, a.metricName, a.dimensions])).to.deep.equal([
      ["ingest-gpu-capacity", "Encache/Ingest", "GpuStartInsufficientCapacity", { service: "ingest-dlq-consumer-dev" }],
    ]);
  });
});

describe("deployLocally: the prod stack's alert subscriptions in moto (child process)", function () {
  let topology: Topology;
  let codeDir: string;

  before(async function () {
    this.timeout(180_000);
    await resetMoto();
    codeDir = fs.mkdtempSync(path.join(os.tmpdir(), "provision-prod-"));
    ({ topology } = await provisionInChild("prod", codeDir));
  });

  after(() => fs.rmSync(codeDir, { recursive: true, force: true }));

  it("subscribes what Pulumi.prod.yaml's encache:alerts names to the alert topic", async () => {
    // Prepare
    const topic = byLogical(topology.topics, "platform-alerts");
    // Act
    const subscriptions = (await new SNSClient({}).send(new ListSubscriptionsByTopicCommand({ TopicArn: topic.arn }))).Subscriptions ?? [];
    // Assess
    expect(topic.subscriptions).to.deep.equal([{ protocol: "email", endpoint: "platform-oncall@example.com" }]);
    expect(subscriptions.map((x) => ({ protocol: x.Protocol, endpoint: x.Endpoint }))).to.deep.equal(topic.subscriptions);
    expect(subscriptions[0]?.SubscriptionArn).to.match(new RegExp(`^${topic.arn}:[0-9a-f-]{36}$`));
    expect(topology.created).to.include(recorded(topology, "aws:sns/topicSubscription:TopicSubscription", "platform-alerts-subscription-0").urn);
  });
});

describe("deployLocally: the prod stack's GPU fleet in moto (child process)", function () {
  let topology: Topology;
  let codeDir: string;

  before(async function () {
    this.timeout(180_000);
    await resetMoto();
    codeDir = fs.mkdtempSync(path.join(os.tmpdir(), "provision-prod-fleet-"));
    ({ topology } = await provisionInChild("prod", codeDir));
  });

  after(() => fs.rmSync(codeDir, { recursive: true, force: true }));

  it("creates the Auto Scaling group at 0 with the stack's max and stores its drain hook; the runtime's fleet has the load balancer", async () => {
    // Prepare
    const fleet = topology.fleets[0];
    const autoscaling = new AutoScalingClient({});

    // Act
    const group = (await autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [fleet?.groupName ?? ""] }))).AutoScalingGroups?.[0];
    const hooks = (await autoscaling.send(new DescribeLifecycleHooksCommand({ AutoScalingGroupName: fleet?.groupName ?? "" }))).LifecycleHooks ?? [];

    // Assess
    expect(topology.fleets).to.have.length(1);
    expect(topology.instances.filter((i) => i.logicalName.includes("gpu"))).to.deep.equal([]);
    expect(fleet).to.deep.include({ groupName: "encache-gpu-fleet-prod", maxSize: 4, warmPoolMinSize: 0, drainHookSeconds: 90 });
    expect(fleet?.spot).to.deep.equal({
      onDemandBaseCapacity: 1,
      onDemandPercentageAboveBaseCapacity: 25,
      instanceTypes: ["g5.2xlarge", "g6.2xlarge", "g5.4xlarge"],
    });
    expect(fleet?.loadBalancer).to.deep.include({ port: 8080 });
    expect(fleet?.loadBalancer.dnsName).to.match(/^internal-.*\.us-east-1\.elb\.amazonaws\.com$/);
    expect(fleet?.loadBalancer.healthCheck).to.deep.include({ path: "/status", healthyThreshold: 2 });
    expect(group).to.deep.include({ MinSize: 0, MaxSize: 4, DesiredCapacity: 0 });
    expect(group?.Instances ?? []).to.deep.equal([]);
    expect(hooks.map((h) => [h.LifecycleHookName, h.LifecycleTransition, h.HeartbeatTimeout])).to.deep.equal([
      ["drain", "autoscaling:EC2_INSTANCE_TERMINATING", 90],
    ]);
    const window = byLogical(topology.functions, "ingest-window");
    expect(window.environment.GPU_FLEET_SERVICE_HOST).to.equal(fleet?.loadBalancer.dnsName);
    expect(window.environment.GPU_FLEET_GROUP_NAME).to.equal(fleet?.groupName);
  });
});

describe("deployLocally: failures and the once-per-process guard", () => {
  it("fails with the provisioning error that names the resource, not Pulumi's wrapping of it", async () => {
    const run = await runProvisionChild(["--program", "test/local/helpers/provision-fixture-program.ts", "dev", os.tmpdir()]);

    expect(run.code).to.equal(1);
    expect(run.stderr).to.match(/^provisioning aws:iam\/rolePolicy:RolePolicy "fixture-orphan-policy" in moto failed: NoSuchEntity/m);
    expect(run.stderr).not.to.include("error serializing property");
  });

  it("refuses a second call with a clear error", async () => {
    const run = await runProvisionChild(["--twice", "no-such-stack", os.tmpdir()]);

    expect(run.code).to.equal(1);
    expect(run.stderr).to.include('first call: no stack "no-such-stack"');
    expect(run.stderr).to.include("deployLocally may run only once per process");
  });
});

describe("createMotoMocks against moto (no Pulumi runtime)", () => {
  let mocks: MotoMocks;
  let codeDir: string;
  const args = (type: string, name: string, inputs: Record<string, unknown>) => ({ type, name, inputs, custom: true, provider: "", id: undefined });

  beforeEach(async () => {
    await resetMoto();
    codeDir = fs.mkdtempSync(path.join(os.tmpdir(), "provision-mocks-"));
    mocks = createMotoMocks({ region: "us-east-1", endpoint: motoEndpoint(), codeDir });
  });
  afterEach(() => fs.rmSync(codeDir, { recursive: true, force: true }));

  it("fails with a message naming the resource's type and logical name", async () => {
    const err = await mocks.newResource(args("aws:iam/rolePolicy:RolePolicy", "orphan-policy", { role: "no-such-role", policy: "{}" })).then(
      () => undefined,
      (e: unknown) => e as Error,
    );

    expect(err?.name).to.equal("ProvisionError");
    expect(err?.message).to.include('aws:iam/rolePolicy:RolePolicy "orphan-policy"').and.include("NoSuchEntity");
  });

  it("records an AWS-managed policy attachment as uncreated when moto has not loaded it", async () => {
    await mocks.newResource(args("aws:iam/role:Role", "r", { name: "r", assumeRolePolicy: { Version: "2012-10-17", Statement: [] } }));

    await mocks.newResource(
      args("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "ssm-core", { role: "r", policyArn: "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore" }),
    );

    const outcome = mocks.outcomes().find((o) => o.name === "ssm-core");
    expect(outcome?.created).to.equal(false);
    expect(outcome?.notes.join()).to.include("MOTO_IAM_LOAD_MANAGED_POLICIES");
    expect(mocks.outcomes().find((o) => o.name === "r")?.created).to.equal(true);
  });

  it("registers a container without memory with the task's memory, and notes it", async () => {
    const containers = JSON.stringify([{ name: "app", image: "busybox", essential: true }]);

    const res = await mocks.newResource(
      args("aws:ecs/taskDefinition:TaskDefinition", "app", {
        family: "app",
        containerDefinitions: containers,
        cpu: "256",
        memory: "512",
        networkMode: "awsvpc",
        requiresCompatibilities: ["FARGATE"],
      }),
    );

    const td = await new ECSClient({}).send(new DescribeTaskDefinitionCommand({ taskDefinition: String(res.state.arn) }));
    expect(td.taskDefinition?.containerDefinitions?.[0]?.memory).to.equal(512);
    expect(res.state.containerDefinitions).to.equal(containers);
    expect(mocks.outcomes()[0]?.notes.join()).to.include("memory set to the task's 512 MiB");
  });

  it("writes a Lambda's index.js without creating it, and answers with a realistic ARN", async () => {
    const code = new pulumi.asset.AssetArchive({ "index.js": new pulumi.asset.StringAsset("exports.handler = async () => 42;") });

    const res = await mocks.newResource(args("aws:lambda/function:Function", "fn", { code, handler: "index.handler" }));

    expect(fs.readFileSync(path.join(codeDir, "fn", "index.js"), "utf8")).to.equal("exports.handler = async () => 42;");
    expect(res.state.arn).to.match(/^arn:aws:lambda:us-east-1:123456789012:function:fn-[0-9a-f]{7}$/);
    expect(mocks.outcomes()[0]).to.include({ created: false });
  });

  it("creates a queue with its attributes and answers with moto's URL and ARN", async () => {
    const res = await mocks.newResource(
      args("aws:sqs/queue:Queue", "q", { delaySeconds: 5, receiveWaitTimeSeconds: 10, messageRetentionSeconds: 600, tags: { a: "b" } }),
    );

    const attrs = (await sqs().send(new GetQueueAttributesCommand({ QueueUrl: res.id, AttributeNames: ["All"] }))).Attributes ?? {};
    expect(res.id).to.equal(res.state.url);
    expect(String(res.id).startsWith(motoEndpoint())).to.equal(true);
    expect(attrs).to.include({ DelaySeconds: "5", ReceiveMessageWaitTimeSeconds: "10", MessageRetentionPeriod: "600", QueueArn: res.state.arn });
  });

  it("creates a topic, sets its policy and subscribes to it, answering with moto's ARNs", async () => {
    const sns = new SNSClient({});
    const topic = await mocks.newResource(args("aws:sns/topic:Topic", "alerts", { tags: { team: "platform" } }));
    const policy = JSON.stringify({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: { Service: "cloudwatch.amazonaws.com" }, Action: "sns:Publish", Resource: topic.state.arn }],
    });

    const set = await mocks.newResource(args("aws:sns/topicPolicy:TopicPolicy", "alerts-policy", { arn: topic.state.arn, policy }));
    const sub = await mocks.newResource(
      args("aws:sns/topicSubscription:TopicSubscription", "alerts-subscription-0", {
        topic: topic.state.arn,
        protocol: "email",
        endpoint: "oncall@example.com",
      }),
    );

    const attrs = (await sns.send(new GetTopicAttributesCommand({ TopicArn: String(topic.state.arn) }))).Attributes ?? {};
    const subAttrs = (await sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: String(sub.id) }))).Attributes ?? {};
    expect(topic.id).to.equal(topic.state.arn);
    expect(topic.state.arn).to.match(/^arn:aws:sns:us-east-1:123456789012:alerts-[0-9a-f]{7}$/);
    expect(topic.state).to.deep.include({ name: String(topic.state.arn).split(":").pop(), tags: { team: "platform" } });
    expect(JSON.parse(attrs.Policy ?? "{}")).to.deep.equal(JSON.parse(policy));
    expect(set).to.deep.include({ id: topic.state.arn });
    expect(sub.state).to.deep.include({ arn: sub.id, protocol: "email", endpoint: "oncall@example.com" });
    expect(subAttrs).to.include({ TopicArn: topic.state.arn, Protocol: "email", Endpoint: "oncall@example.com" });
    expect(mocks.outcomes().every((o) => o.created)).to.equal(true);
    expect(
      mocks
        .outcomes()
        .find((o) => o.name === "alerts-subscription-0")
        ?.notes.join(),
    ).to.include("pending until its recipient confirms");
  });

  it("puts a metric alarm into moto with its dimensions and actions, answering with moto's ARN", async () => {
    const res = await mocks.newResource(
      args("aws:cloudwatch/metricAlarm:MetricAlarm", "dlq-depth", {
        alarmDescription: "d",
        namespace: "AWS/SQS",
        metricName: "ApproximateNumberOfMessagesVisible",
        dimensions: { QueueName: "q-1" },
        statistic: "Maximum",
        period: 300,
        evaluationPeriods: 1,
        threshold: 1,
        comparisonOperator: "GreaterThanOrEqualToThreshold",
        treatMissingData: "notBreaching",
        alarmActions: ["arn:aws:sns:us-east-1:123456789012:t"],
        okActions: ["arn:aws:sns:us-east-1:123456789012:t"],
        tags: { a: "b" },
      }),
    );

    const alarm = (await new CloudWatchClient({}).send(new DescribeAlarmsCommand({ AlarmNames: [String(res.id)] }))).MetricAlarms?.[0];
    expect(res.id).to.match(/^dlq-depth-[0-9a-f]{7}$/);
    expect(res.state).to.deep.include({ name: res.id, arn: alarm?.AlarmArn, threshold: 1 });
    expect(alarm).to.deep.include({ AlarmDescription: "d", Statistic: "Maximum", Threshold: 1, Period: 300, TreatMissingData: "notBreaching" });
    expect(alarm?.Dimensions).to.deep.equal([{ Name: "QueueName", Value: "q-1" }]);
    expect(alarm?.OKActions).to.deep.equal(["arn:aws:sns:us-east-1:123456789012:t"]);
    expect(mocks.outcomes()[0]).to.include({ created: true });
  });

  it("answers the AMI parameter with an image moto knows", async () => {
    const res = await mocks.call({ token: "aws:ssm/getParameter:getParameter", inputs: { name: "/aws/service/whatever" }, provider: "" });

    const run = await mocks.newResource(args("aws:ec2/instance:Instance", "i", { ami: res.value, instanceType: "t3.micro", tags: { Name: "x" } }));

    const images = await new EC2Client({}).send(new DescribeImagesCommand({ ImageIds: [String(res.value)] }));
    expect(images.Images?.[0]?.ImageId).to.equal(res.value);
    expect(String(run.state.arn)).to.match(/instance\/i-[0-9a-f]+$/);
  });

  it("sends SQS calls to sqsEndpoint and the rest to endpoint", async () => {
    const split = createMotoMocks({ region: "us-east-1", endpoint: motoEndpoint(), sqsEndpoint: "http://127.0.0.1:9", codeDir });

    const param = await split.newResource(args("aws:ssm/parameter:Parameter", "p", { name: "/p", type: "String", value: "v" }));
    const queueErr = await split.newResource(args("aws:sqs/queue:Queue", "q", {})).then(
      () => undefined,
      (e: unknown) => e as Error,
    );

    expect(param.id).to.equal("/p");
    expect(queueErr?.message).to.include('aws:sqs/queue:Queue "q"');
  });
});

describe("provisioning helpers (pure)", () => {
  it("patches only containers without memory", () => {
    const json = JSON.stringify([{ name: "a", memory: 256 }, { name: "b" }]);

    const { containers, notes } = containersForMoto(json, 1024);

    expect(containers.map((c) => c.memory)).to.deep.equal([256, 1024]);
    expect(notes).to.have.length(1);
    expect(containersForMoto(json, undefined).containers[1]?.memory).to.equal(undefined);
  });

  it("maps pulumi's launch template inputs to the EC2 API", () => {
    const data = launchTemplateData({
      imageId: "ami-1",
      instanceType: "m7i.large",
      iamInstanceProfile: { arn: "arn:aws:iam::1:instance-profile/p" },
      blockDeviceMappings: [{ deviceName: "/dev/xvda", ebs: { deleteOnTermination: "true", encrypted: "true", volumeSize: 30, volumeType: "gp3" } }],
      networkInterfaces: [{ associatePublicIpAddress: "false", deviceIndex: 0, securityGroups: ["sg-1"], subnetId: "subnet-1" }],
      instanceMarketOptions: { marketType: "spot", spotOptions: { spotInstanceType: "one-time" } },
      tagSpecifications: [{ resourceType: "instance", tags: { k: "v" } }],
      updateDefaultVersion: true,
    });

    expect(data).to.deep.equal({
      ImageId: "ami-1",
      InstanceType: "m7i.large",
      IamInstanceProfile: { Arn: "arn:aws:iam::1:instance-profile/p" },
      BlockDeviceMappings: [{ DeviceName: "/dev/xvda", Ebs: { DeleteOnTermination: true, Encrypted: true, VolumeSize: 30, VolumeType: "gp3" } }],
      NetworkInterfaces: [{ AssociatePublicIpAddress: false, DeviceIndex: 0, SubnetId: "subnet-1", Groups: ["sg-1"] }],
      InstanceMarketOptions: { MarketType: "spot", SpotOptions: { SpotInstanceType: "one-time" } },
      TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "k", Value: "v" }] }],
    });
  });

  it("names resources like Pulumi: the given name, else <logical>-<7 hex>, deterministically", () => {
    const auto = physicalName({ type: "aws:sqs/queue:Queue", name: "ingest", inputs: {} });

    expect(physicalName({ type: "aws:sqs/queue:Queue", name: "ingest", inputs: { name: "given" } })).to.equal("given");
    expect(auto).to.match(/^ingest-[0-9a-f]{7}$/);
    expect(physicalName({ type: "aws:sqs/queue:Queue", name: "ingest", inputs: {} })).to.equal(auto);
    expect(physicalName({ type: "aws:iam/role:Role", name: "ingest", inputs: {} })).not.to.equal(auto);
  });
});

describe("topology builders (pure)", () => {
  const rec = (type: string, name: string, inputs: Record<string, unknown>, outputs: Record<string, unknown> = {}, custom = true): RecordedResource => ({
    urn: `urn:pulumi:dev::p::${type}::${name}`,
    type,
    name,
    parent: null,
    custom,
    inputs,
    outputs: { ...inputs, ...outputs },
    dependencies: [],
    propertyDependencies: {},
  });
  const QUEUE = "aws:sqs/queue:Queue";
  const FN = "aws:lambda/function:Function";
  const ESM = "aws:lambda/eventSourceMapping:EventSourceMapping";
  const queueArn = "arn:aws:sqs:us-east-1:123456789012:work-abc";
  const fnArn = "arn:aws:lambda:us-east-1:123456789012:function:fn-1234567";
  const base = [
    rec(
      QUEUE,
      "work",
      { visibilityTimeoutSeconds: 60, redrivePolicy: '{"deadLetterTargetArn": "arn:dlq", "maxReceiveCount": 3}', tags: { "encache:queue-role": "source" } },
      { name: "work-abc", url: "http://moto/123456789012/work-abc", arn: queueArn },
    ),
    rec(QUEUE, "plain", {}, { name: "plain-1", url: "http://moto/123456789012/plain-1", arn: "arn:aws:sqs:us-east-1:123456789012:plain-1" }),
    rec(
      FN,
      "fn",
      { handler: "index.handler", timeout: 30, memorySize: 256, environment: { variables: { Q: "http://moto/123456789012/work-abc" } } },
      { name: "fn-1234567", arn: fnArn },
    ),
    rec(FN, "bare", {}, { name: "bare-1", arn: "arn:aws:lambda:us-east-1:123456789012:function:bare-1" }),
  ];

  it("reads queues: role tag, parsed redrive, SQS's default visibility", () => {
    const [work, plain] = queuesFrom(base);

    expect(work).to.deep.include({
      name: "work-abc",
      role: "source",
      visibilityTimeoutSeconds: 60,
      redrive: { deadLetterTargetArn: "arn:dlq", maxReceiveCount: 3 },
    });
    expect(plain).to.deep.include({ visibilityTimeoutSeconds: 30 });
    expect(plain).not.to.have.property("role");
    expect(plain).not.to.have.property("redrive");
  });

  it("reads functions: env, timeout, memory (Lambda's defaults when absent), codePath under codeDir", () => {
    const [fn, bare] = functionsFrom(base, "/tmp/code");

    expect(fn).to.deep.include({
      name: "fn-1234567",
      codePath: "/tmp/code/fn/index.js",
      environment: { Q: "http://moto/123456789012/work-abc" },
      timeoutSeconds: 30,
      memoryMb: 256,
    });
    expect(bare).to.deep.include({ timeoutSeconds: 3, memoryMb: 128, handler: "index.handler", environment: {} });
  });

  const mappingCases: Array<{ title: string; inputs: Record<string, unknown>; expected: Record<string, unknown> }> = [
    {
      title: "all settings, function given by ARN",
      inputs: {
        eventSourceArn: queueArn,
        functionName: fnArn,
        batchSize: 5,
        maximumBatchingWindowInSeconds: 2,
        scalingConfig: { maximumConcurrency: 4 },
        functionResponseTypes: ["ReportBatchItemFailures"],
        enabled: false,
      },
      expected: {
        functionName: "fn-1234567",
        queueUrl: "http://moto/123456789012/work-abc",
        batchSize: 5,
        batchingWindowSeconds: 2,
        maximumConcurrency: 4,
        reportBatchItemFailures: true,
        enabled: false,
      },
    },
    {
      title: "Lambda's defaults, function given by name",
      inputs: { eventSourceArn: queueArn, functionName: "fn-1234567" },
      expected: { functionName: "fn-1234567", batchSize: 10, batchingWindowSeconds: 0, reportBatchItemFailures: false, enabled: true },
    },
    {
      title: "a function outside the program, by qualified ARN",
      inputs: { eventSourceArn: queueArn, functionName: "arn:aws:lambda:us-east-1:1:function:other:live" },
      expected: { functionName: "other" },
    },
  ];
  for (const c of mappingCases) {
    it(`reads a mapping: ${c.title}`, () => {
      const resources = [...base, rec(ESM, "m", c.inputs)];

      const [mapping] = mappingsFrom(resources, queuesFrom(resources), functionsFrom(resources, "/c"));

      expect(mapping).to.deep.include(c.expected);
      if (!("scalingConfig" in c.inputs)) expect(mapping).not.to.have.property("maximumConcurrency");
    });
  }

  it("skips non-SQS mappings and rejects one on an undeclared queue", () => {
    const stream = rec(ESM, "s", { eventSourceArn: "arn:aws:dynamodb:us-east-1:1:table/t/stream/x", functionName: fnArn });
    const stray = rec(ESM, "x", { eventSourceArn: "arn:aws:sqs:us-east-1:1:elsewhere", functionName: fnArn });

    expect(mappingsFrom([...base, stream], queuesFrom(base), functionsFrom(base, "/c"))).to.deep.equal([]);
    expect(() => mappingsFrom([...base, stray], queuesFrom(base), functionsFrom(base, "/c"))).to.throw(/elsewhere is not a queue the program declares/);
  });

  it("reads schedules: target input, DLQ, retry policy, Scheduler's defaults and state", () => {
    const full = rec(
      "aws:scheduler/schedule:Schedule",
      "a",
      {
        scheduleExpression: "rate(5 minutes)",
        scheduleExpressionTimezone: "UTC",
        target: {
          arn: queueArn,
          input: '{"x":1}',
          deadLetterConfig: { arn: "arn:dlq" },
          retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 },
        },
      },
      { name: "a-1" },
    );
    const bare = rec(
      "aws:scheduler/schedule:Schedule",
      "b",
      { scheduleExpression: "cron(0 * * * ? *)", state: "DISABLED", target: { arn: queueArn } },
      { name: "b-1" },
    );

    const [a, b] = schedulesFrom([full, bare]);

    expect(a).to.deep.include({ name: "a-1", expression: "rate(5 minutes)", timezone: "UTC", enabled: true });
    expect(a?.target).to.deep.equal({ arn: queueArn, input: '{"x":1}', deadLetterArn: "arn:dlq", maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 });
    expect(b).to.deep.include({ enabled: false });
    expect(b?.target).to.deep.equal({ arn: queueArn, maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86400 });
  });

  it("reads instance ids from their ARNs, their declared type, and parses container definitions", () => {
    const instance = rec(
      "aws:ec2/instance:Instance",
      "gpu",
      { tags: { Name: "g" }, instanceType: "g5.xlarge" },
      { arn: "arn:aws:ec2:us-east-1:123456789012:instance/i-0abc" },
    );
    const td = rec(
      "aws:ecs/taskDefinition:TaskDefinition",
      "td",
      { family: "fam", containerDefinitions: '[{"name":"c","memory":512}]' },
      { arn: "arn:aws:ecs:us-east-1:123456789012:task-definition/fam:1" },
    );

    expect(instancesFrom([instance])).to.deep.equal([{ urn: instance.urn, logicalName: "gpu", id: "i-0abc", tags: { Name: "g" }, instanceType: "g5.xlarge" }]);
    expect(taskDefinitionsFrom([td])[0]).to.deep.include({ family: "fam", containerDefinitions: [{ name: "c", memory: 512 }] });
  });

  it("splits custom resources into created and uncreated by outcome; components are neither", () => {
    const component = rec("encache:x:Thing", "work", {}, {}, false);
    const alarm = rec("aws:cloudwatch/metricAlarm:MetricAlarm", "depth", {});
    const outcomes = [
      { type: QUEUE, name: "work", created: true, notes: [] },
      { type: FN, name: "fn", created: false, notes: [] },
    ];

    const split = splitCreated([component, base[0]!, base[2]!, alarm], outcomes);

    expect(split.created).to.deep.equal([base[0]!.urn]);
    expect(split.uncreated).to.deep.equal([
      { urn: base[2]!.urn, type: FN },
      { urn: alarm.urn, type: "aws:cloudwatch/metricAlarm:MetricAlarm" },
    ]);
  });

  describe("alarmsFrom", () => {
    const ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";
    const depth = {
      alarmDescription: "DLQ has messages",
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: "work-dlq-1" },
      statistic: "Maximum",
      period: 300,
      evaluationPeriods: 1,
      threshold: 1,
      comparisonOperator: "GreaterThanOrEqualToThreshold",
      treatMissingData: "notBreaching",
      alarmActions: ["arn:topic"],
      okActions: ["arn:topic"],
    };
    const outputs = (name: string) => ({ name, arn: `arn:aws:cloudwatch:us-east-1:123456789012:alarm:${name}` });
    const cases: Array<{ title: string; inputs: Record<string, unknown>; expected: Record<string, unknown>; absent?: string[] }> = [
      {
        title: "a queue-depth alarm as queueDepthAlarm declares it",
        inputs: depth,
        expected: {
          logicalName: "a",
          name: "a-1",
          arn: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:a-1",
          description: "DLQ has messages",
          queueName: "work-dlq-1",
          dimensions: { QueueName: "work-dlq-1" },
          statistic: "Maximum",
          periodSeconds: 300,
          evaluationPeriods: 1,
          datapointsToAlarm: 1,
          threshold: 1,
          comparisonOperator: "GreaterThanOrEqualToThreshold",
          treatMissingData: "notBreaching",
          alarmActions: ["arn:topic"],
          okActions: ["arn:topic"],
        },
      },
      {
        title: "CloudWatch's defaults: M = N, treatMissingData missing, no actions; numbers given as strings",
        inputs: {
          ...depth,
          evaluationPeriods: "3",
          period: "60",
          treatMissingData: undefined,
          alarmActions: undefined,
          okActions: undefined,
          alarmDescription: undefined,
        },
        expected: { evaluationPeriods: 3, datapointsToAlarm: 3, periodSeconds: 60, treatMissingData: "missing", alarmActions: [], okActions: [] },
        absent: ["description"],
      },
      {
        title: "M out of N and a percentile",
        inputs: { ...depth, evaluationPeriods: 5, datapointsToAlarm: 2, statistic: undefined, extendedStatistic: "p99" },
        expected: { evaluationPeriods: 5, datapointsToAlarm: 2, statistic: "p99" },
      },
      {
        title: "a QueueName dimension outside AWS/SQS names no queue",
        inputs: { ...depth, namespace: "Custom/Queues" },
        expected: { namespace: "Custom/Queues", dimensions: { QueueName: "work-dlq-1" } },
        absent: ["queueName"],
      },
      {
        title: "an anomaly-detection alarm has no threshold",
        inputs: { ...depth, threshold: undefined, thresholdMetricId: "band", comparisonOperator: "LessThanLowerOrGreaterThanUpperThreshold" },
        expected: { comparisonOperator: "LessThanLowerOrGreaterThanUpperThreshold" },
        absent: ["threshold"],
      },
      {
        title: "a metric-math alarm has no single metric",
        inputs: { evaluationPeriods: 1, threshold: 5, comparisonOperator: "GreaterThanThreshold", metricQueries: [{ id: "e", expression: "m1 + m2" }] },
        expected: { namespace: "", metricName: "", statistic: "", periodSeconds: 0, dimensions: {} },
        absent: ["queueName"],
      },
    ];
    for (const c of cases) {
      it(c.title, () => {
        // Prepare
        const resource = rec(ALARM, "a", Object.fromEntries(Object.entries(c.inputs).filter(([, v]) => v !== undefined)), outputs("a-1"));
        // Act
        const [alarm] = alarmsFrom([resource, base[0]!]);
        // Assess
        expect(alarm).to.deep.include({ urn: resource.urn, ...c.expected });
        for (const key of c.absent ?? []) expect(alarm).not.to.have.property(key);
      });
    }

    it("rejects an alarm the recording gives no comparison operator", () => {
      // Prepare
      const broken = rec(ALARM, "broken", { ...depth, comparisonOperator: undefined }, outputs("broken-1"));
      // Act + Assess
      expect(() => alarmsFrom([broken])).to.throw(/MetricAlarm "broken" .* has no comparisonOperator in the recording/);
    });
  });

  it("reads topics with the program's subscriptions to each", () => {
    // Prepare
    const arn = "arn:aws:sns:us-east-1:123456789012:alerts-1";
    const topic = rec("aws:sns/topic:Topic", "alerts", {}, { name: "alerts-1", arn });
    const other = rec("aws:sns/topic:Topic", "other", {}, { name: "other-1", arn: "arn:aws:sns:us-east-1:123456789012:other-1" });
    const sub = rec("aws:sns/topicSubscription:TopicSubscription", "alerts-subscription-0", { topic: arn, protocol: "email", endpoint: "oncall@example.com" });
    // Act
    const [alerts, quiet] = topicsFrom([topic, other, sub]);
    // Assess
    expect(alerts).to.deep.equal({
      urn: topic.urn,
      logicalName: "alerts",
      name: "alerts-1",
      arn,
      subscriptions: [{ protocol: "email", endpoint: "oncall@example.com" }],
    });
    expect(quiet?.subscriptions).to.deep.equal([]);
  });

  for (const [input, expected] of [
    ["fn-1234567", "fn-1234567"],
    ["arn:aws:lambda:us-east-1:123456789012:function:fn-1234567", "fn-1234567"],
    ["arn:aws:lambda:us-east-1:123456789012:function:fn-1234567:$LATEST", "fn-1234567"],
  ] as const) {
    it(`functionNameOf(${input}) is ${expected}`, () => expect(functionNameOf(input)).to.equal(expected));
  }
});
