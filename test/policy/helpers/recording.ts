/**
 * A small builder for offline-plan recordings (`RecordedResource`, policy/testing/types.ts).
 *
 * Each builder makes one resource in one line, shaped the way the plan records it: URNs nest the
 * type under the part's component type, `outputs` are the inputs plus what the mocks return
 * (`id`, and for the builders below that the mocks answer, ARNs/URLs/names), and every edge a rule
 * follows is a `propertyDependencies` entry (key = the input the other resource's output flowed
 * into); `dependencies` is their union plus `dependsOn`.
 *
 *     const rs = [queue("orders", { visibilityTimeoutSeconds: 60 }), table("state", {})];
 *     mapping("orders-reader", { batchSize: 1 }, { deps: { eventSourceArn: [urnOf(T.queue, "orders")] } });
 *
 * The good part recordings (ingest.ts, fleet.ts, ...) are built from these, and the mutation
 * helpers at the end (find, setInput, remove, add) edit any recording in place.
 */
import { DECLARED_DOCUMENT_TYPE } from "../../../policy/contract";
import type { RecordedResource } from "../../../policy/testing/types";

export const STACK = "dev";
export const PROJECT = "encache";
export const ACCOUNT = "123456789012";
export const REGION = "eu-west-1";
const INGEST_TYPE = "encache:parts:Ingest";

/** Pulumi type tokens of the resources the rules judge. */
export const T = {
  queue: "aws:sqs/queue:Queue",
  redriveAllow: "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy",
  mapping: "aws:lambda/eventSourceMapping:EventSourceMapping",
  fn: "aws:lambda/function:Function",
  role: "aws:iam/role:Role",
  rolePolicy: "aws:iam/rolePolicy:RolePolicy",
  attachment: "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
  policy: "aws:iam/policy:Policy",
  instance: "aws:ec2/instance:Instance",
  launchTemplate: "aws:ec2/launchTemplate:LaunchTemplate",
  alarm: "aws:cloudwatch/metricAlarm:MetricAlarm",
  logGroup: "aws:cloudwatch/logGroup:LogGroup",
  parameter: "aws:ssm/parameter:Parameter",
  table: "aws:dynamodb/table:Table",
  schedule: "aws:scheduler/schedule:Schedule",
  eventTarget: "aws:cloudwatch/eventTarget:EventTarget",
  service: "aws:ecs/service:Service",
  taskDefinition: "aws:ecs/taskDefinition:TaskDefinition",
} as const;

/** A part: the component resource (`encache:parts:<Part>`) that parents a part's resources. */
export interface Part {
  type: string;
  name: string;
  urn: string;
}

export function urnOf(type: string, name: string, parentType: string | null = INGEST_TYPE): string {
  const qualified = parentType ? `${parentType}$${type}` : type;
  return `urn:pulumi:${STACK}::${PROJECT}::${qualified}::${name}`;
}

export function part(type: string, name: string): Part {
  return { type, name, urn: urnOf(type, name, null) };
}

/** The default parent: builders put resources under the ingest part unless told otherwise. */
export const INGEST = part(INGEST_TYPE, "ingest");
export const FLEET = part("encache:parts:Fleet", "fleet");

export const arnOf = (service: string, resource: string, region: string = REGION) => `arn:aws:${service}:${region}:${ACCOUNT}:${resource}`;
export const queueArn = (name: string) => arnOf("sqs", name);
export const queueUrl = (name: string) => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
export const roleArn = (name: string) => `arn:aws:iam::${ACCOUNT}:role/${name}`;

export interface Spec {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  /** Input key → URNs whose outputs flowed into that input. */
  propertyDependencies?: Record<string, string[]>;
  dependsOn?: string[];
  /** What the mock returns on top of the inputs. */
  state?: Record<string, unknown>;
  /** The part whose component parents the resource (default: ingest). */
  part?: Part;
}

export function record(spec: Spec): RecordedResource {
  const p = spec.part ?? INGEST;
  const propertyDependencies = spec.propertyDependencies ?? {};
  const dependencies = [...new Set([...Object.values(propertyDependencies).flat(), ...(spec.dependsOn ?? [])])];
  return {
    urn: urnOf(spec.type, spec.name, p.type),
    type: spec.type,
    name: spec.name,
    parent: p.urn,
    custom: true,
    inputs: spec.inputs,
    outputs: { ...spec.inputs, id: spec.name, ...(spec.state ?? {}) },
    dependencies,
    propertyDependencies,
  };
}

