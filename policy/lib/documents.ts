import type { PolicyResource } from "@pulumi/policy";
import { DECLARED_DOCUMENT_TYPE } from "../contract";
import { isRecord, isUnknownValueError, records } from "./props";
import { ECS_TASK_DEFINITION, IAM_POLICY, ROLE, ROLE_POLICY } from "./types";

/**
 * Where the rules read JSON documents (IAM policies, container definitions). On a first preview the
 * engine hands a resource's document over as one unknown string (policy/contract/declarations.ts);
 * the program then declares it in a DeclaredDocument component beside the resource, whose document
 * stays an object with only its unknown leaves unknown.
 */

/** True when `read` meets a value that is unknown on this preview. */
export function isUnknown(read: () => unknown): boolean {
  try {
    read();
    return false;
  } catch (e) {
    if (isUnknownValueError(e)) return true;
    throw e;
  }
}

/** The DeclaredDocument that declares `property` of `resource`: same parent, naming it. */
export function declarationOf(resources: readonly PolicyResource[], resource: PolicyResource, property: string): PolicyResource | undefined {
  return resources.find(
    (d) =>
      d.type === DECLARED_DOCUMENT_TYPE &&
      d.props.resource === resource.name &&
      d.props.resourceType === resource.type &&
      d.props.property === property &&
      (d.parent?.urn ?? null) === (resource.parent?.urn ?? null),
  );
}

/**
 * The document a stack rule reads for `resource.props[property]`: the resource's own when known,
 * else its declaration's. Without either, reading it again throws the engine's unknown-value error,
 * so the rule reports that it cannot run on this preview (and `documents-visible-on-preview` fails
 * closed where the pack config makes it mandatory).
 */
export function documentOf(resources: readonly PolicyResource[], resource: PolicyResource, property: string): unknown {
  if (!isUnknown(() => resource.props[property])) return resource.props[property];
  const declared = declarationOf(resources, resource, property);
  if (declared) return declared.props.document;
  return resource.props[property];
}

/** The value `read` returns, as plain data, or undefined when any of it is unknown on this preview. */
export function knownValue(read: () => unknown): { value: unknown } | undefined {
  try {
    return { value: plain(read()) };
  } catch (e) {
    if (isUnknownValueError(e)) return undefined;
    throw e;
  }
}

function plain(value: unknown): unknown {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    // Index access: iterating hands every element over, and an unknown one throws on access.
    for (let i = 0; i < value.length; i += 1) out.push(plain(value[i]));
    return out;
  }
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = plain((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}
/**
 * Whether a declaration stands in for its resource on this preview. Declared and actual documents
 * are built from one value, so the resource's is unknown exactly when the declaration has an
 * unknown leaf; otherwise the resource itself is judged, and judging both would report twice.
 */
export function standsIn(declaredDocument: () => unknown): boolean {
  return knownValue(declaredDocument) === undefined;
}

/** An identity policy a resource rule judges, and how to name it in a message. */
export interface IdentityDocument {
  doc: unknown;
  where: string;
}

const IDENTITY_TYPES = [ROLE, ROLE_POLICY, IAM_POLICY];

/** The resource types whose identity policies the IAM rules judge, a declaration of one included. */
export function carriesIdentityPolicy(type: string, props: Record<string, unknown>): boolean {
  if (IDENTITY_TYPES.includes(type)) return true;
  return type === DECLARED_DOCUMENT_TYPE && props.property === "policy" && IDENTITY_TYPES.includes(String(props.resourceType));
}

/**
 * The identity policies of one resource, for resource rules: a Role's inline policies, a
 * RolePolicy's or Policy's `policy`, a declaration's document. A document unknown on this preview
 * is skipped: its declaration is judged instead, as a resource of its own, and
 * `documents-visible-on-preview` reports one that has none.
 */
export function identityDocuments(type: string, name: string, props: Record<string, unknown>): IdentityDocument[] {
  if (type === DECLARED_DOCUMENT_TYPE) return standsIn(() => props.document) ? [{ doc: props.document, where: `${String(props.resource)} (declared)` }] : [];
  if (type === ROLE) {
    if (isUnknown(() => props.inlinePolicies)) return [];
    return records(props.inlinePolicies).flatMap((p, i) => (isUnknown(() => p.policy) ? [] : [{ doc: p.policy, where: `${name} inlinePolicies[${i}]` }]));
  }
  if (isUnknown(() => props.policy)) return [];
  return [{ doc: props.policy, where: name }];
}

/** Each statement of each identity policy of a resource, with a label naming its document and Sid (or index). */
export function forEachIdentityStatement(
  type: string,
  name: string,
  props: Record<string, unknown>,
  visit: (statement: Record<string, unknown>, label: string) => void,
): void {
  for (const { doc, where } of identityDocuments(type, name, props)) {
    statementRecords(doc).forEach((s, i) => visit(s, `'${where}' ${typeof s.Sid === "string" ? `statement ${s.Sid}` : `Statement[${i}]`}`));
  }
}

/**
 * The container definitions a rule judges on this resource: a task definition's own when known, or
 * the declaration standing in for them on a first preview. `undefined` when the resource is neither,
 * or when its counterpart is the one judged now (so nothing is reported twice).
 */
export function judgedContainerDefinitions(type: string, name: string, props: Record<string, unknown>): { name: string; value: unknown } | undefined {
  const declared = type === DECLARED_DOCUMENT_TYPE && props.resourceType === ECS_TASK_DEFINITION && props.property === "containerDefinitions";
  if (declared) return standsIn(() => props.document) ? { name: `${String(props.resource)} (declared)`, value: props.document } : undefined;
  if (type !== ECS_TASK_DEFINITION || isUnknown(() => props.containerDefinitions)) return undefined;
  return { name, value: props.containerDefinitions };
}

/** Statement records of a document (string or object), Resource and Condition included. */
export function statementRecords(doc: unknown): Array<Record<string, unknown>> {
  let parsed: unknown = doc;
  if (typeof doc === "string") {
    try {
      parsed = JSON.parse(doc);
    } catch {
      return [];
    }
  }
  if (!isRecord(parsed)) return [];
  const s: unknown = parsed.Statement;
  return Array.isArray(s) ? records(s) : isRecord(s) ? [s] : [];
}
