import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { EC2_INSTANCE, LAUNCH_TEMPLATE } from "../lib/types";

/**
 * The stack dashboard graphs the GPU's CPU in 60-second periods (infra/components/platform-dashboard.ts),
 * and the GPU's idle stop and the pool's instances are judged from the same metrics: with basic
 * monitoring EC2 publishes every 5 minutes, so the graph would show gaps and the numbers would lag.
 * Pulumi's AWS pack (`@pulumi/awsguard`) holds the same for instances under this name; a launch
 * template's `monitoring.enabled` is the same switch for every instance launched from it (the warm
 * pool's), so it is held here too. Judged on inputs: both are literals the program sets.
 */
export const ec2InstanceDetailedMonitoringEnabled: ResourceValidationPolicy = {
  name: "ec2-instance-detailed-monitoring-enabled",
  description: "EC2 instances enable detailed monitoring (monitoring = true), and launch templates enable it for what they launch (monitoring.enabled = true).",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== EC2_INSTANCE && args.type !== LAUNCH_TEMPLATE) args.notApplicable(`applies to ${EC2_INSTANCE} and ${LAUNCH_TEMPLATE}`);
    const monitoring: unknown = args.props.monitoring;
    if (args.type === EC2_INSTANCE && monitoring !== true) {
      reportViolation(
        `Instance '${args.name}' must enable detailed monitoring: set monitoring to true (1-minute CloudWatch metrics; the dashboard and the idle stop read them).`,
      );
    }
    if (args.type === LAUNCH_TEMPLATE && !(isRecord(monitoring) && (monitoring.enabled === true || monitoring.enabled === "true"))) {
      reportViolation(
        `Launch template '${args.name}' must enable detailed monitoring: set monitoring.enabled to true (1-minute CloudWatch metrics for every instance it launches).`,
      );
    }
  },
};
