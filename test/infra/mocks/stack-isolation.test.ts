/**
 * dev and prod in one account and region: they must neither collide nor reach into each other.
 * Both committed stacks are planned; then
 * - no physical name the program chooses, no ARN and no SSM parameter path is shared;
 * - every tag set a grant, a sweep or a tag scan keys on differs from each of the other stack's;
 * - no grant of one stack applies to a resource of the other: the resources each declares, and
 *   those its code creates or adopts at run time (pool instances from its launch templates, fleet
 *   instances as its sweep recognises them, runner parameters, tasks on its cluster).
 *
 * The plan's mocks give auto-named resources a per-stack suffix, as the real engine's random one
 * is, so what can be shared here is only what the program names itself.
 */
import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import { ALLOWED_ACCOUNTS_KEY, allowedAccountIdsProblem } from "../../../infra/config";
import { carriesEnvironment } from "../../../infra/stack-scope";
import { readStackFiles } from "../../../plan/stack-files";
import { ENVIRONMENT_TAG } from "../../../policy/contract";
import { UNSCOPABLE_ACTIONS } from "../../../policy/rules/iam-star-resource-unscopable-only";
import type { PlanDocument } from "../../../plan/render";
import { type IamStatement, arnPatternMatches, statementApplies, type TargetResource } from "../helpers/iam-match";
import { useStackPlans } from "../helpers/run-plan";
import { gpuMode } from "../helpers/stack-config";

type Resource = PlanDocument["resources"][number];
type Tags = Record<string, string>;

/** Inputs that set a name AWS keeps unique per account and region (or per account, for IAM). */
const PHYSICAL_NAME_KEYS = ["name", "namePrefix", "family"] as const;

/** Public, read-only parameters every stack may read: the AMI aliases. */
const isPublicParameter = (path: string) => path.startsWith("/aws/service/");

/**
 * Grants on `*` without a condition, allowed only for actions AWS authorises on no resource: they
 * cannot be scoped to a stack. The list is the Service Authorization Reference's, generated
 * (policy/lib/unscopable-actions.json), as the pack's iam-star-resource-unscopable-only reads it.
 */
const UNSCOPABLE = new Set(UNSCOPABLE_ACTIONS.map((a) => a.toLowerCase()));

/**
 * The residual cross-stack reach this test accepts, with its reason: Lambda's ENI actions on this
 * account's interfaces (subnets, groups). Lambda creates the interfaces itself, untagged and with
 * ids nobody knows beforehand, so no ARN or documented condition can tell one stack's from the
 * other's (docs/security.md, accepted findings). Every other grant must stay inside its stack.
 */
const LAMBDA_ENI_ACTIONS = new Set([
  "ec2:CreateNetworkInterface",
  "ec2:DeleteNetworkInterface",
  "ec2:AssignPrivateIpAddresses",
  "ec2:UnassignPrivateIpAddresses",
]);
const lambdaEniOnly = (s: IamStatement) =>
  [s.Action].flat().every((a) => LAMBDA_ENI_ACTIONS.has(a)) &&
  [s.Resource].flat().every((r) => /^arn:aws:ec2:[a-z0-9-]+:\d{12}:(network-interface|subnet|security-group)\/\*$/.test(r));

function policyStatements(doc: PlanDocument): Array<{ where: string; statement: IamStatement }> {
  const out: Array<{ where: string; statement: IamStatement }> = [];
  for (const r of doc.resources) {
    if (r.type !== "aws:iam/policy:Policy" && r.type !== "aws:iam/rolePolicy:RolePolicy") continue;
    const raw = r.inputs.policy;
    const policy = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Statement: IamStatement[] };
    for (const statement of policy.Statement) out.push({ where: `${r.name}/${statement.Sid ?? "?"}`, statement });
  }
  return out;
}

