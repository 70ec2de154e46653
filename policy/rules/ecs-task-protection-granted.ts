import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { depsOf, ofType, uniqueByUrn } from "../lib/graph";
import { isRecord, readIfKnown } from "../lib/props";
import { requiredActions, requiredActionsSchema } from "../lib/required-actions";
import { missingActions } from "../lib/roles";
import { documentOf } from "../lib/documents";
import { TASK_PROTECTION_ENV, TASK_PROTECTION_TAG } from "../contract";
import { ECS_TASK_DEFINITION, ROLE } from "../lib/types";
import { containerEnvironment, readContainerDefinitions } from "../lib/ecs-container-definitions";

export const DEFAULT_PROTECTION_ACTIONS = ["ecs:UpdateTaskProtection"];

/**
 * Which marker says this task definition's containers use scale-in protection: the
 * `encache:task-protection` tag (a literal, known on a first preview) or the
 * `ENCACHE_TASK_PROTECTION` env var of a container (read only when known).
 */
export function protectionMarker(resources: readonly PolicyResource[], td: PolicyResource): string | undefined {
  const tags: unknown = td.props.tags;
  if (isRecord(tags) && typeof tags[TASK_PROTECTION_TAG] === "string") return `tag ${TASK_PROTECTION_TAG}`;
  const containers = readIfKnown(() => readContainerDefinitions(documentOf(resources, td, "containerDefinitions"), td.name));
  const marked = (containers ?? []).some((c) => TASK_PROTECTION_ENV in containerEnvironment(c));
  return marked ? `env ${TASK_PROTECTION_ENV}` : undefined;
}

/**
 * A worker that calls the agent's task-protection endpoint without `ecs:UpdateTaskProtection`
 * gets an error it only logs, so scale-in kills it mid-job: the failure the original system was about.
 */
export const ecsTaskProtectionGranted: StackValidationPolicy = {
  name: "ecs-task-protection-granted",
  description:
    "A task definition whose containers use task scale-in protection (tag encache:task-protection or env ENCACHE_TASK_PROTECTION) " +
    "has a task role, in this stack, allowed ecs:UpdateTaskProtection.",
  enforcementLevel: "mandatory",
  configSchema: requiredActionsSchema(DEFAULT_PROTECTION_ACTIONS, "Actions the task role of a protection-using task definition must be allowed."),
  validateStack: (args, reportViolation) => {
    const required = requiredActions(args, DEFAULT_PROTECTION_ACTIONS);
    for (const td of ofType(args.resources, ECS_TASK_DEFINITION)) {
      const marker = protectionMarker(args.resources, td);
      if (!marker) continue;
      const roles = uniqueByUrn(depsOf(td, "taskRoleArn", ROLE));
      if (roles.length === 0) {
        reportViolation(
          `Task definition '${td.name}' uses task scale-in protection (${marker}) but its taskRoleArn is not a Role in this stack; ` +
            `it must grant ${required.join(", ")}.`,
          td.urn,
        );
        continue;
      }
      const missing = missingActions(args.resources, roles, required);
      if (missing.length > 0) {
        reportViolation(
          `Task definition '${td.name}' uses task scale-in protection (${marker}) but task role ` +
            `${roles.map((r) => `'${r.name}'`).join(", ")} is not allowed ${missing.join(", ")}.`,
          td.urn,
        );
      }
    }
  },
};
