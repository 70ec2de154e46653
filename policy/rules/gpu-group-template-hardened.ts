import type { StackValidationPolicy } from "@pulumi/policy";
import { groupLaunchTemplates } from "../lib/autoscaling";
import { ofType } from "../lib/graph";
import { AUTOSCALING_GROUP } from "../lib/types";

/**
 * A group's instances are launched by Auto Scaling, not reviewed by anyone: their hardening lives
 * in the launch template, and launch-template-hardened can hold only a template this stack declares.
 */
export const gpuGroupTemplateHardened: StackValidationPolicy = {
  name: "gpu-group-template-hardened",
  description:
    "Every Auto Scaling group launches from a LaunchTemplate declared in this stack (launchTemplate.id / name, or " +
    "mixedInstancesPolicy.launchTemplate.launchTemplateSpecification.launchTemplateId, derived from it), so that " +
    "launch-template-hardened holds what the group launches; a template from outside the stack, or a launch configuration, is a violation.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const group of ofType(args.resources, AUTOSCALING_GROUP)) {
      if (groupLaunchTemplates(group).length > 0) continue;
      reportViolation(
        `Auto Scaling group '${group.name}' launches from no LaunchTemplate in this stack: its launchTemplate (or its ` +
          "mixedInstancesPolicy's launchTemplateSpecification) is not derived from one, so launch-template-hardened cannot " +
          "check what it launches. Declare the template in the stack and pass its id.",
        group.urn,
      );
    }
  },
};
