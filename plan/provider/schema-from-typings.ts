/**
 * Which attributes the AWS provider computes, read from the installed `@pulumi/aws` typings. Those
 * typings are generated from the provider's schema (the Terraform resource's schema, through the
 * bridge), so they match the provider this program deploys with exactly:
 *
 * - an output that is not an argument at all (`arn`, `uniqueId`, `tagsAll`) is **Computed**;
 * - an argument that is optional in `<Resource>Args` and whose output is typed without
 *   `| undefined` (`Role.inlinePolicies: Output<RoleInlinePolicy[]>`) is **Optional+Computed**: the
 *   provider fills it in when the program leaves it unset;
 * - an optional argument whose output keeps `| undefined` is plain Optional (the provider stores
 *   null, or a schema default the bridge applies at Check).
 *
 * Nested blocks follow the same rule one level down (`Table.ttl.attributeName`), through the
 * `outputs.<module>.<Type>` and `inputs.<module>.<Type>` interfaces.
 *
 * Pure apart from reading the typings. `npm run provider-schema` writes the result to
 * policy/testing/provider-schema.json; test/plan/provider-schema.test.ts regenerates it and fails when the
 * committed table differs, or when a plan declares a type the table lacks.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";

export interface TypeSchema {
  /** The terraform-provider-aws file that declares the resource's schema (see UPSTREAM). */
  upstream: string;
  /** Attributes only the provider sets. */
  computed: string[];
  /** Attributes the program may set, and the provider fills in when it does not. */
  optionalComputed: string[];
  /** Per nested block (an argument holding an object or a list of objects): the same two lists, when either is non-empty. */
  nested?: Record<string, { computed: string[]; optionalComputed: string[] }>;
}

/**
 * Each Pulumi type of this program and the terraform-provider-aws file of its schema
 * (`internal/service/<service>/<file>.go`), from pulumi-aws's provider/resources.go mapping
 * (`aws_<tf name>` → token). Kept by hand because the typings do not name their Terraform resource;
 * test/plan/provider-schema.test.ts fails when a plan declares a type that is missing here.
 */