function functionEnvironments(doc: PlanDocument): Array<{ name: string; env: Record<string, string> }> {
  return doc.resources
    .filter((r) => r.type === "aws:lambda/function:Function")
    .map((r) => ({ name: r.name, env: (r.inputs.environment as { variables?: Record<string, string> } | undefined)?.variables ?? {} }));
}

function housekeepingEnv(doc: PlanDocument): Record<string, string> {
  const fn = functionEnvironments(doc).find((f) => f.name === "fleet-housekeeping-consumer");
  if (!fn) throw new Error("the plan has no fleet-housekeeping-consumer function");
  return fn.env;
}

/** The tags of an instance the stack's fleet sweep recognises as its own. */
function fleetInstanceTags(doc: PlanDocument): Tags {
  const env = housekeepingEnv(doc);
  return { [env.RUNS_FLEET_MANAGED_TAG_KEY!]: env.RUNS_FLEET_MANAGED_TAG_VALUE!, [ENVIRONMENT_TAG]: env.RUNS_FLEET_ENVIRONMENT! };
}

/** Every physical name the program set itself, with where it was set. */
function explicitNames(doc: PlanDocument): Map<string, string> {
  const names = new Map<string, string>();
  for (const r of doc.resources) {
    if (!r.type.startsWith("aws:")) continue;
    for (const key of PHYSICAL_NAME_KEYS) {
      const value = r.inputs[key];
      if (typeof value === "string") names.set(value, `${r.type} ${r.name}.${key}`);
    }
  }
  return names;
}

/** Every SSM parameter path the stack owns, names in an environment or reaches through a grant. */
function parameterPaths(doc: PlanDocument): Map<string, string> {
  const paths = new Map<string, string>();
  const add = (path: string, where: string) => {
    const clean = path.replace(/\/\*$/, "");
    if (!isPublicParameter(clean)) paths.set(clean, where);
  };
  for (const r of doc.resources) if (r.type === "aws:ssm/parameter:Parameter") add(String(r.inputs.name), `parameter ${r.name}`);
  for (const { name, env } of functionEnvironments(doc)) {
    // Variables that name a parameter (…_PARAM, …_PARAMETER_PATH); GPU_SERVICE_PATH is an HTTP path.
    for (const [key, value] of Object.entries(env)) if (key.includes("PARAM") && value.startsWith("/")) add(value, `${name} ${key}`);
  }
  for (const { where, statement } of policyStatements(doc)) {
    for (const arn of [statement.Resource].flat()) {
      const path = /^arn:aws:ssm:[^:]*:[^:]*:parameter(\/.*)$/.exec(arn)?.[1];
      if (path) add(path, where);
    }
  }
  return paths;
}

/** The tag sets that select resources: grant conditions, and the filters the functions scan with. */
function keyedTagSets(doc: PlanDocument): Array<{ where: string; tags: Tags }> {
  const sets: Array<{ where: string; tags: Tags }> = [];
  for (const { where, statement } of policyStatements(doc)) {
    const tags: Tags = {};
    for (const entries of Object.values(statement.Condition ?? {})) {
      for (const [key, value] of Object.entries(entries)) {
        const tag = /^(?:aws:ResourceTag|aws:RequestTag|ec2:ResourceTag)\/(.+)$/.exec(key)?.[1];
        if (tag) tags[tag] = String(value);
      }
    }
    if (Object.keys(tags).length > 0) sets.push({ where, tags });
  }
  for (const { name, env } of functionEnvironments(doc)) {
    if (env.GPU_NAME_TAG) sets.push({ where: `${name} GPU_NAME_TAG (tag scan)`, tags: { Name: env.GPU_NAME_TAG } });
    if (env.POOL_TAG) sets.push({ where: `${name} POOL_TAG (DescribeInstances filter)`, tags: { "encache:pool": env.POOL_TAG } });
  }
  sets.push({ where: "fleet-housekeeping-consumer sweep filters", tags: fleetInstanceTags(doc) });
  return sets;
}

