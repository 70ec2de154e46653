import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { depsOf, dlqUrns, ofType, uniqueByUrn } from "../lib/graph";
import { actionListProperty, configuredActions, requiredActions } from "../lib/required-actions";
import { missingActions } from "../lib/roles";
import { AUTOSCALING_GROUP, EVENT_SOURCE_MAPPING, FUNCTION, QUEUE, ROLE } from "../lib/types";

/** Instance mode: start the GPU instance and see it come up. */
export const DEFAULT_REQUIRED_ACTIONS = ["ec2:StartInstances", "ec2:DescribeInstances"];
/** Fleet mode (issue 27): raise the GPU group's desired capacity and see it in service. */
export const DEFAULT_FLEET_REQUIRED_ACTIONS = ["autoscaling:SetDesiredCapacity", "autoscaling:DescribeAutoScalingGroups"];

/**
 * The DLQ consumer's job is to wake the GPU so parked work can be replayed; without these grants
 * it fails only at runtime, when the queue is already backing up. The GPU is either one instance
 * (start it) or, in fleet mode, an Auto Scaling group (raise its desired capacity): a consumer
 * passes with either form's grants, the fleet form only where the stack declares a group to raise.
 */
export const dlqConsumerCanStartGpu: StackValidationPolicy = {
  name: "dlq-consumer-can-start-gpu",
  description:
    "A Lambda consuming a dead-letter queue must be allowed (inline or attached policy) either the instance form, " +
    "ec2:StartInstances and ec2:DescribeInstances (requiredActions), or the fleet form, autoscaling:SetDesiredCapacity and " +
    "autoscaling:DescribeAutoScalingGroups (fleetRequiredActions), the latter only when the stack declares an " +
    "aws:autoscaling/group:Group, so it can start the GPU.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      requiredActions: actionListProperty(DEFAULT_REQUIRED_ACTIONS, "Actions a DLQ consumer's role must be granted to start the GPU instance (instance form)."),
      fleetRequiredActions: actionListProperty(
        DEFAULT_FLEET_REQUIRED_ACTIONS,
        "Actions that, granted instead, let a DLQ consumer start the GPU fleet (fleet form), when the stack declares an Auto Scaling group.",
      ),
    },
  },
  validateStack: (args, reportViolation) => {
    const required = requiredActions(args, DEFAULT_REQUIRED_ACTIONS);
    const fleetRequired = configuredActions(args, "fleetRequiredActions", DEFAULT_FLEET_REQUIRED_ACTIONS);
    const hasGroup = ofType(args.resources, AUTOSCALING_GROUP).length > 0;
    const forms = `the instance form (${required.join(", ")}) or the fleet form (${fleetRequired.join(", ")}, with an ${AUTOSCALING_GROUP} in the stack)`;
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
        reportViolation(`DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) has a role that is not a Role in this stack; cannot verify ${forms}.`, fn.urn);
        continue;
      }
      const missing = missingActions(args.resources, roles, required);
      if (missing.length === 0) continue;
      const fleetMissing = missingActions(args.resources, roles, fleetRequired);
      if (fleetMissing.length === 0 && hasGroup) continue;
      const fleet =
        fleetMissing.length > 0
          ? `not allowed ${fleetMissing.join(", ")}${hasGroup ? "" : `, and the stack declares no ${AUTOSCALING_GROUP}`}`
          : `granted, but the stack declares no ${AUTOSCALING_GROUP} to raise`;
      reportViolation(
        `DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) cannot start the GPU: role ` +
          `${roles.map((r) => `'${r.name}'`).join(", ")} passes neither form. Instance form (${required.join(", ")}): ` +
          `not allowed ${missing.join(", ")}. Fleet form (${fleetRequired.join(", ")}): ${fleet}.`,
        fn.urn,
      );
    }
  },
};
