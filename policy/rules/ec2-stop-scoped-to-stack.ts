import type { ResourceValidationPolicy } from "@pulumi/policy";
import { ENVIRONMENT_TAG } from "../contract";
import { carriesIdentityPolicy, identityDocuments } from "../lib/documents";
import { actionPatternMatches, isWildcardAction, policyStatements } from "../lib/iam";
import { records, stringList } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";
import { resourceTagKeys } from "./ec2-terminate-tag-condition";

export const STOP_ACTION = "ec2:StopInstances";

interface Config {
  tagKeys?: string[];
}

/**
 * Stopping is cheap to undo but not free: a stopped GPU loses its instance-store disk and whatever
 * it was doing. A function that can stop instances may stop only its own stack's, so every grant of
 * ec2:StopInstances carries a resource-tag condition on each of `tagKeys` (by default the stack's
 * environment tag), with a value that narrows the match. `*`, `ec2:*` and NotAction grants are
 * no-wildcard-iam-actions' to reject.
 */
export const ec2StopScopedToStack: ResourceValidationPolicy = {
  name: "ec2-stop-scoped-to-stack",
  description: `Every Allow statement that grants ec2:StopInstances carries a StringEquals/StringLike condition on aws:ResourceTag/<key> for each of tagKeys (default ${ENVIRONMENT_TAG}), whose value is not wildcards only.`,
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      tagKeys: {
        type: "array",
        items: { type: "string" },
        default: [ENVIRONMENT_TAG],
        description: "Tag keys every StopInstances grant must be conditioned on.",
      },
    },
  },
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const required = stringList(args.getConfig<Config>().tagKeys);
    const wanted = required.length > 0 ? required : [ENVIRONMENT_TAG];
    const props: Record<string, unknown> = args.props;
    identityDocuments(args.type, args.name, props).forEach(({ doc, where }) => {
      records(policyStatements(doc, where)).forEach((s, i) => {
        if (s.Effect !== "Allow" || s.NotAction !== undefined) return;
        if (!stringList(s.Action).some((p) => !isWildcardAction(p) && actionPatternMatches(p, STOP_ACTION))) return;
        const missing = wanted.filter((k) => !resourceTagKeys(s.Condition).includes(k));
        const label = typeof s.Sid === "string" ? `statement '${s.Sid}'` : `Statement[${i}]`;
        if (missing.length > 0)
          reportViolation(
            `'${where}' ${label} allows ${STOP_ACTION} without a condition on aws:ResourceTag/${missing.join(", aws:ResourceTag/")}: it could stop another stack's instances.`,
          );
      });
    });
  },
};