export const UPSTREAM: Readonly<Record<string, string>> = {
  "aws:alb/loadBalancer:LoadBalancer": "internal/service/elbv2/load_balancer.go",
  "aws:appautoscaling/policy:Policy": "internal/service/appautoscaling/policy.go",
  "aws:appautoscaling/target:Target": "internal/service/appautoscaling/target.go",
  "aws:autoscaling/group:Group": "internal/service/autoscaling/group.go",
  "aws:autoscaling/lifecycleHook:LifecycleHook": "internal/service/autoscaling/lifecycle_hook.go",
  "aws:autoscaling/tag:Tag": "internal/service/autoscaling/group_tag.go",
  "aws:cloudwatch/dashboard:Dashboard": "internal/service/cloudwatch/dashboard.go",
  "aws:cloudwatch/eventRule:EventRule": "internal/service/events/rule.go",
  "aws:cloudwatch/eventTarget:EventTarget": "internal/service/events/target.go",
  "aws:cloudwatch/logGroup:LogGroup": "internal/service/logs/group.go",
  "aws:cloudwatch/metricAlarm:MetricAlarm": "internal/service/cloudwatch/metric_alarm.go",
  "aws:dynamodb/table:Table": "internal/service/dynamodb/table.go",
  "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": "internal/service/ec2/vpc_default_security_group.go",
  "aws:ec2/flowLog:FlowLog": "internal/service/ec2/vpc_flow_log.go",
  "aws:ec2/instance:Instance": "internal/service/ec2/ec2_instance.go",
  "aws:ec2/launchTemplate:LaunchTemplate": "internal/service/ec2/ec2_launch_template.go",
  "aws:ec2/securityGroup:SecurityGroup": "internal/service/ec2/vpc_security_group.go",
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": "internal/service/ecr/lifecycle_policy.go",
  "aws:ecr/repository:Repository": "internal/service/ecr/repository.go",
  "aws:ecs/cluster:Cluster": "internal/service/ecs/cluster.go",
  "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders": "internal/service/ecs/cluster_capacity_providers.go",
  "aws:ecs/service:Service": "internal/service/ecs/service.go",
  "aws:ecs/taskDefinition:TaskDefinition": "internal/service/ecs/task_definition.go",
  "aws:iam/instanceProfile:InstanceProfile": "internal/service/iam/instance_profile.go",
  "aws:iam/policy:Policy": "internal/service/iam/policy.go",
  "aws:iam/role:Role": "internal/service/iam/role.go",
  "aws:iam/rolePolicy:RolePolicy": "internal/service/iam/role_policy.go",
  "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "internal/service/iam/role_policy_attachment.go",
  "aws:lambda/eventSourceMapping:EventSourceMapping": "internal/service/lambda/event_source_mapping.go",
  "aws:lambda/function:Function": "internal/service/lambda/function.go",
  "aws:lambda/permission:Permission": "internal/service/lambda/permission.go",
  "aws:lb/listener:Listener": "internal/service/elbv2/listener.go",
  "aws:lb/loadBalancer:LoadBalancer": "internal/service/elbv2/load_balancer.go",
  "aws:lb/targetGroup:TargetGroup": "internal/service/elbv2/target_group.go",
  "aws:scheduler/schedule:Schedule": "internal/service/scheduler/schedule.go",
  "aws:sns/topic:Topic": "internal/service/sns/topic.go",
  "aws:sns/topicPolicy:TopicPolicy": "internal/service/sns/topic_policy.go",
  "aws:sns/topicSubscription:TopicSubscription": "internal/service/sns/topic_subscription.go",
  "aws:sqs/queue:Queue": "internal/service/sqs/queue.go",
  "aws:sqs/queuePolicy:QueuePolicy": "internal/service/sqs/queue_policy.go",
  "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": "internal/service/sqs/queue_redrive_allow_policy.go",
  "aws:ssm/parameter:Parameter": "internal/service/ssm/parameter.go",
  "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "internal/service/ec2/vpc_security_group_ingress_rule.go",
};

/**
 * Entries traced to their lines in terraform-provider-aws, read through the search tool at the
 * commit given (the stored revision of each file; attributes of these kinds have kept their
 * schema across the releases). test/plan/provider-schema.test.ts checks the table says the same.
 */
export interface Trace {
  type: string;
  attribute: string;
  kind: "computed" | "optionalComputed";
  upstream: string;
  commit: string;
  lines: string;
  /** The upstream text, condensed. */
  says: string;
}

export const TRACES: readonly Trace[] = [
  {
    type: "aws:iam/role:Role",
    attribute: "inlinePolicies",
    kind: "optionalComputed",
    upstream: "internal/service/iam/role.go",
    commit: "0040ea6911af00bea2cca6dbb14e86829826ad8e",
    lines: "78-81",
    says: '"inline_policy": { Type: schema.TypeSet, Optional: true, Computed: true',
  },
  {
    type: "aws:iam/role:Role",
    attribute: "managedPolicyArns",
    kind: "optionalComputed",
    upstream: "internal/service/iam/role.go",
    commit: "0040ea6911af00bea2cca6dbb14e86829826ad8e",
    lines: "114-117",
    says: '"managed_policy_arns": { Type: schema.TypeSet, Optional: true, Computed: true',
  },
  {
    type: "aws:sqs/queue:Queue",
    attribute: "redrivePolicy",
    kind: "optionalComputed",
    upstream: "internal/service/sqs/queue.go",
    commit: "00a35305dc1b297a6fcdecdfbba33f1e63c3da39",
    lines: "147-150",
    says: '"redrive_policy": { Type: schema.TypeString, Optional: true, Computed: true',
  },
  {
    type: "aws:sqs/queue:Queue",
    attribute: "url",
    kind: "computed",
    upstream: "internal/service/sqs/queue.go",
    commit: "00a35305dc1b297a6fcdecdfbba33f1e63c3da39",
    lines: "165-167",
    says: "names.AttrURL: { Type: schema.TypeString, Computed: true",
  },
  {
    type: "aws:ecs/taskDefinition:TaskDefinition",
    attribute: "networkMode",
    kind: "optionalComputed",
    upstream: "internal/service/ecs/task_definition.go",
    commit: "f1750b8668f2771f28931e8ed4c1fa564b83e4d1",
    lines: "150-153",
    says: '"network_mode": { Type: schema.TypeString, Optional: true, Computed: true',
  },
  {
    type: "aws:ecs/taskDefinition:TaskDefinition",
    attribute: "arn",
    kind: "computed",
    upstream: "internal/service/ecs/task_definition.go",
    commit: "f1750b8668f2771f28931e8ed4c1fa564b83e4d1",
    lines: "58-61",
    says: '"arn": { Type: schema.TypeString, Computed: true',
  },
];

