import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";

/**
 * Mocks that answer like AWS would: every resource gets a realistic id, ARN, name and (for
 * queues) URL. Without them outputs are `undefined` and, for example, a redrive policy built
 * from `dlq.arn` silently loses its target.
 */
export const MOCK_ACCOUNT_ID = "123456789012";

export function shortHash(...parts: string[]): string {
  return crypto.createHash("sha1").update(parts.join("\0")).digest("hex");
}

/**
 * Pulumi auto-names resources `<logical name>-<7 random hex>`, so two stacks of one program never
 * share an auto-name. Here the suffix hashes the stack, the type and the name: deterministic, so
 * plans diff cleanly, and distinct per stack as on the real engine, so a test comparing two
 * stacks sees only the names the program chose itself.
 */
export function physicalName(args: Pick<pulumi.runtime.MockResourceArgs, "type" | "name" | "inputs">, key = "name"): string {
  const given = args.inputs[key];
  return typeof given === "string" && given.length > 0 ? given : `${args.name}-${shortHash(pulumi.getStack(), args.type, args.name).slice(0, 7)}`;
}

function hexId(prefix: string, args: pulumi.runtime.MockResourceArgs): string {
  return `${prefix}-${shortHash(pulumi.getStack(), args.type, args.name).slice(0, 17)}`;
}

type Answer = { id: string | undefined; state: Record<string, unknown> };
type Answerer = (args: pulumi.runtime.MockResourceArgs, state: (id: string, extra: Record<string, unknown>) => Answer) => Answer;

/** What AWS answers for each resource type: its id and the outputs the program reads. */
function answers(region: string): Record<string, Answerer> {
  return { ...messagingAnswers(region), ...iamAnswers(), ...computeAnswers(region), ...dataAnswers(region), ...componentAnswers() };
}