/** What a grant could touch: every declared resource with an ARN, and what the code creates or adopts. */
function resourcesOf(doc: PlanDocument): TargetResource[] {
  // An Auto Scaling group's tags are a list of {key, value, propagateAtLaunch}; every other type's a map.
  const tagsOf = (r: Resource): Tags => {
    const tags = r.inputs.tags as Tags | Array<{ key: string; value: string }> | undefined;
    return Array.isArray(tags) ? Object.fromEntries(tags.map((t) => [t.key, t.value])) : (tags ?? {});
  };
  const cluster = doc.resources.find((r) => r.type === "aws:ecs/cluster:Cluster");
  if (!cluster?.arn) throw new Error("the plan has no ECS cluster with an ARN");
  const clusterName = cluster.arn.split("/").pop()!;
  const [, , , region, account] = cluster.arn.split(":");
  const onCluster = { "ecs:cluster": cluster.arn };
  const targets: TargetResource[] = doc.resources
    .filter((r): r is Resource & { arn: string } => typeof r.arn === "string")
    .map((r) => ({
      arn: r.arn,
      tags: tagsOf(r),
      label: `${r.type} ${r.name}`,
      ...(r.type === "aws:ecs/taskDefinition:TaskDefinition" ? { context: onCluster } : {}),
    }));
  for (const lt of doc.resources.filter((r) => r.type === "aws:ec2/launchTemplate:LaunchTemplate")) {
    const specs = (lt.inputs.tagSpecifications as Array<{ resourceType: string; tags: Tags }> | undefined) ?? [];
    for (const spec of specs) {
      targets.push({
        arn: `arn:aws:ec2:${region}:${account}:${spec.resourceType}/${spec.resourceType}-from-${lt.name}`,
        tags: spec.tags,
        label: `a ${spec.resourceType} launched from ${lt.name}`,
      });
    }
  }
  const fleetTags = fleetInstanceTags(doc);
  targets.push({ arn: `arn:aws:ec2:${region}:${account}:instance/i-fleet-${doc.stack}`, tags: fleetTags, label: "a fleet instance its sweep recognises" });
  const runnerPath = housekeepingEnv(doc).RUNS_FLEET_RUNNER_PARAMETER_PATH!;
  targets.push({ arn: `arn:aws:ssm:${region}:${account}:parameter${runnerPath}/i-fleet-${doc.stack}/config`, tags: {}, label: "a runner's config parameter" });
  targets.push({ arn: `arn:aws:ecs:${region}:${account}:task/${clusterName}/task-${doc.stack}`, tags: {}, context: onCluster, label: "a task on its cluster" });
  return targets;
}

