/**
 * Documents as the AWS provider compares them. A stack's state holds what the provider stored, in
 * its order; the program's declaration holds the program's. Lists whose order AWS ignores are
 * compared as sets, by putting both sides in one order first, exactly as the provider does before
 * it diffs (so the gate agrees with the provider's own "no changes").
 */
import { isRecord } from "./props";

/** Go's `cmp.Compare` on strings: byte order of the UTF-8 encoding (not `localeCompare`, not UTF-16 code units). */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Go's encoding/json round trip (structure.NormalizeJsonString): object keys sorted, undefined members dropped. */
export function normalizeJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeJson);
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort(byteOrder)) if (value[key] !== undefined) out[key] = normalizeJson(value[key]);
    return out;
  }
  return value;
}

/** itypes.IsZero: a list element the provider compacts away is its type's zero value. */
export function isZero(v: unknown): boolean {
  if (v === null || v === undefined || v === "" || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isRecord(v)) return Object.values(v).every(isZero);
  return false;
}

/** The lists `containerDefinitions.compactArrays` compacts (terraform-provider-aws internal/service/ecs/container_definitions.go). */
export const COMPACTED_CONTAINER_LISTS = [
  "dependsOn",
  "environment",
  "environmentFiles",
  "extraHosts",
  "mountPoints",
  "portMappings",
  "resourceRequirements",
  "secrets",
  "systemControls",
  "ulimits",
  "volumesFrom",
] as const;

/** Lists `containerDefinitions.reduce` sets to nil when empty, so `[]` and absent are one value. */
const EMPTY_IS_ABSENT = [
  ...COMPACTED_CONTAINER_LISTS,
  "command",
  "credentialSpecs",
  "dnsSearchDomains",
  "dnsServers",
  "dockerSecurityOptions",
  "entryPoint",
  "links",
];

const byName = (a: unknown, b: unknown) => byteOrder(String(isRecord(a) ? (a.name ?? "") : ""), String(isRecord(b) ? (b.name ?? "") : ""));

/**
 * One container list in the provider's order: `orderContainers`, `orderEnvironmentVariables`,
 * `orderSecrets` (each `cmp.Compare` on the name) and `compactArrays`, from
 * terraform-provider-aws internal/service/ecs/container_definitions.go. The attribute's StateFunc
 * and resourceTaskDefinitionRead store container definitions in this order.
 */
export function orderContainerDefinitions(containers: readonly unknown[]): unknown[] {
  const ordered = containers.map((c) => {
    if (!isRecord(c)) return c;
    const out: Record<string, unknown> = { ...c };
    for (const key of COMPACTED_CONTAINER_LISTS) {
      const list = out[key];
      if (Array.isArray(list)) out[key] = list.filter((e) => !isZero(e));
    }
    for (const key of ["environment", "secrets"]) {
      const list = out[key];
      if (Array.isArray(list)) out[key] = [...list].sort(byName);
    }
    return out;
  });
  return ordered.sort(byName);
}

/**
 * `containerDefinitions.reduce` (container_definitions.go), which `containerDefinitionsAreEquivalent`
 * runs on both sides before the provider diffs: the provider's order, `essential` true by default,
 * a health check's defaults, TCP (the default protocol) and a zero host port dropped from port
 * mappings (the host port equal to the container port under awsvpc), and empty lists absent.
 */
export function reduceContainerDefinitions(containers: readonly unknown[], isAwsVpc: boolean): unknown[] {
  return orderContainerDefinitions(containers).map((c) => {
    if (!isRecord(c)) return c;
    const out: Record<string, unknown> = { ...c };
    if (out.essential === undefined || out.essential === null) out.essential = true;
    if (isRecord(out.healthCheck)) out.healthCheck = { interval: 30, retries: 3, timeout: 5, ...out.healthCheck };
    if (Array.isArray(out.portMappings)) {
      out.portMappings = out.portMappings.map((pm) => {
        if (!isRecord(pm)) return pm;
        const m: Record<string, unknown> = { ...pm };
        if (m.protocol === "tcp") delete m.protocol;
        if (!m.hostPort) delete m.hostPort;
        if (isAwsVpc && m.hostPort === undefined && m.containerPort !== undefined) m.hostPort = m.containerPort;
        return m;
      });
    }
    for (const key of EMPTY_IS_ABSENT) if (Array.isArray(out[key]) && (out[key] as unknown[]).length === 0) delete out[key];
    return out;
  });
}

/** IAM policy members whose value is a set: AWS (and awspolicyequivalence, which the provider diffs with) ignores their order and a lone string equals a one-element list. */
const IAM_SET_MEMBERS = ["Action", "NotAction", "Resource", "NotResource"];

function asSortedSet(value: unknown): unknown {
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((v) => typeof v === "string")) return value;
  return [...new Set(list as string[])].sort(byteOrder);
}

function canonicalStatement(s: unknown): unknown {
  if (!isRecord(s)) return s;
  const out: Record<string, unknown> = { ...s };
  for (const key of IAM_SET_MEMBERS) if (out[key] !== undefined) out[key] = asSortedSet(out[key]);
  if (isRecord(out.Condition)) {
    out.Condition = Object.fromEntries(
      Object.entries(out.Condition).map(([op, keys]) => [
        op,
        isRecord(keys) ? Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, asSortedSet(v)])) : keys,
      ]),
    );
  }
  if (isRecord(out.Principal)) out.Principal = Object.fromEntries(Object.entries(out.Principal).map(([k, v]) => [k, asSortedSet(v)]));
  return normalizeJson(out);
}

/**
 * An IAM policy document in one canonical form: statements as a set, and within each statement
 * Action/Resource (and their Not forms), condition values and principals as sets, keys sorted. Two
 * documents AWS treats as the same grant have the same canonical form.
 */
export function canonicalPolicy(doc: unknown): unknown {
  if (!isRecord(doc)) return doc;
  const statements = Array.isArray(doc.Statement) ? doc.Statement : doc.Statement === undefined ? undefined : [doc.Statement];
  const out: Record<string, unknown> = { ...doc };
  if (statements) {
    out.Statement = statements.map(canonicalStatement).sort((a, b) => byteOrder(JSON.stringify(a), JSON.stringify(b)));
  }
  return normalizeJson(out);
}
