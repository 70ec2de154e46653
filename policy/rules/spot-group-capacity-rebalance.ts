import type { StackValidationPolicy } from "@pulumi/policy";
import { isTrue, spotSources } from "../lib/autoscaling";
import { ofType } from "../lib/graph";
import { readIfKnown } from "../lib/props";
import { AUTOSCALING_GROUP } from "../lib/types";

/**
 * Without Capacity Rebalancing a group replaces a Spot instance only once EC2 has interrupted it
 * (two minutes' notice), so the GPU's in-flight work is lost; with it, the group launches a
 * replacement on the rebalance recommendation, before the interruption.
 */
export const spotGroupCapacityRebalance: StackValidationPolicy = {
  name: "spot-group-capacity-rebalance",
  description:
    "An Auto Scaling group that can run Spot sets capacityRebalance: true. It can run Spot when its mixedInstancesPolicy's " +
    "instancesDistribution.onDemandPercentageAboveBaseCapacity is below 100 (AWS's default when unset is 100), or when a launch " +
    'template it launches from (followed through the graph) sets instanceMarketOptions.marketType "spot".',
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const group of ofType(args.resources, AUTOSCALING_GROUP)) {
      const reasons = spotSources(group);
      if (reasons.length === 0 || isTrue(readIfKnown(() => group.props.capacityRebalance))) continue;
      reportViolation(
        `Auto Scaling group '${group.name}' can run Spot (${reasons.join("; ")}) but does not set capacityRebalance: true, ` +
          "so an interrupted instance is replaced only after its work is lost.",
        group.urn,
      );
    }
  },
};
