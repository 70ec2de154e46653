import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord, type Props } from "../lib/props";
import { ECS_SERVICE, EVENT_TARGET, SCHEDULE } from "../lib/types";

/**
 * Where a resource declares how ECS tasks are started: an ECS service itself, an EventBridge
 * Scheduler schedule's `target.ecsParameters`, or an EventBridge rule target's `ecsTarget`.
 * Also used by the capacity-provider rule.
 */
export interface EcsLaunchSpec {
  what: string;
  /** The block holding capacityProviderStrategies / launchType. */
  launch: Props;
  /** The awsvpc network block, if any. */
  network: Props | undefined;
}

export const ECS_LAUNCHER_TYPES = [ECS_SERVICE, SCHEDULE, EVENT_TARGET] as const;

export function ecsLaunchSpec(type: string, name: string, props: Props): EcsLaunchSpec | undefined {
  if (type === ECS_SERVICE) {
    return { what: `ECS service '${name}'`, launch: props, network: isRecord(props.networkConfiguration) ? props.networkConfiguration : undefined };
  }
  if (type === SCHEDULE) {
    const target = props.target;
    const ecs = isRecord(target) ? target.ecsParameters : undefined;
    if (!isRecord(ecs)) return undefined;
    return { what: `Schedule '${name}' (ECS target)`, launch: ecs, network: isRecord(ecs.networkConfiguration) ? ecs.networkConfiguration : undefined };
  }
  if (type === EVENT_TARGET) {
    const ecs = props.ecsTarget;
    if (!isRecord(ecs)) return undefined;
    return { what: `Event target '${name}' (ECS target)`, launch: ecs, network: isRecord(ecs.networkConfiguration) ? ecs.networkConfiguration : undefined };
  }
  return undefined;
}

/**
 * Tasks run in private subnets and reach the internet through NAT; a public IP would expose
 * them and bypass that path. Covers ECS services and the ECS targets of Scheduler schedules and
 * EventBridge rules (the launcher Lambda's RunTask is code, checked by its unit tests).
 */
export const ecsNoPublicIp: ResourceValidationPolicy = {
  name: "ecs-no-public-ip",
  description:
    "ECS services (networkConfiguration.assignPublicIp), Scheduler ECS targets (target.ecsParameters.networkConfiguration) and " +
    "EventBridge ECS targets (ecsTarget.networkConfiguration) set assignPublicIp to false explicitly.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!(ECS_LAUNCHER_TYPES as readonly string[]).includes(args.type)) args.notApplicable(`applies to ${ECS_LAUNCHER_TYPES.join(", ")}`);
    const spec = ecsLaunchSpec(args.type, args.name, args.props);
    if (!spec) return args.notApplicable("no ECS target");
    if (!spec.network) {
      // Only awsvpc tasks have ENIs; a service without a network block is bridge/host mode on EC2.
      if (args.type !== ECS_SERVICE) reportViolation(`${spec.what} has no networkConfiguration: set subnets, security groups and assignPublicIp: false.`);
      return;
    }
    if (spec.network.assignPublicIp !== false) {
      reportViolation(`${spec.what} must set networkConfiguration.assignPublicIp: false explicitly (tasks run in private subnets behind NAT).`);
    }
  },
};
