/**
 * What the AWS provider computes and stores, for the engine model (engine.ts). Stack rules read a
 * resource's outputs, and outputs are the provider's, not the program's:
 *
 * - **On a first preview** the bridge answers Create with the provider's proposed state
 *   (pulumi-terraform-bridge pkg/tfbridge/provider.go, `Create` with `preview`): every attribute the
 *   provider computes is unknown, and so is every Optional+Computed one the program leaves unset
 *   (`Role.inlinePolicies`, `Queue.redrivePolicy`, `Table.ttl`). Which attributes those are comes
 *   from the provider's schema, kept as data in provider-schema.json (generated from the installed
 *   @pulumi/aws typings by plan/provider/schema-from-typings.ts).
 * - **On a preview of an existing stack, and at `up`** the outputs are what the provider stored:
 *   its Read after a refresh, through each attribute's StateFunc. `storedOutputs` applies the
 *   normalisations of the attributes the rules read or compare; each names the provider function it
 *   follows.
 */
import { normalizeJson, orderContainerDefinitions } from "../lib/provider-normal-form";
import schema from "./provider-schema.json";
import type { RecordedResource } from "./types";

export interface TypeSchema {
  upstream: string;
  computed: string[];
  optionalComputed: string[];
  nested?: Record<string, { computed: string[]; optionalComputed: string[] }>;
}

export const PROVIDER_SCHEMA: { source: { package: string; version: string }; types: Record<string, TypeSchema> } = schema;

/**
 * Computed attributes the provider already knows at plan time, so a first preview shows them:
 * `tagsAll` (the provider's CustomizeDiff merges default_tags into it, verify.SetTagsDiff),
 * `region` (the provider's region, set at plan by its region CustomizeDiff), and `name`, which
 * the bridge's Check fills with the auto-name (`<logical name>-<random>`) before any preview.
 */
export const KNOWN_AT_PLAN: ReadonlySet<string> = new Set(["tagsAll", "region", "name"]);

/** The provider's schema of `type`, or an error naming the file to regenerate: an unmodelled type would be judged as if the provider computed nothing. */
export function schemaOf(type: string): TypeSchema {
  const entry = PROVIDER_SCHEMA.types[type];
  if (!entry) {
    throw new Error(
      `${type} is not in policy/testing/provider-schema.json, so the plan cannot tell which of its outputs the provider computes: ` +
        "add its upstream file to UPSTREAM in plan/provider/schema-from-typings.ts and run `npm run provider-schema`",
    );
  }
  return entry;
}

export const isAwsCustom = (r: Pick<RecordedResource, "custom" | "type">) => r.custom && r.type.startsWith("aws:");

const isSet = (value: unknown) => value !== undefined && value !== null;

/**
 * Top-level attributes of `r` unknown on a first preview: the Computed ones and the
 * Optional+Computed ones its inputs leave unset, less what the provider knows at plan time.
 */
export function computedUnsetAttributes(r: Pick<RecordedResource, "type" | "inputs">): string[] {
  const s = schemaOf(r.type);
  return [...s.computed, ...s.optionalComputed.filter((k) => !isSet(r.inputs[k]))].filter((k) => !KNOWN_AT_PLAN.has(k));
}

/**
 * Nested attributes unknown on a first preview: inside a block the program sets (an object, or
 * each object of a list), the computed fields it leaves unset. Returns `block → fields`.
 */
export function computedUnsetNested(r: Pick<RecordedResource, "type" | "inputs">): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [block, s] of Object.entries(schemaOf(r.type).nested ?? {})) {
    if (!isSet(r.inputs[block])) continue;
    out[block] = [...s.computed, ...s.optionalComputed].filter((k) => !KNOWN_AT_PLAN.has(k));
  }
  return out;
}

/**
 * What DescribeTaskDefinition returns for fields a registration left out, which the provider's Read
 * stores (flattenContainerDefinitions of the API's answer): ECS fills these defaults in
 * (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_definition_parameters.html).
 */
const ECS_CONTAINER_DEFAULTS: Readonly<Record<string, unknown>> = {
  cpu: 0,
  essential: true,
  environment: [],
  mountPoints: [],
  portMappings: [],
  systemControls: [],
  volumesFrom: [],
};