/** `aws:iam/role:Role` → the typings file `iam/role.d.ts` and the class `Role`. */
export function typingsOf(token: string): { file: string; className: string } {
  const m = /^aws:([a-z0-9]+)\/([A-Za-z0-9]+):([A-Za-z0-9]+)$/.exec(token);
  if (!m) throw new Error(`not an aws resource token: ${token}`);
  return { file: `${m[1]}/${m[2]}.d.ts`, className: m[3]! };
}

/** Text of a type, with every `undefined` member noted. */
function hasUndefined(node: ts.TypeNode): boolean {
  if (ts.isUnionTypeNode(node)) return node.types.some(hasUndefined);
  return node.kind === ts.SyntaxKind.UndefinedKeyword;
}

/** `pulumi.Output<X>` / `pulumi.Input<X>` → X. */
function unwrap(node: ts.TypeNode): ts.TypeNode {
  if (ts.isTypeReferenceNode(node) && node.typeArguments?.length === 1 && /^(pulumi\.)?(Output|Input)$/.test(node.typeName.getText()))
    return node.typeArguments[0]!;
  return node;
}

/** The `outputs.x.Y` / `inputs.x.Y` interface a member's type refers to (through arrays, Inputs and unions), if any. */
function nestedRef(node: ts.TypeNode, root: "outputs" | "inputs"): string | undefined {
  const t = unwrap(node);
  if (ts.isUnionTypeNode(t)) return t.types.map((x) => nestedRef(x, root)).find((x) => x !== undefined);
  if (ts.isArrayTypeNode(t)) return nestedRef(t.elementType, root);
  if (ts.isTypeReferenceNode(t)) {
    const name = t.typeName.getText();
    if (name.startsWith(`${root}.`)) return name.slice(root.length + 1);
    if (/^(pulumi\.)?Input$/.test(name) && t.typeArguments?.length === 1) return nestedRef(t.typeArguments[0]!, root);
  }
  return undefined;
}

interface Member {
  optional: boolean;
  type: ts.TypeNode;
}

function members(decl: ts.ClassDeclaration | ts.InterfaceDeclaration): Map<string, Member> {
  const out = new Map<string, Member>();
  for (const m of decl.members) {
    if (!(ts.isPropertyDeclaration(m) || ts.isPropertySignature(m)) || !m.type || !m.name) continue;
    const name = m.name.getText();
    if (name === "__pulumiType") continue;
    out.set(name, { optional: m.questionToken !== undefined, type: m.type });
  }
  return out;
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
}

