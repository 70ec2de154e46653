import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { depsOf, dlqUrns, ofType, uniqueByUrn } from "../lib/graph";
import { requiredActions, requiredActionsSchema } from "../lib/required-actions";
import { missingActions } from "../lib/roles";
import { EVENT_SOURCE_MAPPING, FUNCTION, QUEUE, ROLE } from "../lib/types";

export const DEFAULT_REQUIRED_ACTIONS = ["ec2:StartInstances", "ec2:DescribeInstances"];

/**
 * The DLQ consumer's job is to wake the GPU instance so parked work can be replayed; without
 * these grants it fails only at runtime, when the queue is already backing up.
 */
export const dlqConsumerCanStartGpu: StackValidationPolicy = {
  name: "dlq-consumer-can-start-gpu",
  description:
    "A Lambda consuming a dead-letter queue must be allowed ec2:StartInstances and ec2:DescribeInstances " +
    "(inline or attached policy) so it can start the GPU instance.",
  enforcementLevel: "mandatory",
  configSchema: requiredActionsSchema(DEFAULT_REQUIRED_ACTIONS, "Actions a DLQ consumer's role must be granted."),
  validateStack: (args, reportViolation) => {
    const required = requiredActions(args, DEFAULT_REQUIRED_ACTIONS);
    const dlqs = dlqUrns(args.resources);

    const consumers = new Map<string, { fn: PolicyResource; queues: string[] }>();
    for (const mapping of ofType(args.resources, EVENT_SOURCE_MAPPING)) {
      const queues = depsOf(mapping, "eventSourceArn", QUEUE).filter((q) => dlqs.has(q.urn));
      if (queues.length === 0) continue;
      const fns = depsOf(mapping, "functionName", FUNCTION);
      if (fns.length === 0) {
        reportViolation(
          `Event source mapping '${mapping.name}' reads DLQ '${queues[0].name}' but its functionName is not ` +
            "derived from a Function in this stack, so its permissions cannot be checked.",
          mapping.urn,
        );
        continue;
      }
      for (const fn of fns) {
        const entry = consumers.get(fn.urn) ?? { fn, queues: [] };
        entry.queues.push(...queues.map((q) => q.name));
        consumers.set(fn.urn, entry);
      }
    }

    for (const { fn, queues } of consumers.values()) {
      const roles = uniqueByUrn(depsOf(fn, "role", ROLE));
      if (roles.length === 0) {
        reportViolation(
          `DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) has a role that is not a Role in this stack; ` + `cannot verify ${required.join(", ")}.`,
          fn.urn,
        );
        continue;
      }
      const missing = missingActions(args.resources, roles, required);
      if (missing.length > 0) {
        reportViolation(
          `DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) cannot start the GPU instance: role ` +
            `${roles.map((r) => `'${r.name}'`).join(", ")} is not allowed ${missing.join(", ")}.`,
          fn.urn,
        );
      }
    }
  },
};
