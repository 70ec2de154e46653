import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isUnknown } from "../lib/documents";
import { records } from "../lib/props";
import { ROLE } from "../lib/types";

/**
 * Fail closed on a Role's inline policies. Unlike a RolePolicy's document, an inline policy cannot
 * be declared beside its resource (policy/contract/declarations.ts), so one built from outputs not
 * yet known is a grant no IAM rule can judge on a first preview. Judged on the Role's inputs, what
 * the program declares: the `inlinePolicies` output is Optional+Computed, unknown on a first preview
 * whenever the program leaves it unset, and after a refresh it lists every inline policy of the
 * role, its RolePolicy resources' included, so the output cannot tell a declared grant from one
 * nobody declared. Mandatory where the pack config makes documents-visible-on-preview mandatory.
 */
export const roleInlinePoliciesKnown: ResourceValidationPolicy = {
  name: "role-inline-policies-known",
  description:
    "A Role's inline policies (inlinePolicies input) are known on this preview; one built from unknown outputs cannot be declared, so the IAM rules could not judge it. " +
    "Use a RolePolicy with a DeclaredDocument instead.",
  enforcementLevel: "advisory",
  validateResource: (args, reportViolation) => {
    if (args.type !== ROLE) args.notApplicable(`applies to ${ROLE}`);
    if (isUnknown(() => args.props.inlinePolicies)) {
      reportViolation(
        `Role '${args.name}' declares inline policies that are unknown on this preview, and inline policies cannot be declared: use a RolePolicy with a DeclaredDocument.`,
      );
      return;
    }
    records(args.props.inlinePolicies).forEach((p, i) => {
      if (isUnknown(() => p.policy)) {
        reportViolation(
          `Role '${args.name}' inlinePolicies[${i}] has a document unknown on this preview, and inline policies cannot be declared: use a RolePolicy with a DeclaredDocument.`,
        );
      }
    });
  },
};