/** A part's component resource: a child of the stack, and (as under the plan's mocks) no outputs. */
export function component(p: Part): RecordedResource {
  return { urn: p.urn, type: p.type, name: p.name, parent: null, custom: false, inputs: {}, outputs: {}, dependencies: [], propertyDependencies: {} };
}

/** Options every one-line builder takes. */
export interface Opts {
  /** propertyDependencies: input key → URNs of the resources that input was built from. */
  deps?: Record<string, string[]>;
  dependsOn?: string[];
  /** Replaces the builder's mock state (outputs on top of the inputs). */
  state?: Record<string, unknown>;
  part?: Part;
}

type Inputs = Record<string, unknown>;

function build(type: string, name: string, inputs: Inputs, o: Opts, mockState: Record<string, unknown> = {}): RecordedResource {
  return record({ type, name, inputs, propertyDependencies: o.deps, dependsOn: o.dependsOn, state: o.state ?? mockState, part: o.part });
}

/** Any resource, with no mock state beyond `id`. */
export const resource = (type: string, name: string, inputs: Inputs = {}, o: Opts = {}) => build(type, name, inputs, o);

export const queue = (name: string, inputs: Inputs = {}, o: Opts = {}) =>
  build(T.queue, name, inputs, o, { arn: queueArn(name), url: queueUrl(name), id: queueUrl(name), name });
export const role = (name: string, inputs: Inputs = {}, o: Opts = {}) => build(T.role, name, inputs, o, { arn: roleArn(name), name });
export const rolePolicy = (name: string, inputs: Inputs, o: Opts = {}) => build(T.rolePolicy, name, inputs, o);
export const managedPolicy = (name: string, inputs: Inputs, o: Opts = {}) =>
  build(T.policy, name, inputs, o, { arn: `arn:aws:iam::${ACCOUNT}:policy/${name}` });
export const attachment = (name: string, inputs: Inputs, o: Opts = {}) => build(T.attachment, name, inputs, o);
export const fn = (name: string, inputs: Inputs = {}, o: Opts = {}) => build(T.fn, name, inputs, o, { arn: arnOf("lambda", `function:${name}`), name });
export const mapping = (name: string, inputs: Inputs = {}, o: Opts = {}) => build(T.mapping, name, inputs, o, { uuid: `${name}-uuid` });
/** The stack's alert topic, which every alarm of the program notifies. */
export const ALERT_TOPIC_ARN = arnOf("sns", "platform-alerts");
export const alarm = (name: string, inputs: Inputs, o: Opts = {}) =>
  build(T.alarm, name, { alarmActions: [ALERT_TOPIC_ARN], ...inputs }, o, { arn: arnOf("cloudwatch", `alarm:${name}`) });
export const logGroup = (name: string, inputs: Inputs = {}, o: Opts = {}) => build(T.logGroup, name, inputs, o);
export const table = (name: string, inputs: Inputs = {}, o: Opts = {}) => build(T.table, name, inputs, o);
export const schedule = (name: string, inputs: Inputs, o: Opts = {}) => build(T.schedule, name, inputs, o);
export const eventTarget = (name: string, inputs: Inputs, o: Opts = {}) => build(T.eventTarget, name, inputs, o);
export const instance = (name: string, inputs: Inputs, o: Opts = {}) => build(T.instance, name, inputs, o);
export const launchTemplate = (name: string, inputs: Inputs, o: Opts = {}) => build(T.launchTemplate, name, inputs, o);
export const service = (name: string, inputs: Inputs, o: Opts = {}) => build(T.service, name, inputs, o);
export const taskDefinition = (name: string, inputs: Inputs, o: Opts = {}) => build(T.taskDefinition, name, inputs, o);

/** An IAM policy document with these statements. */
export function doc(...statements: Record<string, unknown>[]): { Version: string; Statement: Record<string, unknown>[] } {
  return { Version: "2012-10-17", Statement: statements };
}

