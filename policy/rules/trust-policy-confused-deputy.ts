import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isUnknown, statementRecords } from "../lib/documents";
import { isRecord, stringList } from "../lib/props";
import { ROLE } from "../lib/types";

interface Config {
  services?: string[];
}

/** Services for which AWS documents aws:SourceAccount and aws:SourceArn on the role's trust policy. */
export const GUARDED_SERVICES = ["ecs-tasks.amazonaws.com", "scheduler.amazonaws.com"];

const ACCOUNT_OPERATORS = ["StringEquals", "StringLike"];
const ARN_OPERATORS = ["ArnEquals", "ArnLike", "StringEquals", "StringLike"];

function conditionKeys(condition: unknown, operators: readonly string[]): string[] {
  if (!isRecord(condition)) return [];
  return operators.flatMap((op) => (isRecord(condition[op]) ? Object.keys(condition[op] as object).map((k) => k.toLowerCase()) : []));
}

/**
 * The confused deputy: a service that assumes roles for many customers can be tricked into using
 * this stack's role on someone else's behalf unless the trust policy pins the caller's account and
 * resource. Only where AWS documents the condition for the service (config `services`): one the
 * service does not set would break the role silently.
 */
export const trustPolicyConfusedDeputy: ResourceValidationPolicy = {
  name: "trust-policy-confused-deputy",
  description:
    "A role that ECS tasks or EventBridge Scheduler assume (config services) carries aws:SourceAccount and aws:SourceArn conditions in its trust policy.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      services: { type: "array", items: { type: "string" }, default: GUARDED_SERVICES, description: "Service principals whose trust must be pinned." },
    },
  },
  validateResource: (args, reportViolation) => {
    if (args.type !== ROLE) args.notApplicable(`applies to ${ROLE}`);
    const props: Record<string, unknown> = args.props;
    // Built from invokes only, so known on every preview; unknown would mean a program of another shape.
    if (isUnknown(() => props.assumeRolePolicy)) return;
    const services = stringList(args.getConfig<Config>().services);
    statementRecords(props.assumeRolePolicy).forEach((s, i) => {
      if (s.Effect !== "Allow") return;
      const principal = isRecord(s.Principal) ? stringList(s.Principal.Service) : [];
      const guarded = principal.filter((p) => services.includes(p));
      if (guarded.length === 0) return;
      const missing = [
        conditionKeys(s.Condition, ACCOUNT_OPERATORS).includes("aws:sourceaccount") ? null : "aws:SourceAccount",
        conditionKeys(s.Condition, ARN_OPERATORS).includes("aws:sourcearn") ? null : "aws:SourceArn",
      ].filter((k): k is string => k !== null);
      if (missing.length > 0) {
        reportViolation(
          `Role '${args.name}' trusts ${guarded.join(", ")} (statement ${typeof s.Sid === "string" ? s.Sid : i}) without ${missing.join(" and ")}: pin the account and the source, as AWS documents for the service.`,
        );
      }
    });
  },
};
