import type { ResourceValidationPolicy } from "@pulumi/policy";
import { carriesIdentityPolicy, forEachIdentityStatement } from "../lib/documents";
import { readIfKnown } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";

/** The account field of an ARN, or undefined for what is not an ARN. */
function accountOf(arn: string): string | undefined {
  const parts = arn.split(":");
  return parts[0] === "arn" && parts.length >= 6 ? parts[4] : undefined;
}

/**
 * An ARN with `*` for its account matches that resource in every account, including another
 * stack's or another tenant's where a resource policy lets the role in. Resources that belong to no
 * account (an AMI, a public SSM parameter, an S3 bucket) have an empty account field, which is fine.
 */
export const iamArnsNameAccount: ResourceValidationPolicy = {
  name: "iam-arns-name-account",
  description: "Every Resource ARN in an identity policy names its account (the account field is never a wildcard).",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    forEachIdentityStatement(args.type, args.name, args.props, (s, label) => {
      const resource = readIfKnown(() => s.Resource);
      const list: unknown[] = Array.isArray(resource) ? resource : resource === undefined ? [] : [resource];
      for (let j = 0; j < list.length; j += 1) {
        // An unknown ARN is an output of a declared resource, with that resource's own account.
        const arn = readIfKnown(() => list[j]);
        if (typeof arn !== "string") continue;
        const account = accountOf(arn);
        if (account !== undefined && account.includes("*")) reportViolation(`${label} grants on ${arn}, in any account: name the account.`);
      }
    });
  },
};