/**
 * Container definitions as the provider stores them (terraform-provider-aws internal/service/ecs):
 * `expandContainerDefinitions` + `compactArrays`, then `orderContainers`,
 * `orderEnvironmentVariables` and `orderSecrets` (each `cmp.Compare` on the name: byte order), as
 * the attribute's StateFunc and resourceTaskDefinitionRead do; ECS's defaults added by the API;
 * and `structure.NormalizeJsonString` (keys sorted). Returns the JSON string, or `value` unchanged
 * when it is not a JSON list (the rules report that themselves).
 */
export function storedContainerDefinitions(value: unknown): unknown {
  let parsed: unknown = value;
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value);
    } catch {
      return value;
    }
  }
  if (!Array.isArray(parsed)) return value;
  const withDefaults = parsed.map((c: unknown) => (typeof c === "object" && c !== null && !Array.isArray(c) ? { ...ECS_CONTAINER_DEFAULTS, ...c } : c));
  return JSON.stringify(normalizeJson(orderContainerDefinitions(withDefaults)));
}

/** A JSON document attribute as the provider stores it: its StateFunc runs structure.NormalizeJsonString (iam role.go, role_policy.go, policy.go). */
function storedJsonDocument(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.stringify(normalizeJson(JSON.parse(value)));
  } catch {
    return value;
  }
}

/** JSON-document attributes whose StateFunc normalises them, by type. */
const NORMALISED_DOCUMENTS: Readonly<Record<string, readonly string[]>> = {
  "aws:iam/role:Role": ["assumeRolePolicy"],
  "aws:iam/rolePolicy:RolePolicy": ["policy"],
  "aws:iam/policy:Policy": ["policy"],
};

/**
 * The outputs the provider stores for `r` (inputs after Check, plus what it computed), with the
 * normalisations of its Read and StateFuncs, after a refresh. Pure; `recording` gives the other
 * resources, for attributes the provider reads back from AWS rather than from the program.
 */
export function storedOutputs(r: RecordedResource, recording: readonly RecordedResource[]): Record<string, unknown> {
  if (!isAwsCustom(r)) return r.outputs;
  schemaOf(r.type);
  const out: Record<string, unknown> = { ...r.outputs };
  for (const key of NORMALISED_DOCUMENTS[r.type] ?? []) if (key in out) out[key] = storedJsonDocument(out[key]);
  const unset = (key: string) => !isSet(r.inputs[key]);
  switch (r.type) {
    case "aws:ecs/taskDefinition:TaskDefinition":
      if ("containerDefinitions" in out) out.containerDefinitions = storedContainerDefinitions(out.containerDefinitions);
      break;
    case "aws:iam/role:Role": {
      // resourceRoleRead: inline_policy from ListRolePolicies/GetRolePolicy (every inline policy of the
      // role, those of aws_iam_role_policy included) when the program manages none itself, and
      // managed_policy_arns from ListAttachedRolePolicies. Seen after a refresh; `up` after a create
      // stores empty lists, because the role's policies are created after it.
      const onRole = (type: string) => recording.filter((x) => x.type === type && (x.propertyDependencies.role ?? []).includes(r.urn));
      if (unset("inlinePolicies")) {
        out.inlinePolicies = onRole("aws:iam/rolePolicy:RolePolicy").map((p) => ({
          name: p.outputs.name ?? p.name,
          policy: storedJsonDocument(p.inputs.policy),
        }));
      }
      if (unset("managedPolicyArns")) {
        out.managedPolicyArns = onRole("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
          .map((a) => a.inputs.policyArn)
          .filter((a): a is string => typeof a === "string");
      }
      break;
    }
    case "aws:sqs/queue:Queue":
      // resourceQueueRead sets redrive_policy from the queue's attributes: "" when it has none.
      if (unset("redrivePolicy")) out.redrivePolicy = "";
      break;
    case "aws:dynamodb/table:Table":
      // resourceTableRead: DescribeTimeToLive and DescribeContinuousBackups answer "disabled".
      if (unset("ttl")) out.ttl = { enabled: false, attributeName: "" };
      if (unset("pointInTimeRecovery")) out.pointInTimeRecovery = { enabled: false, recoveryPeriodInDays: 0 };
      break;
  }
  return out;
}