/** Queues, functions and their event sources, logs and alarms, schedules. */
function messagingAnswers(region: string): Record<string, Answerer> {
  const acct = MOCK_ACCOUNT_ID;
  return {
    "aws:sqs/queue:Queue": (args, state) => {
      const name = physicalName(args);
      const url = `https://sqs.${region}.amazonaws.com/${acct}/${name}`;
      return state(url, { name, url, arn: `arn:aws:sqs:${region}:${acct}:${name}` });
    },
    "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": (args, state) => {
      const inputs = args.inputs as Record<string, unknown>;
      return state(String(inputs.queueUrl), {});
    },
    "aws:lambda/function:Function": (args, state) => {
      const name = physicalName(args);
      const arn = `arn:aws:lambda:${region}:${acct}:function:${name}`;
      return state(name, {
        name,
        arn,
        qualifiedArn: `${arn}:$LATEST`,
        invokeArn: `arn:aws:apigateway:${region}:lambda:path/2015-03-31/functions/${arn}/invocations`,
        version: "$LATEST",
      });
    },
    "aws:lambda/eventSourceMapping:EventSourceMapping": (args, state) => {
      const h = shortHash(pulumi.getStack(), args.type, args.name);
      const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
      return state(uuid, { uuid, arn: `arn:aws:lambda:${region}:${acct}:event-source-mapping:${uuid}`, state: "Enabled" });
    },
    "aws:cloudwatch/logGroup:LogGroup": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:logs:${region}:${acct}:log-group:${name}` });
    },
    "aws:cloudwatch/metricAlarm:MetricAlarm": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:cloudwatch:${region}:${acct}:alarm:${name}` });
    },
    "aws:scheduler/schedule:Schedule": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:scheduler:${region}:${acct}:schedule/default/${name}` });
    },
  };
}

/** Roles, policies and instance profiles. */
function iamAnswers(): Record<string, Answerer> {
  const acct = MOCK_ACCOUNT_ID;
  return {
    "aws:iam/role:Role": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:iam::${acct}:role/${name}`, uniqueId: hexId("AROA", args).toUpperCase() });
    },
    "aws:iam/policy:Policy": (args, state) => {
      const name = physicalName(args);
      const arn = `arn:aws:iam::${acct}:policy/${name}`;
      return state(arn, { name, arn, policyId: hexId("ANPA", args).toUpperCase() });
    },
    "aws:iam/rolePolicy:RolePolicy": (args, state) => {
      const inputs = args.inputs as Record<string, unknown>;
      const name = physicalName(args);
      return state(`${String(inputs.role)}:${name}`, { name });
    },
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": (args, state) => {
      const inputs = args.inputs as Record<string, unknown>;
      return state(`${String(inputs.role)}-${shortHash(args.name).slice(0, 20)}`, {});
    },
    "aws:iam/instanceProfile:InstanceProfile": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:iam::${acct}:instance-profile/${name}` });
    },
  };
}

/** EC2, ECS and ECR. */
function computeAnswers(region: string): Record<string, Answerer> {
  const acct = MOCK_ACCOUNT_ID;
  return {
    "aws:ec2/instance:Instance": (args, state) => {
      const id = hexId("i", args);
      return state(id, { arn: `arn:aws:ec2:${region}:${acct}:instance/${id}`, privateIp: "10.0.1.10", instanceState: "running", publicIp: "" });
    },
    "aws:ec2/securityGroup:SecurityGroup": (args, state) => {
      const id = hexId("sg", args);
      return state(id, { name: physicalName(args), arn: `arn:aws:ec2:${region}:${acct}:security-group/${id}` });
    },
    // Elastic Load Balancing v2: ARNs and the DNS name as AWS forms them for an internal ALB.
    "aws:lb/loadBalancer:LoadBalancer": (args, state) => {
      const name = physicalName(args);
      const hex = shortHash(pulumi.getStack(), args.type, args.name).slice(0, 16);
      const arn = `arn:aws:elasticloadbalancing:${region}:${acct}:loadbalancer/app/${name}/${hex}`;
      return state(arn, {
        name,
        arn,
        arnSuffix: `app/${name}/${hex}`,
        dnsName: `internal-${name}-${parseInt(hex.slice(0, 8), 16)}.${region}.elb.amazonaws.com`,
        zoneId: "Z35SXDOTRQ7X7K",
      });
    },
    "aws:lb/targetGroup:TargetGroup": (args, state) => {
      const name = physicalName(args);
      const hex = shortHash(pulumi.getStack(), args.type, args.name).slice(0, 16);
      const arn = `arn:aws:elasticloadbalancing:${region}:${acct}:targetgroup/${name}/${hex}`;
      return state(arn, { name, arn, arnSuffix: `targetgroup/${name}/${hex}` });
    },
    "aws:lb/listener:Listener": (args, state) => {
      const hex = shortHash(pulumi.getStack(), args.type, args.name).slice(0, 16);
      const arn = `${String((args.inputs as Record<string, unknown>).loadBalancerArn).replace(":loadbalancer/", ":listener/")}/${hex}`;
      return state(arn, { arn });
    },
    "aws:autoscaling/group:Group": (args, state) => {
      const name = physicalName(args);
      const id = shortHash(pulumi.getStack(), args.type, args.name).slice(0, 32);
      const uuid = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`;
      return state(name, { name, arn: `arn:aws:autoscaling:${region}:${acct}:autoScalingGroup:${uuid}:autoScalingGroupName/${name}`, desiredCapacity: 0 });
    },
    "aws:ec2/launchTemplate:LaunchTemplate": (args, state) => {
      const id = hexId("lt", args);
      return state(id, { name: physicalName(args), arn: `arn:aws:ec2:${region}:${acct}:launch-template/${id}`, latestVersion: 1, defaultVersion: 1 });
    },
    "aws:ecs/cluster:Cluster": (args, state) => {
      const name = physicalName(args);
      const arn = `arn:aws:ecs:${region}:${acct}:cluster/${name}`;
      return state(arn, { name, arn });
    },
    "aws:ecs/taskDefinition:TaskDefinition": (args, state) => {
      const inputs = args.inputs as Record<string, unknown>;
      const family = String(inputs.family ?? physicalName(args));
      // ECS registers a new revision whenever the definition changes; a number derived from the
      // containers stands in for it, so whatever points at the revision changes with it.
      const revision = (parseInt(shortHash(String(inputs.containerDefinitions ?? "")).slice(0, 6), 16) % 9999) + 1;
      const arn = `arn:aws:ecs:${region}:${acct}:task-definition/${family}:${revision}`;
      return state(family, { arn, arnWithoutRevision: `arn:aws:ecs:${region}:${acct}:task-definition/${family}`, revision });
    },
    "aws:ecs/service:Service": (args, state) => {
      const name = physicalName(args);
      return state(`arn:aws:ecs:${region}:${acct}:service/${name}`, { name });
    },
    "aws:ecr/repository:Repository": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:ecr:${region}:${acct}:repository/${name}`, repositoryUrl: `${acct}.dkr.ecr.${region}.amazonaws.com/${name}` });
    },
  };
}

/** SSM parameters and DynamoDB tables. */
function dataAnswers(region: string): Record<string, Answerer> {
  const acct = MOCK_ACCOUNT_ID;
  return {
    "aws:ssm/parameter:Parameter": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:ssm:${region}:${acct}:parameter${name.startsWith("/") ? "" : "/"}${name}` });
    },
    "aws:dynamodb/table:Table": (args, state) => {
      const name = physicalName(args);
      return state(name, { name, arn: `arn:aws:dynamodb:${region}:${acct}:table/${name}` });
    },
  };
}

