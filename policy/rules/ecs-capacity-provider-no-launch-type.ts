import type { ResourceValidationPolicy } from "@pulumi/policy";
import { records } from "../lib/props";
import { ECS_LAUNCHER_TYPES, ecsLaunchSpec } from "./ecs-no-public-ip";

/**
 * ECS rejects a launch type next to a capacity provider strategy, and a launch type cannot
 * choose Fargate Spot: whoever uses capacity providers must leave launchType unset.
 */
export const ecsCapacityProviderNoLaunchType: ResourceValidationPolicy = {
  name: "ecs-capacity-provider-no-launch-type",
  description: "An ECS service, Scheduler ECS target or EventBridge ECS target that sets capacityProviderStrategies sets no launchType.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!(ECS_LAUNCHER_TYPES as readonly string[]).includes(args.type)) args.notApplicable(`applies to ${ECS_LAUNCHER_TYPES.join(", ")}`);
    const spec = ecsLaunchSpec(args.type, args.name, args.props);
    if (!spec) return args.notApplicable("no ECS target");
    const strategies = records(spec.launch.capacityProviderStrategies);
    const launchType: unknown = spec.launch.launchType;
    if (strategies.length > 0 && launchType !== undefined && launchType !== null && launchType !== "") {
      const providers = strategies.map((s) => String(s.capacityProvider)).join(", ");
      reportViolation(`${spec.what} uses capacity providers (${providers}) and launchType '${String(launchType)}': remove launchType.`);
    }
  },
};
