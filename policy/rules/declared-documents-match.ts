import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { DECLARED_DOCUMENT_TYPE } from "../contract";
import { knownValue } from "../lib/documents";
import { canonicalPolicy, reduceContainerDefinitions } from "../lib/provider-normal-form";

/** A document as data: a JSON string is parsed (the provider's Check hands documents over as strings). */
function asData(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * Whether `actual` says everything `declared` says: the same values at every declared key, lists of
 * the same length element by element. Keys only `actual` has are allowed: for container definitions
 * the provider stores what ECS returns, with its defaults filled in (`cpu: 0`, `portMappings: []`,
 * `volumesFrom: []`…), so a stack's state never equals the program's document to the letter.
 */
export function saysAllOf(actual: unknown, declared: unknown): boolean {
  if (Array.isArray(declared)) return Array.isArray(actual) && actual.length === declared.length && declared.every((d, i) => saysAllOf(actual[i], d));
  if (typeof declared === "object" && declared !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return false;
    return Object.entries(declared).every(([k, v]) => saysAllOf((actual as Record<string, unknown>)[k], v));
  }
  return actual === declared;
}

/**
 * Compared as the provider compares them (lib/provider-normal-form.ts), so the gate agrees with the
 * provider's own diff. Container definitions: both sides reduced as `containerDefinitionsAreEquivalent`
 * does (containers, environment and secrets in byte order by name, empty lists absent, ECS's
 * defaults), then the stored side must say all the declaration says (saysAllOf): the provider
 * stores what ECS returns, defaults filled in. IAM documents: equal as grants, lists AWS treats as
 * sets compared as sets; a key the declaration lacks (a NotResource, a second Action) would be a
 * grant the rules never judged, so it is a difference.
 */
function matches(property: string, actual: unknown, declared: unknown, isAwsVpc: boolean): boolean {
  if (property === "containerDefinitions") {
    if (!Array.isArray(actual) || !Array.isArray(declared)) return false;
    return saysAllOf(reduceContainerDefinitions(actual, isAwsVpc), reduceContainerDefinitions(declared, isAwsVpc));
  }
  return JSON.stringify(canonicalPolicy(actual)) === JSON.stringify(canonicalPolicy(declared));
}

function sibling(resources: readonly PolicyResource[], d: PolicyResource): PolicyResource | undefined {
  return resources.find(
    (r) =>
      r.type !== DECLARED_DOCUMENT_TYPE &&
      r.name === d.props.resource &&
      r.type === d.props.resourceType &&
      (r.parent?.urn ?? null) === (d.parent?.urn ?? null),
  );
}

/**
 * The declarations the rules judge on a first preview must be what is deployed. Once both are known
 * (a later preview, and at `up` before anything is created or updated), each declared document must
 * equal its resource's input, or a grant could pass the gate on its declaration and differ in AWS.
 */
export const declaredDocumentsMatch: StackValidationPolicy = {
  name: "declared-documents-match",
  description: "Each DeclaredDocument names a sibling resource, and, once both are known, equals that resource's document.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const d of args.resources.filter((r) => r.type === DECLARED_DOCUMENT_TYPE)) {
      const property = String(d.props.property);
      const target = sibling(args.resources, d);
      if (!target) {
        reportViolation(
          `DeclaredDocument '${d.name}' declares ${property} of ${String(d.props.resourceType)} '${String(d.props.resource)}', which this stack does not have beside it.`,
          d.urn,
        );
        continue;
      }
      // Nothing to compare until both are known: the declaration is what the rules judged meanwhile.
      const declared = knownValue(() => d.props.document);
      const actual = knownValue(() => asData(target.props[property]));
      if (!declared || !actual || actual.value === undefined) continue;
      const networkMode = knownValue(() => target.props.networkMode);
      const isAwsVpc = networkMode !== undefined && networkMode.value === "awsvpc";
      if (!matches(property, actual.value, declared.value, isAwsVpc)) {
        reportViolation(
          `${target.type.split(":").pop()} '${target.name}': its ${property} differs from its declaration '${d.name}', which the rules judged on the first preview. ` +
            "Build both from one value (infra/iam/declared.ts, infra/lib/declared-document.ts).",
          target.urn,
        );
      }
    }
  },
};