/** awsx's remote components: under mocks their children are not run, so answer with their outputs. */
function componentAnswers(): Record<string, Answerer> {
  return {
    "awsx:ecr:Image": (args) => {
      const inputs = args.inputs as Record<string, unknown>;
      // A remote component: under mocks nothing is built or pushed, so answer with the digest-pinned
      // URI it would output, derived from what a build reads (the context's files and the
      // Dockerfile), not from their paths: a code change must change the image, as it does on AWS.
      const digest = buildDigest(String(inputs.context), String(inputs.dockerfile ?? ""), String(inputs.imageTag ?? ""));
      return { id: undefined, state: { imageUri: `${String(inputs.repositoryUrl)}@sha256:${digest}` } };
    },
    "awsx:ec2:Vpc": (args) => {
      const inputs = args.inputs as Record<string, unknown>;
      // awsx's VPC is a remote component: under mocks its children are not run, so answer with its outputs.
      const azs = Number(inputs.numberOfAvailabilityZones ?? 2);
      const subnets = (tier: string) => Array.from({ length: azs }, (_, i) => hexId(`subnet`, { ...args, name: `${args.name}-${tier}-${i}` }));
      return {
        id: undefined,
        state: { vpcId: hexId("vpc", args), privateSubnetIds: subnets("private"), publicSubnetIds: subnets("public"), isolatedSubnetIds: [] },
      };
    },
  };
}

/** What a Docker build of `context` would be identified by: the content of every file it reads. */
function buildDigest(context: string, dockerfile: string, tag: string): string {
  const hash = crypto.createHash("sha256").update(tag);
  const files = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      // A concurrent plan's half-written bundle (writeImageContext renames it into place) is not context.
      .filter((e) => !e.name.endsWith(".tmp"))
      .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  const root = path.resolve(context);
  for (const file of [...(fs.existsSync(root) ? files(root) : []), ...(dockerfile && fs.existsSync(dockerfile) ? [path.resolve(dockerfile)] : [])].sort()) {
    hash.update(path.relative(root, file)).update("\0").update(fs.readFileSync(file)).update("\0");
  }
  return hash.digest("hex");
}

