import type { ResourceValidationPolicy } from "@pulumi/policy";
import { ActionStatement, readPolicyDocument, wildcardGrants } from "../lib/iam";
import { stringList } from "../lib/props";
import { carriesIdentityPolicy, identityDocuments } from "../lib/documents";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";

interface Config {
  allowedWildcards?: string[];
}

/** Identity-policy statements of the resource; trust (assume-role) policies are resource policies and exempt. */
function identityStatements(type: string, name: string, props: Record<string, unknown>): ActionStatement[] {
  return identityDocuments(type, name, props).flatMap(({ doc, where }) => readPolicyDocument(doc, where));
}

/** Least privilege: each role lists the actions its function calls, never a whole service. */
export const noWildcardIamActions: ResourceValidationPolicy = {
  name: "no-wildcard-iam-actions",
  description: "No Allow statement in a Role's inline policies, a RolePolicy or a Policy grants `*`, `service:*` or uses NotAction.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      allowedWildcards: {
        type: "array",
        items: { type: "string" },
        default: [],
        description: "Wildcard actions accepted anyway (e.g. `logs:*` for a break-glass role).",
      },
    },
  },
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const exempt = stringList(args.getConfig<Config>().allowedWildcards);
    const props: Record<string, unknown> = args.props;
    for (const grant of wildcardGrants(identityStatements(args.type, args.name, props), exempt)) {
      reportViolation(`'${args.name}' allows wildcard action ${grant}; list the actions the workload calls.`);
    }
  },
};