export const lambdaTrust = doc({ Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" }, Action: "sts:AssumeRole" });
/** ECS tasks may assume the role only for this account's ECS (trust-policy-confused-deputy). */
export const ecsTasksTrust = doc({
  Effect: "Allow",
  Principal: { Service: "ecs-tasks.amazonaws.com" },
  Action: "sts:AssumeRole",
  Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT }, ArnLike: { "aws:SourceArn": `arn:aws:ecs:${REGION}:${ACCOUNT}:*` } },
});

// ---- Mutations (every good recording is a fresh copy, so tests edit it in place) ----

export function find(resources: readonly RecordedResource[], urn: string): RecordedResource {
  const r = resources.find((x) => x.urn === urn);
  if (!r) throw new Error(`recording has no ${urn}`);
  return r;
}

/** Sets an input the way the program would, so both Analyze (inputs) and AnalyzeStack (outputs) see it. */
export function setInput(resources: readonly RecordedResource[], urn: string, key: string, value: unknown): void {
  const r = find(resources, urn);
  if (value === undefined) {
    delete r.inputs[key];
    delete r.outputs[key];
  } else {
    r.inputs[key] = value;
    r.outputs[key] = value;
  }
}

/** Deep-edits one input (a copy of it, written back to inputs and outputs alike). */
export function editInput<V = Record<string, unknown>>(resources: readonly RecordedResource[], urn: string, key: string, edit: (v: V) => void): void {
  const value = structuredClone(find(resources, urn).inputs[key]) as V;
  edit(value);
  setInput(resources, urn, key, value);
}

/** Replaces the statements of a RolePolicy's or Policy's document. */
export function setStatements(resources: readonly RecordedResource[], urn: string, statements: unknown[]): void {
  setInput(resources, urn, "policy", { Version: "2012-10-17", Statement: statements });
}

/** Removes a resource and every edge to it. */
export function remove(resources: RecordedResource[], urn: string): void {
  const i = resources.findIndex((x) => x.urn === urn);
  if (i < 0) throw new Error(`recording has no ${urn}`);
  resources.splice(i, 1);
  for (const r of resources) {
    r.dependencies = r.dependencies.filter((d) => d !== urn);
    for (const k of Object.keys(r.propertyDependencies)) {
      r.propertyDependencies[k] = r.propertyDependencies[k].filter((d) => d !== urn);
    }
  }
}

export function add(resources: RecordedResource[], ...added: RecordedResource[]): void {
  resources.push(...added);
}

/** The documents the program declares beside their resources (infra/iam/declared.ts, infra/lib/declared-document.ts). */
const DECLARED: Readonly<Record<string, string>> = { [T.rolePolicy]: "policy", [T.policy]: "policy", [T.taskDefinition]: "containerDefinitions" };

/**
 * The recording as the program registers it: each RolePolicy's and Policy's `policy` and each task
 * definition's `containerDefinitions` also declared in a DeclaredDocument sibling, built from the same
 * value (so a mutation of the document is a mutation of both, as in the program). A resource that
 * already has a declaration keeps it: the tests of `declared-documents-match` build mismatched ones.
 */
export function withDeclarations(resources: readonly RecordedResource[]): RecordedResource[] {
  const out = [...resources];
  for (const r of resources) {
    const property = DECLARED[r.type];
    if (!property || !(property in r.inputs)) continue;
    const name = `${r.name}-declared`;
    if (resources.some((d) => d.type === DECLARED_DOCUMENT_TYPE && d.parent === r.parent && d.name === name)) continue;
    const value = r.inputs[property];
    let document: unknown = value;
    if (typeof value === "string") {
      try {
        document = JSON.parse(value);
      } catch {
        document = value;
      }
    }
    const props = { resource: r.name, resourceType: r.type, property, document };
    const deps = r.propertyDependencies[property] ?? [];
    const parentType = r.urn.split("::")[2]!.split("$").slice(0, -1).join("$") || null;
    out.push({
      urn: urnOf(DECLARED_DOCUMENT_TYPE, name, parentType),
      type: DECLARED_DOCUMENT_TYPE,
      name,
      parent: r.parent,
      custom: false,
      inputs: props,
      outputs: structuredClone(props),
      dependencies: [...deps],
      propertyDependencies: { document: [...deps] },
    });
  }
  return out;
}
