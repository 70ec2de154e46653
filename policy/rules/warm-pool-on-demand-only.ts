import type { StackValidationPolicy } from "@pulumi/policy";
import { groupLaunchTemplates, mixedInstancesPolicy, requestsSpot } from "../lib/autoscaling";
import { ofType } from "../lib/graph";
import { isRecord, readIfKnown } from "../lib/props";
import { AUTOSCALING_GROUP } from "../lib/types";

/**
 * EC2 Auto Scaling documents that a warm pool cannot go on such a group: the PutWarmPool API
 * reference said "This operation cannot be called on an Auto Scaling group that has a mixed
 * instances policy or a launch template or launch configuration that requests Spot Instances", and
 * issue 27 cites the user guide's "Warm pools" limitations: "You can't add a warm pool to Auto
 * Scaling groups that have a mixed instances policy or that launch Spot Instances". A deployment
 * would fail half-way, after the group exists.
 *
 * To revisit: AWS announced warm pool support for groups with mixed instances policies in November
 * 2025 (What's New, "ec2-auto-scaling-warm-pool-mixed-instances-policies"; kops lifted its own check
 * in kubernetes/kops#17800), and the PutWarmPool text in @aws-sdk/client-auto-scaling 3.1169 no
 * longer carries the sentence above. Until the Spot part is confirmed, the rule keeps both halves.
 */
export const warmPoolOnDemandOnly: StackValidationPolicy = {
  name: "warm-pool-on-demand-only",
  description:
    "An Auto Scaling group with a warmPool has no mixedInstancesPolicy, and no launch template it launches from (followed " +
    'through the graph) sets instanceMarketOptions.marketType "spot": EC2 Auto Scaling documents that a warm pool cannot be ' +
    "added to a group that has a mixed instances policy or that launches Spot Instances (user guide, Warm pools limitations; " +
    "PutWarmPool API reference), so the deployment would fail once the group exists.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const group of ofType(args.resources, AUTOSCALING_GROUP)) {
      if (!isRecord(readIfKnown((): unknown => group.props.warmPool))) continue;
      const reasons: string[] = [];
      if (mixedInstancesPolicy(group)) reasons.push("it has a mixedInstancesPolicy");
      for (const template of groupLaunchTemplates(group)) {
        if (requestsSpot(template)) reasons.push(`its launch template '${template.name}' requests Spot (instanceMarketOptions.marketType "spot")`);
      }
      if (reasons.length > 0) {
        reportViolation(
          `Auto Scaling group '${group.name}' has a warmPool, but ${reasons.join(" and ")}: AWS refuses a warm pool on a group ` +
            "with a mixed instances policy or that launches Spot Instances. Drop the warm pool, or launch On-Demand from a single template.",
          group.urn,
        );
      }
    }
  },
};
