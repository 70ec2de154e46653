import type { StackValidationPolicy } from "@pulumi/policy";
import { declarationOf, isUnknown } from "../lib/documents";
import { ECS_TASK_DEFINITION, IAM_POLICY, ROLE_POLICY } from "../lib/types";

/** The JSON-document inputs other rules judge, and those rules. */
const JUDGED: ReadonlyArray<{ type: string; property: string; rules: string }> = [
  {
    type: ROLE_POLICY,
    property: "policy",
    rules:
      "no-wildcard-iam-actions, iam-passrole-scoped, ec2-terminate-tag-condition, ec2-launch-grants-scoped, dlq-consumer-can-start-gpu, ecs-task-protection-granted",
  },
  {
    type: IAM_POLICY,
    property: "policy",
    rules: "no-wildcard-iam-actions, iam-passrole-scoped, ec2-terminate-tag-condition, ec2-launch-grants-scoped, dlq-consumer-can-start-gpu",
  },
  { type: ECS_TASK_DEFINITION, property: "containerDefinitions", rules: "ecs-task-definition-hardened, ecs-task-protection-granted" },
];

/**
 * Fail closed. On a first preview the engine hands every JSON document over as one unknown string
 * whenever anything inside it is unknown, and a rule that reads an unknown value is reported only
 * as advisory, whatever its level. So a document that nobody declared (policy/contract/declarations.ts)
 * is one the rules cannot see: where this rule is mandatory (prod), that blocks the preview instead
 * of letting an unjudged grant through.
 *
 * A Role's inline policies are not judged here: the Role's `inlinePolicies` output is
 * Optional+Computed, unknown on every first preview that leaves it unset, so the output cannot tell
 * a declared policy from none. `role-inline-policies-known` judges the Role's inputs instead.
 */
export const documentsVisibleOnPreview: StackValidationPolicy = {
  name: "documents-visible-on-preview",
  description:
    "Every IAM policy and container definition the rules judge is readable on this preview: known, or declared in a DeclaredDocument " +
    "beside its resource. Mandatory where the pack config says so, this fails closed on a first preview.",
  enforcementLevel: "advisory",
  validateStack: (args, reportViolation) => {
    for (const resource of args.resources) {
      const judged = JUDGED.find((j) => j.type === resource.type);
      if (!judged || !isUnknown(() => resource.props[judged.property])) continue;
      if (declarationOf(args.resources, resource, judged.property)) continue;
      reportViolation(
        `${resource.type.split(":").pop()} '${resource.name}': its ${judged.property} is unknown on this preview (it is built from outputs of ` +
          `resources not created yet) and no DeclaredDocument declares it, so ${judged.rules} cannot judge it. ` +
          "Declare it beside the resource (infra/lib/declared-document.ts), or judge it on a later preview.",
        resource.urn,
      );
    }
  },
};
