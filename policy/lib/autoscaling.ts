import type { PolicyResource } from "@pulumi/policy";
import { depsOf, uniqueByUrn } from "./graph";
import { isRecord, numberOr, readIfKnown, type Props } from "./props";
import { ASG_DEFAULT_ON_DEMAND_PERCENTAGE, LAUNCH_TEMPLATE } from "./types";

/**
 * What an Auto Scaling group launches from, read from its outputs (what stack rules see).
 *
 * `launchTemplate` and `mixedInstancesPolicy` are Optional+Computed: on a first preview the one the
 * program leaves unset is unknown as a whole (policy/testing/provider-model.ts), and so is an
 * unset `instancesDistribution` inside a mixed instances policy. A whole block is unknown only
 * when unset (an input built from an output is unknown leaf by leaf), so these helpers read an
 * unknown block as absent, which is what AWS then applies.
 */

/** The launch templates of this stack that a group launches from: the edges of `launchTemplate` (its id or name) and of `mixedInstancesPolicy` (the template specification and any override's). */
export function groupLaunchTemplates(group: PolicyResource): PolicyResource[] {
  return uniqueByUrn([...depsOf(group, "launchTemplate", LAUNCH_TEMPLATE), ...depsOf(group, "mixedInstancesPolicy", LAUNCH_TEMPLATE)]);
}

/** The group's mixed instances policy, when it declares one. */
export function mixedInstancesPolicy(group: PolicyResource): Props | undefined {
  const policy = readIfKnown((): unknown => group.props.mixedInstancesPolicy);
  return isRecord(policy) ? policy : undefined;
}

/** instancesDistribution.onDemandPercentageAboveBaseCapacity, AWS's default (100) when unset. */
export function onDemandPercentage(policy: Props): number {
  const distribution = readIfKnown(() => policy.instancesDistribution);
  if (!isRecord(distribution)) return ASG_DEFAULT_ON_DEMAND_PERCENTAGE;
  return numberOr(
    readIfKnown(() => distribution.onDemandPercentageAboveBaseCapacity),
    ASG_DEFAULT_ON_DEMAND_PERCENTAGE,
  );
}

/** True when a launch template asks for Spot (instanceMarketOptions.marketType "spot"). */
export function requestsSpot(template: PolicyResource): boolean {
  const options = readIfKnown((): unknown => template.props.instanceMarketOptions);
  if (!isRecord(options)) return false;
  const market = readIfKnown(() => options.marketType);
  return typeof market === "string" && market.toLowerCase() === "spot";
}

/** Why a group can launch Spot instances: one reason per source, none when it runs On-Demand only. */
export function spotSources(group: PolicyResource): string[] {
  const reasons: string[] = [];
  const mixed = mixedInstancesPolicy(group);
  if (mixed) {
    const percentage = onDemandPercentage(mixed);
    if (percentage < ASG_DEFAULT_ON_DEMAND_PERCENTAGE) {
      reasons.push(
        `its mixedInstancesPolicy sets onDemandPercentageAboveBaseCapacity ${percentage}, so ${100 - percentage} % above the On-Demand base is Spot`,
      );
    }
  }
  for (const template of groupLaunchTemplates(group)) {
    if (requestsSpot(template)) reasons.push(`launch template '${template.name}' requests Spot (instanceMarketOptions.marketType "spot")`);
  }
  return reasons;
}

/** pulumi-aws hands some booleans over as strings. */
export function isTrue(value: unknown): boolean {
  return value === true || value === "true";
}
