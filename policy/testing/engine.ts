/**
 * What the Pulumi engine hands a policy pack, modelled from a recording of the program under mocks.
 * The offline plan and the policy tests use this one model.
 *
 * **After Check, in every mode.** The engine gives the pack a resource's inputs as the provider's
 * Check returned them. pulumi-aws marks its JSON-document inputs (`policy`, `assumeRolePolicy`…)
 * with the bridge's `TransformJSONDocument`: an object becomes its JSON string, and one that
 * contains anything unknown becomes a single unknown string ("We can't marshal properties that
 * contain unknowns. Turn these into an unknown value instead", pulumi-terraform-bridge
 * pkg/tfbridge/transforms.go; the fields are listed in pulumi-aws provider/resources.go).
 *
 * **A first preview** (`firstPreview`): the stack does not exist yet, so every custom resource is
 * to be created, and what its provider computes at create time (its id, ARN, URL, any output that
 * is not one of its inputs) is unknown. Known are: every input the program wrote as a literal,
 * outputs that echo an input, the auto-name Check assigns (`name`), and invoke results (caller
 * identity, SSM lookups, zones): invokes run during preview. An input built from an unknown output
 * holds an unknown where the output went: a string leaf into which one was interpolated is
 * unknown, the rest of the object stays known (the SDK serialises unknowns leaf by leaf). Remote
 * components (awsx) are computed by their provider too, so their outputs are unknown; local
 * components (encache:*) compute nothing.
 *
 * `test/plan/engine-model.test.ts` checks this model against the SDK itself: the program planned with
 * the mocks in preview mode, where the SDK leaves unknown whatever was not returned, gives the same
 * unknown inputs as `firstPreview` derives from the update plan.
 */
import { computedUnsetAttributes, computedUnsetNested, isAwsCustom, storedOutputs } from "./provider-model";
import type { RecordedResource } from "./types";

/** The engine's wire placeholders (@pulumi/policy/proxy): a value unknown on this preview. */
export const UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
/** Every typed placeholder @pulumi/policy/proxy knows (string, boolean, number, array, asset, archive, object). */
const UNKNOWN_VALUES = new Set([
  UNKNOWN_STRING,
  "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
  "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
  "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
  "030794c1-ac77-496b-92df-f27374a8bd58",
  "e48ece36-62e2-4504-bad9-02848725956a",
  "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
]);

/** Inputs that pulumi-aws passes through TransformJSONDocument, by resource type. */
export const JSON_DOCUMENT_INPUTS: Readonly<Record<string, readonly string[]>> = {
  "aws:iam/policy:Policy": ["policy"],
  "aws:iam/rolePolicy:RolePolicy": ["policy"],
  "aws:iam/role:Role": ["assumeRolePolicy"],
  "aws:iam/userPolicy:UserPolicy": ["policy"],
  "aws:iam/groupPolicy:GroupPolicy": ["policy"],
  "aws:sqs/queuePolicy:QueuePolicy": ["policy"],
  "aws:ecr/repositoryPolicy:RepositoryPolicy": ["policy"],
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": ["policy"],
};

/** True when `value` holds an unknown anywhere. */
export function containsUnknown(value: unknown): boolean {
  if (typeof value === "string") return UNKNOWN_VALUES.has(value);
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (typeof value === "object" && value !== null) return Object.values(value).some(containsUnknown);
  return false;
}

/** One resource's properties as the provider's Check returns them. Pure. */
export function afterCheck(type: string, props: Record<string, unknown>): Record<string, unknown> {
  const documents = JSON_DOCUMENT_INPUTS[type];
  if (!documents) return props;
  const out = { ...props };
  for (const key of documents) {
    const value = out[key];
    if (value === undefined || value === null) continue;
    if (containsUnknown(value)) out[key] = UNKNOWN_STRING;
    else if (typeof value !== "string") out[key] = JSON.stringify(value);
  }
  return out;
}

/**
 * The engine's view on a preview of an existing stack, and at `up`: every value known, inputs after
 * Check, and outputs as the provider stores them after a refresh (provider-model.ts: container
 * definitions in its order with ECS's defaults, a Role's inline policies read back from IAM…).
 */
export function updateView(recording: readonly RecordedResource[]): RecordedResource[] {
  return recording.map((r) => ({
    ...r,
    inputs: afterCheck(r.type, r.inputs),
    outputs: storedOutputs({ ...r, outputs: afterCheck(r.type, r.outputs) }, recording),
  }));
}

const isRemoteComponent = (r: RecordedResource) => !r.custom && !r.type.startsWith("encache:");

/**
 * What the provider computes when `r` is created: its id, every output the mock answered that is
 * not an input (the auto-name aside), and for an AWS resource every attribute its schema computes
 * that the program leaves unset (provider-model.ts), whether or not the mock answered it.
 */
export function computedAtCreate(r: RecordedResource): Record<string, unknown> {
  if (!r.custom && !isRemoteComponent(r)) return {};
  const computed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(r.outputs)) {
    if (key in r.inputs || key === "name" || key === "id" || key === "urn") continue;
    computed[key] = value;
  }
  if (isAwsCustom(r)) for (const key of computedUnsetAttributes(r)) if (!(key in computed)) computed[key] = r.outputs[key];
  if (r.id) computed.id = r.id;
  return computed;
}

