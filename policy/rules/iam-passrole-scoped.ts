import type { ResourceValidationPolicy } from "@pulumi/policy";
import { actionPatternMatches, isWildcardAction } from "../lib/iam";
import { isRecord, readIfKnown, stringList, type Props } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";
import { carriesIdentityPolicy, identityDocuments, statementRecords } from "../lib/documents";

interface Config {
  requirePassedToService?: boolean;
}

/** `arn:<partition>:iam::<account>:role/<path/name>` with no wildcard anywhere. */
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;

/** The raw statements of an identity policy, Resource and Condition included (lib/iam drops them on purpose). */
function rawStatements(type: string, name: string, props: Props): Props[] {
  return identityDocuments(type, name, props).flatMap(({ doc }) => statementRecords(doc));
}

/**
 * Allow statements that grant PassRole by name or partial pattern (`iam:Pass*`). `*`, `iam:*` and
 * NotAction also grant it, but no-wildcard-iam-actions already rejects those; reporting them
 * twice would only hide which rule to satisfy.
 */
function grantsPassRole(s: Props): boolean {
  if (s.Effect !== "Allow" || s.NotAction !== undefined) return false;
  return stringList(s.Action).some((p) => !isWildcardAction(p) && actionPatternMatches(p, "iam:PassRole"));
}

/**
 * Literal resources that are not a single role's ARN. A value that is still unknown (a role's
 * ARN output on a first preview) is a concrete ARN once known, so it passes.
 */
function badResources(s: Props): string[] {
  if (s.NotResource !== undefined) return ["NotResource"];
  const raw = readIfKnown(() => s.Resource);
  // Unknown (still an output) passes; absent fails.
  if (raw === undefined) return Object.keys(s).includes("Resource") ? [] : ["(no Resource)"];
  const many = Array.isArray(raw);
  const count = many ? (raw as unknown[]).length : 1;
  const bad: string[] = [];
  // By index, each element on its own: one ARN still unknown must not hide a literal `*` beside it.
  for (let i = 0; i < count; i++) {
    const value = readIfKnown(() => (many ? (raw as unknown[])[i] : raw));
    if (value === undefined) continue;
    if (typeof value !== "string" || !ROLE_ARN.test(value)) bad.push(String(value));
  }
  return bad;
}

function hasPassedToService(s: Props): boolean {
  const condition = readIfKnown(() => s.Condition);
  if (!isRecord(condition)) return false;
  return Object.values(condition).some((block) => isRecord(block) && Object.keys(block).some((k) => k.toLowerCase() === "iam:passedtoservice"));
}

/**
 * PassRole is how a principal lends a role to a service: granted on `*` it lends any role,
 * admin included. Each grant names role ARNs and says which service may receive them.
 */
export const iamPassroleScoped: ResourceValidationPolicy = {
  name: "iam-passrole-scoped",
  description:
    "Allow statements granting iam:PassRole (in a Role's inline policies, a RolePolicy or a Policy) list role ARNs without " +
    "wildcards (never `*`) and carry an iam:PassedToService condition.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      requirePassedToService: {
        type: "boolean",
        default: true,
        description: "Require an iam:PassedToService condition on every PassRole grant.",
      },
    },
  },
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const requireService = args.getConfig<Config>().requirePassedToService !== false;
    rawStatements(args.type, args.name, args.props).forEach((s, i) => {
      if (!grantsPassRole(s)) return;
      const label = typeof s.Sid === "string" ? s.Sid : `Statement[${i}]`;
      for (const bad of badResources(s)) {
        reportViolation(`'${args.name}' ${label} grants iam:PassRole on ${bad}: list the role ARNs to pass, with no wildcard.`);
      }
      if (requireService && !hasPassedToService(s)) {
        reportViolation(`'${args.name}' ${label} grants iam:PassRole without an iam:PassedToService condition: name the service that receives the role.`);
      }
    });
  },
};
