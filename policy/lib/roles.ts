import type { PolicyResource } from "@pulumi/policy";
import { dependsOnVia, depsOf, ofType } from "./graph";
import { ActionStatement, isActionAllowed, readPolicyDocument } from "./iam";
import { documentOf } from "./documents";
import { isRecord, readIfKnown } from "./props";
import { IAM_POLICY, ROLE_POLICY, ROLE_POLICY_ATTACHMENT } from "./types";

/**
 * Every statement that applies to a role and that this stack declares: the role's own
 * inlinePolicies, RolePolicy resources, and customer-managed Policies attached through
 * RolePolicyAttachment. Attachments of policies outside the stack (AWS-managed ARNs) cannot be
 * read and contribute nothing.
 *
 * `inlinePolicies` is an Optional+Computed output: unknown on a first preview when the program sets
 * none, and after a refresh a list of every inline policy of the role (the RolePolicy documents
 * read below included, which only repeats a grant). It is read element by element through
 * readIfKnown: an unknown list or document adds nothing, so a rule that needs a grant fails closed
 * rather than passing on a policy nobody can read (role-inline-policies-known reports those).
 */
export function roleStatements(resources: readonly PolicyResource[], role: PolicyResource): ActionStatement[] {
  const statements: ActionStatement[] = [];
  const inline = readIfKnown(() => role.props.inlinePolicies);
  const count = Array.isArray(inline) ? inline.length : 0;
  for (let i = 0; i < count; i += 1) {
    const policy = readIfKnown(() => {
      const p: unknown = (inline as unknown[])[i];
      return isRecord(p) ? p.policy : undefined;
    });
    if (policy !== undefined) statements.push(...readPolicyDocument(policy, `${role.name} inlinePolicies[${i}]`));
  }
  // A policy unknown on a first preview is read from its declaration (lib/documents.ts).
  for (const rp of ofType(resources, ROLE_POLICY)) {
    if (dependsOnVia(rp, "role", role)) statements.push(...readPolicyDocument(documentOf(resources, rp, "policy"), rp.name));
  }
  for (const att of ofType(resources, ROLE_POLICY_ATTACHMENT)) {
    if (!dependsOnVia(att, "role", role)) continue;
    for (const policy of depsOf(att, "policyArn", IAM_POLICY)) {
      statements.push(...readPolicyDocument(documentOf(resources, policy, "policy"), policy.name));
    }
  }
  return statements;
}

/** Which of `required` none of the roles' statements allows. */
export function missingActions(resources: readonly PolicyResource[], roles: readonly PolicyResource[], required: readonly string[]): string[] {
  const statements = roles.flatMap((role) => roleStatements(resources, role));
  return required.filter((action) => !isActionAllowed(statements, action));
}
