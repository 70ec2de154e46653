/**
 * What Auto Scaling shows of a group and moto 5.2 does not keep (docs/local-run.md, "Stand-ins"):
 * - the mixed instances policy's distribution. moto is never given the policy (it truncates a mixed
 *   group's size, local/provision/autoscaling.ts), and it could not take a partial one anyway: an
 *   UpdateAutoScalingGroup with only `MixedInstancesPolicy.InstancesDistribution` fails inside moto,
 *   where Auto Scaling changes just the parts given. So the distribution lives here, starts as the
 *   program declared it, changes as UpdateAutoScalingGroup says, is shown in DescribeAutoScalingGroups,
 *   and is what the fleet stand-in launches by (../hosts/gpu-fleet.ts);
 * - an instance leaving through the terminate hook: Auto Scaling lists it as `Terminating:Wait` until
 *   its lifecycle action completes or the hook times out; moto drops it at once, so the fleet
 *   stand-in's leaving instances are added to the group's description.
 * The calls are the query protocol's; the proxy in front of moto (./autoscaling-proxy.ts) applies these.
 */
import type { LocalFleet } from "../provision/topology-types";
import { xmlText } from "./intercepting-proxy";

/** A group's distribution, as the fleet stand-in launches by it. */
export type Distribution = NonNullable<LocalFleet["spot"]>;

/** An instance the group still lists while its terminate hook holds it. */
export interface TerminatingInstance {
  instanceId: string;
  instanceType: string;
}

const DISTRIBUTION = "MixedInstancesPolicy.InstancesDistribution.";
/** The distribution's parts the stand-in keeps (what a launch's market depends on). */
const KEPT = { OnDemandBaseCapacity: "onDemandBaseCapacity", OnDemandPercentageAboveBaseCapacity: "onDemandPercentageAboveBaseCapacity" } as const;

/**
 * An UpdateAutoScalingGroup's change of the distribution, applied to `current` as Auto Scaling does
 * (the parts not given keep their values): undefined when the call changes no mixed instances
 * policy, else the new distribution or why Auto Scaling (or this stand-in) refuses it. Pure.
 */
export function distributionUpdate(current: Distribution | undefined, params: URLSearchParams): { next: Distribution } | { error: string } | undefined {
  const given = [...params.keys()].filter((k) => k.startsWith("MixedInstancesPolicy."));
  if (given.length === 0) return undefined;
  const group = params.get("AutoScalingGroupName") ?? "";
  if (!current) return { error: `the local stand-in knows no mixed instances policy of ${group}: it keeps only the one the program declared` };
  const next = { ...current };
  for (const key of given) {
    const part = key.startsWith(DISTRIBUTION) ? key.slice(DISTRIBUTION.length) : "";
    const field = KEPT[part as keyof typeof KEPT];
    if (!field) return { error: `${key}: the local stand-in keeps only ${Object.keys(KEPT).join(" and ")} of a mixed instances policy` };
    const raw = params.get(key) ?? "";
    const value = Number(raw);
    const max = field === "onDemandPercentageAboveBaseCapacity" ? 100 : Number.MAX_SAFE_INTEGER;
    if (!/^\d+$/.test(raw) || value > max) return { error: `${key} must be an integer from 0 to ${max === 100 ? 100 : "the group's size"} (got ${raw})` };
    next[field] = value;
  }
  return { next };
}

/** The query body without the mixed instances policy's parameters (what moto is given of the call). Pure. */
export function withoutMixedInstancesPolicy(params: URLSearchParams): URLSearchParams {
  return new URLSearchParams([...params].filter(([k]) => !k.startsWith("MixedInstancesPolicy.")));
}

/** Whether an UpdateAutoScalingGroup still changes something moto keeps once the policy is taken out. Pure. */
export function changesMore(params: URLSearchParams): boolean {
  return [...params.keys()].some((k) => !["Action", "Version", "AutoScalingGroupName"].includes(k) && !k.startsWith("MixedInstancesPolicy."));
}