function findDecl<T extends ts.Node>(sf: ts.SourceFile, name: string, is: (n: ts.Node) => n is T): T | undefined {
  let found: T | undefined;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (is(n) && (n as unknown as { name?: ts.Identifier }).name?.text === name) found = n;
    else ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

/** The interface `module.Type` of @pulumi/aws's types/output.d.ts or types/input.d.ts. */
function nestedInterface(sf: ts.SourceFile, qualified: string): ts.InterfaceDeclaration | undefined {
  const [mod, type] = qualified.split(".");
  const ns = findDecl(sf, mod!, ts.isModuleDeclaration);
  return ns ? findDecl(ns as unknown as ts.SourceFile, type!, ts.isInterfaceDeclaration) : undefined;
}

/** Computed and Optional+Computed among an output shape's members, against its argument shape. */
function classify(
  outputs: Map<string, Member>,
  args: Map<string, Member>,
  outputType: (m: Member) => ts.TypeNode,
): { computed: string[]; optionalComputed: string[] } {
  const computed: string[] = [];
  const optionalComputed: string[] = [];
  for (const [name, out] of outputs) {
    const arg = args.get(name);
    if (!arg) computed.push(name);
    else if (arg.optional && !hasUndefined(unwrap(outputType(out)))) optionalComputed.push(name);
  }
  return { computed: computed.sort(), optionalComputed: optionalComputed.sort() };
}

/** The provider schema of one Pulumi type, from the typings under `awsRoot` (node_modules/@pulumi/aws). */
export function schemaOf(awsRoot: string, token: string, shared: { output: ts.SourceFile; input: ts.SourceFile }): TypeSchema {
  const upstream = UPSTREAM[token];
  if (!upstream) throw new Error(`${token}: no upstream file in UPSTREAM (plan/provider/schema-from-typings.ts)`);
  const { file, className } = typingsOf(token);
  const sf = parse(path.join(awsRoot, file));
  const cls = findDecl(sf, className, ts.isClassDeclaration);
  const argsDecl = findDecl(sf, `${className}Args`, ts.isInterfaceDeclaration);
  if (!cls || !argsDecl) throw new Error(`${token}: class ${className} or ${className}Args not found in ${file}`);
  const outs = members(cls);
  const args = members(argsDecl);
  const top = classify(outs, args, (m) => m.type);
  const nested: NonNullable<TypeSchema["nested"]> = {};
  for (const [name, arg] of args) {
    const outRef = outs.get(name) && nestedRef(outs.get(name)!.type, "outputs");
    const inRef = nestedRef(arg.type, "inputs");
    if (!outRef || !inRef) continue;
    const outIface = nestedInterface(shared.output, outRef);
    const inIface = nestedInterface(shared.input, inRef);
    if (!outIface || !inIface) continue;
    // Nested output members are plain types (no Output<>), optional (`?`) unless the provider computes them.
    const inner = classify(
      new Map(
        [...members(outIface)].map(([k, m]) => [
          k,
          { ...m, type: m.optional ? ts.factory.createUnionTypeNode([m.type, ts.factory.createKeywordTypeNode(ts.SyntaxKind.UndefinedKeyword)]) : m.type },
        ]),
      ),
      members(inIface),
      (m) => m.type,
    );
    if (inner.computed.length + inner.optionalComputed.length > 0) nested[name] = inner;
  }
  return { upstream, ...top, ...(Object.keys(nested).length > 0 ? { nested } : {}) };
}

export interface ProviderSchema {
  /** Where the table comes from: the installed @pulumi/aws, whose typings are read. */
  source: { package: "@pulumi/aws"; version: string };
  types: Record<string, TypeSchema>;
}

/** The table for every type in UPSTREAM, from the @pulumi/aws installed under `nodeModules`. */
export function providerSchema(nodeModules: string): ProviderSchema {
  const awsRoot = path.join(nodeModules, "@pulumi/aws");
  const version = (JSON.parse(fs.readFileSync(path.join(awsRoot, "package.json"), "utf8")) as { version: string }).version;
  const shared = { output: parse(path.join(awsRoot, "types/output.d.ts")), input: parse(path.join(awsRoot, "types/input.d.ts")) };
  const types: Record<string, TypeSchema> = {};
  for (const token of Object.keys(UPSTREAM).sort()) types[token] = schemaOf(awsRoot, token, shared);
  return { source: { package: "@pulumi/aws", version }, types };
}