/** `block` with each computed field the program left unset unknown (in each element, for a list of blocks). */
function withUnknownFields(block: unknown, fields: readonly string[]): unknown {
  if (Array.isArray(block)) return block.map((b) => withUnknownFields(b, fields));
  if (typeof block !== "object" || block === null || containsUnknown(block)) return block;
  const out: Record<string, unknown> = { ...(block as Record<string, unknown>) };
  for (const f of fields) if (out[f] === undefined || out[f] === null) out[f] = UNKNOWN_STRING;
  return out;
}

/** Strings (and numbers) a value embeds, for finding where computed outputs flowed. */
function leaves(value: unknown, out: Array<string | number> = []): Array<string | number> {
  if (typeof value === "string" || typeof value === "number") out.push(value);
  else if (Array.isArray(value)) for (const v of value) leaves(v, out);
  else if (typeof value === "object" && value !== null) for (const v of Object.values(value)) leaves(v, out);
  return out;
}

/**
 * Computed values, plus the resource part of each ARN among them (`cluster/<name>` → `<name>`): a
 * program may rebuild an ARN from another one (a task ARN from its cluster's), and the result is as
 * unknown as its source. The tail is usually the auto-name, so a leaf that embeds the name itself
 * also counts as unknown: the model errs towards unknown, never towards known.
 */
function withArnTails(values: Array<string | number>): Array<string | number> {
  const tails = values.flatMap((v) => (typeof v === "string" && v.startsWith("arn:") ? [v.split(/[:/]/).pop() ?? ""] : [])).filter((t) => t.length >= 6);
  return [...values, ...tails];
}

/** The text a base64 string decodes to, when it is base64 of UTF-8 text (user data); else nothing. */
function base64Text(value: string): string[] {
  if (value.length < 8 || value.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) return [];
  const text = Buffer.from(value, "base64").toString("utf8");
  return Buffer.from(text, "utf8").toString("base64") === value ? [text] : [];
}

/** `value` with every leaf that embeds one of `computed` replaced by the unknown placeholder. */
function withUnknownLeaves(value: unknown, computed: ReadonlyArray<string | number>, wholes: ReadonlySet<string> = new Set()): unknown {
  if (computed.length === 0) return value;
  if (typeof value === "object" && value !== null && wholes.has(JSON.stringify(value))) return UNKNOWN_STRING;
  if (typeof value === "string") {
    // A short value (a region, "1") could occur by chance: only distinctive outputs count. A number
    // interpolated into a string (a launch template's latestVersion as the group's version) is as
    // unknown as the number; and a base64 leaf (a launch template's userData) is searched decoded too.
    const texts = [value, ...base64Text(value)];
    return computed.some((c) => (typeof c === "string" ? c.length >= 6 && texts.some((t) => t.includes(c)) : value === String(c))) ? UNKNOWN_STRING : value;
  }
  if (typeof value === "number") return computed.includes(value) ? UNKNOWN_STRING : value;
  if (Array.isArray(value)) return value.map((v) => withUnknownLeaves(v, computed, wholes));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withUnknownLeaves(v, computed, wholes)]));
  }
  return value;
}

/**
 * The engine's view on a first preview of `recording`, a plan of the same program with every
 * value known. Pure.
 */
export function firstPreview(recording: readonly RecordedResource[]): RecordedResource[] {
  const byUrn = new Map(recording.map((r) => [r.urn, r]));
  const computedOf = new Map(recording.map((r) => [r.urn, withArnTails(leaves(Object.values(computedAtCreate(r))))]));
  // A computed list or object passed on whole (a VPC's subnet ids) is unknown whole, its length included.
  const wholesOf = new Map(
    recording.map((r) => [
      r.urn,
      Object.values(computedAtCreate(r))
        .filter((v) => typeof v === "object" && v !== null)
        .map((v) => JSON.stringify(v)),
    ]),
  );
  return recording.map((r) => {
    const inputs: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(r.inputs)) {
      const deps = (r.propertyDependencies[key] ?? []).filter((u) => byUrn.has(u));
      const wholes = new Set(deps.flatMap((u) => wholesOf.get(u) ?? []));
      inputs[key] = withUnknownLeaves(
        value,
        deps.flatMap((u) => computedOf.get(u) ?? []),
        wholes,
      );
    }
    const outputs: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(r.outputs)) outputs[key] = key in inputs ? inputs[key] : value;
    for (const key of Object.keys(computedAtCreate(r))) if (key !== "id") outputs[key] = UNKNOWN_STRING;
    if (isAwsCustom(r)) for (const [block, fields] of Object.entries(computedUnsetNested(r))) outputs[block] = withUnknownFields(outputs[block], fields);
    const { id: _id, ...rest } = r;
    return { ...rest, inputs: afterCheck(r.type, inputs), outputs: afterCheck(r.type, outputs) };
  });
}