/** Any other custom resource: a name, an id and an ARN in its service's namespace. */
function genericAnswer(region: string, args: pulumi.runtime.MockResourceArgs, state: (id: string, extra: Record<string, unknown>) => Answer): Answer {
  if (!args.custom) return { id: undefined, state: {} };
  const name = physicalName(args);
  const service = args.type.split(":")[1]?.split("/")[0] ?? "unknown";
  return state(`${name}-id`, { name, arn: `arn:aws:${service}:${region}:${MOCK_ACCOUNT_ID}:${name}` });
}

/**
 * The region's zones as DescribeAvailabilityZones answers, honouring a `zone-id` filter. Zone
 * `<prefix>-azN` is named `<region><letter N>` here; in a real account the pairing differs.
 */
function availabilityZones(region: string, inputs: Record<string, unknown>): Record<string, unknown> {
  // us-east-1 → use1, eu-west-2 → euw2: AWS's AZ ID prefix for the common regions.
  const [area = "", direction = "", number = ""] = region.split("-");
  const prefix = `${area}${direction[0] ?? ""}${number}`;
  const all = Array.from({ length: 6 }, (_, i) => ({ id: `${prefix}-az${i + 1}`, name: `${region}${"abcdef"[i]}` }));
  const filters = (inputs.filters as Array<{ name: string; values: string[] }> | undefined) ?? [];
  const wanted = filters.find((f) => f.name === "zone-id")?.values;
  const zones = wanted ? all.filter((z) => wanted.includes(z.id)) : all.slice(0, 3);
  return { names: zones.map((z) => z.name), zoneIds: zones.map((z) => z.id), id: region };
}

/**
 * `preview`: answer as a provider does on a first preview, for a resource about to be created: its
 * inputs and the auto-name Check assigns, nothing it computes at create time, no id. Run with
 * `setMocks(…, preview = true)`, the SDK then leaves every output not returned unknown. The plan's
 * `--first-preview` derives the same view from an ordinary plan (policy/testing/engine.ts); this
 * mode exists to check that model against the SDK (test/plan/engine-model.test.ts).
 */
export function createMocks(region: string, opts: { preview?: boolean } = {}): pulumi.runtime.Mocks {
  const acct = MOCK_ACCOUNT_ID;
  const byType = answers(region);
  return {
    newResource(args: pulumi.runtime.MockResourceArgs): Answer {
      const inputs = args.inputs as Record<string, unknown>;
      const state = (id: string, extra: Record<string, unknown>): Answer => ({ id, state: { ...inputs, ...extra } });
      const answer = (byType[args.type] ?? ((a, st) => genericAnswer(region, a, st)))(args, state);
      if (!opts.preview || !args.custom) return opts.preview ? { id: undefined, state: { ...inputs } } : answer;
      const name = answer.state.name;
      return { id: "", state: { ...inputs, ...(name !== undefined && !("name" in inputs) ? { name } : {}) } };
    },
    call(args: pulumi.runtime.MockCallArgs): Record<string, unknown> {
      const inputs = args.inputs as Record<string, unknown>;
      switch (args.token) {
        case "aws:ssm/getParameter:getParameter":
          return {
            ...inputs,
            id: inputs.name,
            arn: `arn:aws:ssm:${region}::parameter${String(inputs.name)}`,
            type: "String",
            value: "ami-0123456789abcdef0",
            version: 1,
          };
        case "aws:index/getCallerIdentity:getCallerIdentity":
          return { accountId: acct, arn: `arn:aws:iam::${acct}:user/plan`, userId: "AIDAPLAN", id: acct };
        case "aws:index/getRegion:getRegion":
          return { name: region, region, id: region, description: region };
        case "aws:index/getPartition:getPartition":
          return { partition: "aws", dnsSuffix: "amazonaws.com", id: "aws" };
        case "aws:index/getAvailabilityZones:getAvailabilityZones":
          return availabilityZones(region, inputs);
        default:
          return inputs;
      }
    },
  };
}