describe("stack isolation: dev and prod in one account and region", () => {
  const docs = useStackPlans();
  const pairs = [
    ["dev", "prod"],
    ["prod", "dev"],
  ] as const;

  it("share no physical name the program chooses", () => {
    const [dev, prod] = [explicitNames(docs.dev!), explicitNames(docs.prod!)];
    expect(dev.size, "dev names nothing itself: the test would prove nothing").to.be.greaterThan(0);
    const shared = [...dev.keys()].filter((n) => prod.has(n)).map((n) => `${n} (dev: ${dev.get(n)}; prod: ${prod.get(n)})`);
    expect(shared).to.deep.equal([]);
  });

  it("give awsx's VPC a name with the environment in it, so no Name tag awsx derives from it is shared", () => {
    // Prepare: awsx (awsx/ec2/vpc.ts) tags the VPC and internet gateway with the component's name,
    // each subnet and its route table <name>-<private|public>-<n>, each NAT gateway and EIP <name>-<n>.
    const nameTags = (doc: PlanDocument, env: string) => {
      const [vpc, ...more] = doc.resources.filter((r) => r.type === "awsx:ec2:Vpc");
      expect(more, "one VPC per stack").to.deep.equal([]);
      expect(carriesEnvironment(vpc!.name, env), `${vpc!.name} carries ${env}`).to.equal(true);
      const zones = ((vpc!.inputs.availabilityZoneNames as string[] | undefined) ?? []).length || Number(vpc!.inputs.numberOfAvailabilityZones ?? 2);
      const nats = (vpc!.inputs.natGateways as { strategy?: string } | undefined)?.strategy === "Single" ? 1 : zones;
      const n = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
      return new Set([
        vpc!.name,
        ...n(zones).flatMap((i) => [`${vpc!.name}-private-${i}`, `${vpc!.name}-public-${i}`]),
        ...n(nats).map((i) => `${vpc!.name}-${i}`),
      ]);
    };
    // Act
    const [dev, prod] = [nameTags(docs.dev!, "dev"), nameTags(docs.prod!, "prod")];
    // Assess
    expect([...dev].filter((t) => prod.has(t))).to.deep.equal([]);
  });

  it("share no ARN", () => {
    const arns = (doc: PlanDocument) => new Set(doc.resources.flatMap((r) => (r.arn ? [r.arn] : [])));
    const [dev, prod] = [arns(docs.dev!), arns(docs.prod!)];
    expect(dev.size).to.be.greaterThan(50);
    expect([...dev].filter((a) => prod.has(a))).to.deep.equal([]);
  });

  it("share no SSM parameter path (the public AMI aliases aside)", () => {
    const [dev, prod] = [parameterPaths(docs.dev!), parameterPaths(docs.prod!)];
    expect([...dev.keys()]).to.include.members(["/encache/dev/gpu/instance_id", "/runs-fleet/dev/runners"]);
    const shared = [...dev.keys()].filter((p) => prod.has(p)).map((p) => `${p} (dev: ${dev.get(p)}; prod: ${prod.get(p)})`);
    expect(shared).to.deep.equal([]);
  });

  it("key every grant, sweep and tag scan on a tag set the other stack's never equals", () => {
    const [dev, prod] = [keyedTagSets(docs.dev!), keyedTagSets(docs.prod!)];
    expect(dev.length).to.be.greaterThan(4);
    const same = (a: Tags, b: Tags) => Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);
    const shared = dev.flatMap((d) => prod.filter((p) => same(d.tags, p.tags)).map((p) => `${JSON.stringify(d.tags)} (dev: ${d.where}; prod: ${p.where})`));
    expect(shared).to.deep.equal([]);
  });

  for (const [from, to] of pairs) {
    it(`no grant of ${from} applies to a resource of ${to}`, () => {
      const statements = policyStatements(docs[from]!);
      const targets = resourcesOf(docs[to]!);
      const reaches: string[] = [];
      for (const { where, statement } of statements) {
        const unscopable =
          [statement.Resource].flat().includes("*") && !statement.Condition && [statement.Action].flat().every((a) => UNSCOPABLE.has(a.toLowerCase()));
        if (unscopable || lambdaEniOnly(statement)) continue;
        for (const target of targets) if (statementApplies(statement, target)) reaches.push(`${from} ${where} → ${to}'s ${target.label} (${target.arn})`);
      }
      expect(reaches).to.deep.equal([]);
    });

    it(`${from}'s own grants do reach its own resources (the matcher is not blind)`, () => {
      const statements = policyStatements(docs[from]!).map((s) => s.statement);
      const own = resourcesOf(docs[from]!);
      for (const label of ["a fleet instance its sweep recognises", "a runner's config parameter", "a task on its cluster"]) {
        const target = own.find((t) => t.label === label)!;
        expect(
          statements.some((s) => statementApplies(s, target)),
          label,
        ).to.equal(true);
      }
      // The GPU its DLQ consumer starts: the single instance, or in fleet mode the group whose capacity it raises.
      const [gpuLabel, startAction] =
        gpuMode(from) === "instance"
          ? ["aws:ec2/instance:Instance ingest-gpu", "ec2:StartInstances"]
          : ["aws:autoscaling/group:Group ingest-gpu-fleet", "autoscaling:SetDesiredCapacity"];
      const gpu = own.find((t) => t.label === gpuLabel);
      expect(gpu, gpuLabel).to.not.equal(undefined);
      expect(statements.some((s) => [s.Action].flat().includes(startAction) && statementApplies(s, gpu!))).to.equal(true);
      const poolInstances = own.filter((t) => t.label.startsWith("a instance launched from pool-"));
      expect(poolInstances.length).to.be.greaterThan(0);
      for (const t of poolInstances)
        expect(
          statements.some((s) => [s.Action].flat().includes("ec2:RunInstances") && statementApplies(s, t)),
          t.label,
        ).to.equal(true);
    });
  }

  it("each name their account with aws:allowedAccountIds, as the program requires", () => {
    for (const stack of ["dev", "prod"]) {
      const file = readStackFiles(REPO_ROOT, stack);
      expect(allowedAccountIdsProblem(file.config[ALLOWED_ACCOUNTS_KEY]), stack).to.equal(undefined);
    }
  });
});

