import type * as aws from "@pulumi/aws";
import type * as pulumi from "@pulumi/pulumi";
import { declare } from "../lib/declared-document";
import { policyDocument, type Statement } from "./document";

export const ROLE_POLICY_TYPE = "aws:iam/rolePolicy:RolePolicy";
export const MANAGED_POLICY_TYPE = "aws:iam/policy:Policy";

/**
 * The identity policy of the RolePolicy or Policy `resource` (created by the caller under `parent`),
 * declared beside it so the policy pack can judge it on a first preview, when the engine sees the
 * resource's own `policy` only as an unknown string (policy/contract/declarations.ts).
 */
export function declaredPolicy(
  statements: Statement[],
  target: { resource: string; resourceType: typeof ROLE_POLICY_TYPE | typeof MANAGED_POLICY_TYPE; parent: pulumi.Resource },
): aws.types.input.iam.PolicyDocument {
  return declare(policyDocument(statements), { ...target, property: "policy" });
}