/** The policy as DescribeAutoScalingGroups shows it. Pure. */
export function mixedInstancesPolicyXml(d: Distribution): string {
  const overrides = d.instanceTypes.map((t) => `<member><InstanceType>${xmlText(t)}</InstanceType></member>`).join("");
  return (
    `<MixedInstancesPolicy><LaunchTemplate><Overrides>${overrides}</Overrides></LaunchTemplate>` +
    `<InstancesDistribution><OnDemandBaseCapacity>${d.onDemandBaseCapacity}</OnDemandBaseCapacity>` +
    `<OnDemandPercentageAboveBaseCapacity>${d.onDemandPercentageAboveBaseCapacity}</OnDemandPercentageAboveBaseCapacity></InstancesDistribution></MixedInstancesPolicy>`
  );
}

const terminatingXml = (i: TerminatingInstance) =>
  `<member><InstanceId>${xmlText(i.instanceId)}</InstanceId><InstanceType>${xmlText(i.instanceType)}</InstanceType>` +
  `<LifecycleState>Terminating:Wait</LifecycleState><HealthStatus>Healthy</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>`;

/**
 * moto's DescribeAutoScalingGroups answer with, in each named group, its distribution and its
 * leaving instances. A group's part runs from its `<AutoScalingGroupName>` to the next group's. Pure.
 */
export function amendDescription(xml: string, of: (groupName: string) => { distribution?: Distribution; terminating: readonly TerminatingInstance[] }): string {
  const starts = [...xml.matchAll(/<AutoScalingGroupName>([^<]*)<\/AutoScalingGroupName>/g)];
  if (starts.length === 0) return xml;
  let out = xml.slice(0, starts[0]!.index);
  starts.forEach((m, i) => {
    const end = starts[i + 1]?.index ?? xml.length;
    let part = xml.slice(m.index, end);
    const { distribution, terminating } = of(m[1]!.replace(/&amp;/g, "&"));
    const leaving = terminating
      .filter((t) => !part.includes(`<InstanceId>${t.instanceId}</InstanceId>`))
      .map(terminatingXml)
      .join("");
    if (leaving)
      part = part.includes("<Instances/>")
        ? part.replace("<Instances/>", `<Instances>${leaving}</Instances>`)
        : part.replace("</Instances>", `${leaving}</Instances>`);
    if (distribution)
      part = part.replace(/<MixedInstancesPolicy>[\s\S]*?<\/MixedInstancesPolicy>/, "").replace(m[0], `${m[0]}${mixedInstancesPolicyXml(distribution)}`);
    out += part;
  });
  return out;
}

/** The distributions of the program's groups, as UpdateAutoScalingGroup leaves them. */
export class GroupDistributions {
  private readonly byGroup = new Map<string, Distribution>();
  private readonly history: Array<{ atMs: number; groupName: string; distribution: Distribution }> = [];

  constructor(fleets: readonly Pick<LocalFleet, "groupName" | "spot">[]) {
    for (const f of fleets) if (f.spot) this.byGroup.set(f.groupName, { ...f.spot, instanceTypes: [...f.spot.instanceTypes] });
  }

  /** The group's distribution now, or undefined for a group without a mixed instances policy. */
  of(groupName: string): Distribution | undefined {
    const d = this.byGroup.get(groupName);
    return d ? { ...d, instanceTypes: [...d.instanceTypes] } : undefined;
  }

  set(groupName: string, d: Distribution, atMs: number = Date.now()): void {
    this.byGroup.set(groupName, d);
    this.history.push({ atMs, groupName, distribution: { ...d, instanceTypes: [...d.instanceTypes] } });
  }

  /** Every change, in order, with the real epoch ms it was made at (what a scenario times the breaker by). */
  changes(groupName: string): Array<{ atMs: number; distribution: Distribution }> {
    return this.history.filter((h) => h.groupName === groupName).map(({ atMs, distribution }) => ({ atMs, distribution }));
  }
}
