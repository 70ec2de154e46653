import type { ResourceValidationPolicy } from "@pulumi/policy";
import { actionPatternMatches, isWildcardAction, policyStatements } from "../lib/iam";
import { isRecord, records, stringList } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";
import { carriesIdentityPolicy, identityDocuments } from "../lib/documents";

export const TERMINATE_ACTION = "ec2:TerminateInstances";
const RESOURCE_TAG_KEY = /^(aws|ec2):ResourceTag\/(.+)$/i;

interface Config {
  tagKeys?: string[];
}

/** The statements of a document as raw records: this rule must read `Condition`, which lib/iam drops. */
function rawStatements(doc: unknown, where: string): Array<Record<string, unknown>> {
  return records(policyStatements(doc, where));
}

/**
 * Whether an Allow statement grants TerminateInstances by name or by a narrower pattern
 * (`ec2:Terminate*`). `*`, `ec2:*` and NotAction grants are left to no-wildcard-iam-actions, which
 * rejects them outright: one fault, one violation.
 */
function grantsTerminate(s: Record<string, unknown>): boolean {
  if (s.Effect !== "Allow" || s.NotAction !== undefined) return false;
  return stringList(s.Action).some((p) => !isWildcardAction(p) && actionPatternMatches(p, TERMINATE_ACTION));
}

/**
 * Operators under which a resource-tag condition actually scopes the grant: the tag must be
 * present with a matching value. `Null` tests presence (and `"true"` means ABSENT), `…IfExists`
 * passes when the tag is missing, negations and `ForAnyValue:`/`ForAllValues:` set operators
 * match (or vacuously pass) on instances without the tag: none of them confine the grant.
 */
const SCOPING_OPERATOR = /^(StringEquals|StringEqualsIgnoreCase|StringLike)$/i;
/** A value made only of IAM wildcards (`*`, `?`) matches any tag value, i.e. any tagged instance. */
const WILDCARD_ONLY = /^[*?]+$/;

/** The condition values, if every one is a non-empty string that is not wildcards only (values are OR-ed). */
function scopingValues(value: unknown): string[] | undefined {
  const values = Array.isArray(value) ? (value as unknown[]) : [value];
  if (values.length === 0) return undefined;
  const ok = values.every((v) => typeof v === "string" && v !== "" && !WILDCARD_ONLY.test(v));
  return ok ? (values as string[]) : undefined;
}

/**
 * Tag keys the statement's Condition requires of the resource (`aws:ResourceTag/<key>`,
 * `ec2:ResourceTag/<key>`) with a value that actually narrows the match, under a scoping operator.
 */
export function resourceTagKeys(condition: unknown): string[] {
  if (!isRecord(condition)) return [];
  const keys: string[] = [];
  for (const [operator, block] of Object.entries(condition)) {
    if (!SCOPING_OPERATOR.test(operator) || !isRecord(block)) continue;
    for (const [key, value] of Object.entries(block)) {
      const m = RESOURCE_TAG_KEY.exec(key);
      if (m && scopingValues(value)) keys.push(m[2]!);
    }
  }
  return keys;
}

/**
 * Terminating an instance is irreversible. A grant of ec2:TerminateInstances must be scoped to the
 * instances the workload owns by a resource-tag condition, so a bug or a bad message can never
 * terminate an instance that is not the fleet's.
 */
export const ec2TerminateTagCondition: ResourceValidationPolicy = {
  name: "ec2-terminate-tag-condition",
  description:
    "Every Allow statement that grants ec2:TerminateInstances (in a Role's inline policies, a RolePolicy or a Policy) " +
    "carries a StringEquals / StringEqualsIgnoreCase / StringLike condition on aws:ResourceTag/<key> (or ec2:ResourceTag/<key>) " +
    "whose value is not wildcards only (Null, IfExists, negated and set operators do not scope).",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      tagKeys: {
        type: "array",
        items: { type: "string" },
        default: [],
        description: "If not empty, the condition must be on one of these tag keys (e.g. runs-fleet:managed).",
      },
    },
  },
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const allowedKeys = stringList(args.getConfig<Config>().tagKeys);
    const props: Record<string, unknown> = args.props;
    const statements = identityDocuments(args.type, args.name, props).flatMap(({ doc, where }) => rawStatements(doc, where));
    statements.forEach((s, i) => {
      if (!grantsTerminate(s)) return;
      const keys = resourceTagKeys(s.Condition);
      const label = typeof s.Sid === "string" ? `statement '${s.Sid}'` : `Statement[${i}]`;
      if (keys.length === 0) {
        reportViolation(
          `'${args.name}' ${label} allows ${TERMINATE_ACTION} without a resource-tag condition that scopes it (StringEquals/StringLike on aws:ResourceTag/<key> with a non-wildcard value).`,
        );
      } else if (allowedKeys.length > 0 && !keys.some((k) => allowedKeys.includes(k))) {
        reportViolation(`'${args.name}' ${label} scopes ${TERMINATE_ACTION} by tag ${keys.join(", ")}, not by one of ${allowedKeys.join(", ")}.`);
      }
    });
  },
};
