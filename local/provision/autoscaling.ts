/**
 * EC2 Auto Scaling: the GPU fleet's group, created in moto, which then launches the group's
 * instances into its EC2 on every change of desired capacity (and replaces one that leaves).
 *
 * What moto 5.2 stores but does not run is played by the local runtime (local/hosts/gpu-fleet.ts,
 * docs/local-run.md "Stand-ins"): the terminate lifecycle hook, the warm pool, Spot markets and
 * interruptions, the load balancer and its target registration. Two inputs are adjusted here, each
 * noted in the provisioning log:
 * - the mixed instances policy is recorded, not given to moto: moto sizes a mixed group with the
 *   percentage truncated (4 wanted, 25 % on-demand above a base of 1: it launches 3), where AWS
 *   always launches the desired capacity and rounds the on-demand share up. The group is created
 *   from the policy's launch template instead, so moto launches exactly the desired capacity, and
 *   the runtime's Spot stand-in assigns each instance its market from the recorded policy.
 * - the target group is not attached: the load balancer is the runtime's own (moto's elbv2 would
 *   keep terminated targets registered), and it follows the group's in-service instances.
 */
import {
  CreateAutoScalingGroupCommand,
  CreateOrUpdateTagsCommand,
  DescribeAutoScalingGroupsCommand,
  PutLifecycleHookCommand,
  PutWarmPoolCommand,
  type Tag,
} from "@aws-sdk/client-auto-scaling";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, definedOnly, num, obj, objs, pascal, str, strs, type Inputs } from "./inputs";

/** The launch template a group launches from: its own, or its mixed instances policy's. Pure. */
export function groupLaunchTemplate(inputs: Inputs): { LaunchTemplateId?: string; LaunchTemplateName?: string; Version?: string } | undefined {
  const spec = obj(inputs, "launchTemplate") ?? obj(obj(obj(inputs, "mixedInstancesPolicy") ?? {}, "launchTemplate") ?? {}, "launchTemplateSpecification");
  if (!spec) return undefined;
  return definedOnly({
    LaunchTemplateId: str(spec, "id") ?? str(spec, "launchTemplateId"),
    LaunchTemplateName: str(spec, "name") ?? str(spec, "launchTemplateName"),
    Version: str(spec, "version"),
  });
}

/** pulumi-aws's `tags` (key, value, propagateAtLaunch) as Auto Scaling's. Pure. */
export function groupTags(groupName: string, inputs: Inputs): Tag[] {
  return objs(inputs, "tags").flatMap((t) => groupTagOf(groupName, t) ?? []);
}

function groupTagOf(groupName: string, t: Inputs): Tag | undefined {
  const Key = str(t, "key");
  if (Key === undefined) return undefined;
  return {
    ResourceId: groupName,
    ResourceType: "auto-scaling-group",
    Key,
    Value: str(t, "value") ?? "",
    PropagateAtLaunch: bool(t, "propagateAtLaunch") === true,
  };
}

async function group(ctx: ProvisionContext, args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  const name = str(inputs, "name") ?? args.name;
  const template = groupLaunchTemplate(inputs);
  if (!template) throw new Error("the group names no launch template (launchTemplate or mixedInstancesPolicy.launchTemplate)");
  const subnets = strs(inputs, "vpcZoneIdentifiers");
  await ctx.autoscaling.send(
    new CreateAutoScalingGroupCommand(
      definedOnly({
        AutoScalingGroupName: name,
        LaunchTemplate: template,
        MinSize: num(inputs, "minSize") ?? 0,
        MaxSize: num(inputs, "maxSize") ?? 0,
        DesiredCapacity: num(inputs, "desiredCapacity") ?? num(inputs, "minSize") ?? 0,
        VPCZoneIdentifier: (subnets.length ? subnets : (await ctx.defaultNetwork()).subnetIds).join(","),
        ...pascal(str, inputs, ["healthCheckType"]),
        ...pascal(num, inputs, ["healthCheckGracePeriod"]),
        ...pascal(bool, inputs, ["capacityRebalance"]),
        NewInstancesProtectedFromScaleIn: bool(inputs, "protectFromScaleIn"),
        Tags: groupTags(name, inputs),
      }),
    ),
  );
  if (obj(inputs, "mixedInstancesPolicy"))
    notes.push("mixed instances policy recorded only: the runtime's Spot stand-in assigns markets (moto truncates a mixed group's size)");
  if (strs(inputs, "targetGroupArns").length) notes.push("target groups not attached: the runtime's load balancer follows the group's in-service instances");
  const warm = obj(inputs, "warmPool");
  if (warm) {
    const pool = { AutoScalingGroupName: name, ...pascal(num, warm, ["minSize", "maxGroupPreparedCapacity"]), ...pascal(str, warm, ["poolState"]) };
    await ctx.autoscaling.send(new PutWarmPoolCommand(pool));
    notes.push("warm pool stored; moto keeps no warm instances: the runtime's warm-pool stand-in starts them instead of booting");
  }
  const described = await ctx.autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [name] }));
  const arn = described.AutoScalingGroups?.[0]?.AutoScalingGroupARN;
  if (!arn) throw new Error(`CreateAutoScalingGroup left no group ${name} in moto`);
  return { id: name, state: { ...inputs, name, arn, desiredCapacity: described.AutoScalingGroups?.[0]?.DesiredCapacity ?? 0 } };
}

/** The terminate hook (its own resource): stored; moto never runs it, the runtime's fleet stand-in does. */
async function lifecycleHook(ctx: ProvisionContext, args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  const LifecycleHookName = str(inputs, "name") ?? args.name;
  const hook = { LifecycleHookName, ...pascal(str, inputs, ["lifecycleTransition", "defaultResult"]), ...pascal(num, inputs, ["heartbeatTimeout"]) };
  // pulumi-aws spells the group's name with a lower-case s.
  await ctx.autoscaling.send(new PutLifecycleHookCommand({ ...hook, AutoScalingGroupName: str(inputs, "autoscalingGroupName") }));
  notes.push(`lifecycle hook ${LifecycleHookName} stored; moto never runs it: the fleet stand-in holds a leaving instance until its gateway completes it`);
  return { id: LifecycleHookName, state: { ...inputs, name: LifecycleHookName } };
}

/** One declared tag of a group (its own resource, as the group ignores its `tags` after creation): written as AWS would. */
async function groupTag(ctx: ProvisionContext, _args: Args, inputs: Inputs): Promise<Result> {
  const AutoScalingGroupName = str(inputs, "autoscalingGroupName");
  const tag = AutoScalingGroupName === undefined ? undefined : groupTagOf(AutoScalingGroupName, obj(inputs, "tag") ?? {});
  if (!tag) throw new Error("the group tag names no group or key");
  await ctx.autoscaling.send(new CreateOrUpdateTagsCommand({ Tags: [tag] }));
  return { id: `${AutoScalingGroupName},${tag.Key}`, state: { ...inputs } };
}

export const autoscalingProvisioners: Provisioners = {
  "aws:autoscaling/group:Group": creates(group),
  "aws:autoscaling/lifecycleHook:LifecycleHook": creates(lifecycleHook),
  "aws:autoscaling/tag:Tag": creates(groupTag),
};