describe("iam-match, the matcher the isolation test relies on", () => {
  const instance = (tags: Tags): TargetResource => ({ arn: "arn:aws:ec2:us-east-1:123456789012:instance/i-1", tags, label: "i-1" });
  const terminate: IamStatement = {
    Effect: "Allow",
    Action: ["ec2:TerminateInstances"],
    Resource: "arn:aws:ec2:us-east-1:123456789012:instance/*",
    Condition: { StringEquals: { "aws:ResourceTag/runs-fleet:managed": "true", "aws:ResourceTag/encache:environment": "dev" } },
  };
  const cases: Array<[string, IamStatement, TargetResource, boolean]> = [
    ["all condition tags present", terminate, instance({ "runs-fleet:managed": "true", "encache:environment": "dev" }), true],
    ["one condition tag differs", terminate, instance({ "runs-fleet:managed": "true", "encache:environment": "prod" }), false],
    ["a condition tag missing", terminate, instance({ "runs-fleet:managed": "true" }), false],
    [
      "another service's resource",
      { ...terminate, Resource: "*", Condition: undefined },
      { arn: "arn:aws:sqs:us-east-1:123456789012:q", tags: {}, label: "q" },
      false,
    ],
    [
      "a `?` wildcard",
      { Effect: "Allow", Action: "ssm:GetParameter", Resource: "arn:aws:ssm:us-east-1:123456789012:parameter/encache/de?/x" },
      { arn: "arn:aws:ssm:us-east-1:123456789012:parameter/encache/dev/x", tags: {}, label: "p" },
      true,
    ],
    [
      "a task definition on another cluster",
      {
        Effect: "Allow",
        Action: "ecs:RunTask",
        Resource: "arn:aws:ecs:us-east-1:123456789012:task-definition/f:*",
        Condition: { ArnEquals: { "ecs:cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/a" } },
      },
      {
        arn: "arn:aws:ecs:us-east-1:123456789012:task-definition/f:1",
        tags: {},
        context: { "ecs:cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/b" },
        label: "td",
      },
      false,
    ],
    ["a Deny", { ...terminate, Effect: "Deny" }, instance({ "runs-fleet:managed": "true", "encache:environment": "dev" }), false],
  ];
  for (const [title, statement, target, applies] of cases) {
    it(`${applies ? "applies" : "does not apply"}: ${title}`, () => expect(statementApplies(statement, target)).to.equal(applies));
  }

  it("treats `*` as any run of characters, and escapes the rest", () => {
    expect(arnPatternMatches("arn:aws:ssm:*:*:parameter/a/*", "arn:aws:ssm:us-east-1:1:parameter/a/b/c")).to.equal(true);
    expect(arnPatternMatches("arn:aws:ssm:*:*:parameter/a.b", "arn:aws:ssm:us-east-1:1:parameter/aXb")).to.equal(false);
  });
});
