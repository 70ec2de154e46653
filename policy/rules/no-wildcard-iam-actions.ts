import type { ResourceValidationPolicy } from "@pulumi/policy";
import { ActionStatement, readPolicyDocument, wildcardGrants } from "../lib/iam";
import { records, stringList } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";

interface Config {
  allowedWildcards?: string[];
}

/** Identity-policy statements of the resource; trust (assume-role) policies are resource policies and exempt. */
function identityStatements(type: string, name: string, props: Record<string, unknown>): ActionStatement[] {
  if (type === ROLE) {
    return records(props.inlinePolicies).flatMap((p, i) => readPolicyDocument(p.policy, `${name} inlinePolicies[${i}]`));
  }
  return readPolicyDocument(props.policy, name);
}

/** Least privilege: each role lists the actions its function calls, never a whole service. */
export const noWildcardIamActions: ResourceValidationPolicy = {
  name: "no-wildcard-iam-actions",
  description:
    "No Allow statement in a Role's inline policies, a RolePolicy or a Policy grants `*`, `service:*` or uses NotAction.",
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
    if (args.type !== ROLE && args.type !== ROLE_POLICY && args.type !== IAM_POLICY) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY} and ${IAM_POLICY}`);
    }
    const exempt = stringList(args.getConfig<Config>().allowedWildcards);
    const props: Record<string, unknown> = args.props;
    for (const grant of wildcardGrants(identityStatements(args.type, args.name, props), exempt)) {
      reportViolation(`'${args.name}' allows wildcard action ${grant}; list the actions the workload calls.`);
    }
  },
};
