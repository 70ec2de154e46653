import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { ENVIRONMENT_TAG } from "../../policy/contract";
import type { Statement } from "../iam/document";
import { declareInstanceRole, encryptedRootVolume, HARDENED_METADATA } from "./hardened-instance";
import { resolveAmi } from "./gpu-instance";
import { InternalLoadBalancer } from "./internal-load-balancer";

export interface GpuFleetArgs {
  /** The group's name: the consumers and the scaler find it by it, and their grants name it. */
  groupName: string;
  /** Instance types, in order of preference (the first is the launch template's); the group launches them in that order (groupCapacityInputs). */
  instanceTypes: string[];
  /** Instances at most; the group's min is 0. */
  maxSize: number;
  /**
   * On-demand instances before any Spot.
   * @default 0
   */
  onDemandBaseCapacity?: number;
  /**
   * Percent of the capacity above the base that runs on Spot; 0 declares no mixed instances policy.
   * @default 0
   */
  spotPercent?: number;
  /**
   * How Spot picks its pools: `capacity-optimized` is declared as `capacity-optimized-prioritized`, so
   * the listed order is honoured (groupCapacityInputs).
   * @default "capacity-optimized"
   */
  spotAllocationStrategy?: "capacity-optimized" | "price-capacity-optimized";
  /** Stopped instances kept ready, exactly minSize (on-demand groups of one type only: AWS refuses a warm pool with a mixed instances policy). */
  warmPool?: { minSize: number };
  /** The VPC, and the private subnets the group and the load balancer span (at least two zones). */
  vpcId: pulumi.Input<string>;
  subnetIds: pulumi.Input<string[]>;
  /** The GPU instances' security group: it admits the service port from the load balancer's group only. */
  instanceSecurityGroupId: pulumi.Input<string>;
  /**
   * The load balancer's security group: it admits the service port from the consumers' group only.
   * Declared by the caller, before the instances' group that names it, so neither refers to the other.
   */
  loadBalancerSecurityGroupId: pulumi.Input<string>;
  /** The service's port (the listener's and the targets'), and its status path (the health check). */
  servicePort: number;
  statusPath: string;
  /** Deregistration delay and the terminate hook's timeout, seconds: a leaving instance finishes its windows. */
  drainSeconds: number;
  /**
   * The AMI: an id (`ami-…`), or an SSM parameter (public or the account's own) read at deploy time,
   * so a new AMI is a new template version and an instance refresh that can roll back.
   * @default "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
   */
  ami?: string;
  /**
   * Cloud-init user data (plain text; the template carries it base64-encoded) that boots each
   * instance ready to serve. A change is a new template version, rolled out by an instance refresh.
   * @default undefined (none)
   */
  userData?: pulumi.Input<string>;
  /**
   * The role's own statements beside Session Manager's (what the instances' services call), as the
   * `<name>-host` RolePolicy.
   * @default [] (no such policy)
   */
  statements?: Statement[];
  /**
   * Size of the encrypted gp3 root volume, GiB.
   * @default 100
   */
  rootVolumeGiB?: number;
  /** The stack's environment: tagged on the group and everything it launches (the grants' condition). */
  environment: string;
  /**
   * Pulumi's `protect` on the group and the load balancer (prod), as on the single GPU.
   * @default false
   */
  deletionProtection?: boolean;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const gpuFleetDefaults = {
  onDemandBaseCapacity: 0,
  spotPercent: 0,
  spotAllocationStrategy: "capacity-optimized",
  ami: "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
  rootVolumeGiB: 100,
  deletionProtection: false,
} as const;

/** The Deep Learning AMIs (Ubuntu) boot from /dev/sda1. */
const ROOT_DEVICE = "/dev/sda1";

/** Everything the group publishes to CloudWatch (`enabledMetrics`), so the dashboard shows in service, desired and pending. */
export const GROUP_METRICS = [
  "GroupDesiredCapacity",
  "GroupInServiceInstances",
  "GroupPendingInstances",
  "GroupTerminatingInstances",
  "GroupInServiceCapacity",
  "GroupTotalInstances",
  "GroupMinSize",
  "GroupMaxSize",
] as const;

/**
 * The terminate hook's name: a leaving instance waits in Terminating:Wait for up to drainSeconds,
 * until its gateway has drained and completes the action itself (GPU_DRAIN_HOOK_NAME).
 */
export const DRAIN_HOOK = "drain";

/**
 * The group's `ignoreChanges`. `desiredCapacity` is the scaler's. `tags`: the group also carries
 * runtime state as tags the program does not declare (the operator's hold, `encache:gpu-hold`; the
 * scaler's `encache:scaled-out-at` and its Spot breaker's `encache:spot-interruption:<instance-id>`
 * records). The provider's Read stores every tag of the group, so after a
 * `pulumi refresh` the state lists them, and its Update sets the group's tags to the declared ones,
 * deleting the rest: a refresh + `up` would erase the hold and the stamp. An ignoreChanges path
 * cannot pick entries of the `tags` list by key (its paths index a list by position, and the
 * provider keeps the tags as a set, in no order the program controls), so the whole of `tags` is ignored
 * after creation, and each declared tag is its own `aws.autoscaling.Tag` (declareGroupTags), which
 * writes and deletes its one key only. The provider warns that a Tag beside the group's own `tags`
 * makes a perpetual diff: the group would remove the Tag's key; with `tags` ignored it never
 * touches them. Moving the state off the group was the other way; the tags are where the scaler's
 * and the operator's narrow grants already point, and stay visible in the console.
 *
 * `mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity` is the scaler's
 * too, with Spot: 100 while its Spot breaker is open, else 100 − spotPercent, which reaches it
 * through its environment (GPU_FLEET_SPOT_PERCENT), so a new spotPercent takes effect at its next
 * tick. The program declares the configured share at creation; after a refresh that reads the
 * breaker's 100, an `up` would set it back (and the breaker would shift the group again a tick
 * later, with Auto Scaling replacing instances each way), so the path is ignored, and the engine
 * keeps the refreshed value. An `up` without a refresh that changes the policy for another reason
 * (a new template version) sends the share it last deployed; the scaler's next tick sets the
 * breaker's again, since the records it decides by are tags, which no `up` touches. An `up` that
 * gives an existing group its first mixed instances policy (Spot turned on) leaves the share out, as
 * the engine has no old value for the path: Auto Scaling's default, 100, holds until the scaler's
 * first tick sets the configured one.
 */
export const GROUP_IGNORE_CHANGES = ["desiredCapacity", "tags", "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity"] as const;

/** AWS's bounds on a lifecycle hook's heartbeat timeout (PutLifecycleHook), seconds. */
export const HOOK_HEARTBEAT_BOUNDS = { min: 30, max: 7200 } as const;

/** Fills defaults and checks what Auto Scaling would refuse. Pure. */
type PlainFleetArgs = Omit<
  GpuFleetArgs,
  "vpcId" | "subnetIds" | "instanceSecurityGroupId" | "loadBalancerSecurityGroupId" | "tags" | "userData" | "statements"
>;

export function resolveGpuFleetArgs(args: PlainFleetArgs) {
  const r = { ...gpuFleetDefaults, ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)) } as typeof gpuFleetDefaults &
    PlainFleetArgs & {
      spotAllocationStrategy: "capacity-optimized" | "price-capacity-optimized";
    };
  const errors: string[] = [];
  if (r.instanceTypes.length === 0) errors.push("instanceTypes must name at least one type");
  for (const t of r.instanceTypes) if (!INSTANCE_TYPE_PATTERN.test(t)) errors.push(`instanceType "${t}" is not an EC2 instance type`);
  if (new Set(r.instanceTypes).size !== r.instanceTypes.length) errors.push("instanceTypes must not name a type twice");
  if (!Number.isInteger(r.maxSize) || r.maxSize < 1) errors.push("maxSize must be an integer ≥ 1");
  if (r.onDemandBaseCapacity > r.maxSize) errors.push("onDemandBaseCapacity must be at most maxSize");
  if (r.warmPool && r.spotPercent > 0)
    errors.push("warmPool cannot be combined with Spot: AWS refuses a warm pool on a group with a mixed instances policy (PutWarmPool)");
  if (r.warmPool && r.instanceTypes.length > 1)
    errors.push(
      "warmPool allows one instance type: several need a mixed instances policy, which AWS refuses beside a warm pool (PutWarmPool), so the others would never launch",
    );
  if (r.drainSeconds < HOOK_HEARTBEAT_BOUNDS.min || r.drainSeconds > 3600)
    errors.push(`drainSeconds must be within ${HOOK_HEARTBEAT_BOUNDS.min}–3600 (the hook's heartbeat timeout and the deregistration delay's bounds)`);
  if (!/^(ami-[0-9a-f]{8,17}|\/.+)$/.test(r.ami)) errors.push(`ami "${r.ami}" is neither an AMI id nor an absolute SSM parameter name`);
  if (!/^[\w+=,.@/-]{1,255}$/.test(r.groupName)) errors.push(`groupName "${r.groupName}" is not a valid Auto Scaling group name`);
  if (errors.length > 0) throw new Error(`GpuFleet: ${errors.join("; ")}`);
  return r;
}

/**
 * The ARN pattern of one Auto Scaling group, as IAM matches it (the group's id is unknown before it
 * exists, hence `*`). Pure.
 */
export function groupArnPattern(region: string, accountId: pulumi.Input<string>, groupName: string): pulumi.Output<string> {
  return pulumi.interpolate`arn:aws:autoscaling:${region}:${accountId}:autoScalingGroup:*:autoScalingGroupName/${groupName}`;
}

/**
 * The group's capacity inputs: what it launches, in which order, and its warm pool. Pure.
 * - With Spot: a mixed instances policy over the listed types. `capacity-optimized` is declared as
 *   `capacity-optimized-prioritized` (plain `capacity-optimized` ignores the order; the prioritized
 *   one honours it on a best-effort basis, capacity first), and on-demand is `prioritized` too.
 *   `price-capacity-optimized` weighs price and capacity and so does not follow the order.
 * - Without Spot, several types: a mixed instances policy that is 100 % on-demand with
 *   `onDemandAllocationStrategy: prioritized`, so the second type is used when the first has no
 *   capacity (a bare launch template only ever launches its one type).
 * - With a warm pool: the template alone (AWS refuses a warm pool on a group with a mixed instances
 *   policy, so resolveGpuFleetArgs allows one type only), and `maxGroupPreparedCapacity` equal to
 *   `minSize`: unset, AWS keeps max − desired instances in the pool (PutWarmPool); equal to minSize,
 *   the pool holds exactly minSize.
 */
export function groupCapacityInputs<I>(
  r: Pick<ReturnType<typeof resolveGpuFleetArgs>, "instanceTypes" | "onDemandBaseCapacity" | "spotPercent" | "spotAllocationStrategy" | "warmPool">,
  template: { id: I; version: I },
) {
  const spot = r.spotPercent > 0;
  const mixed = spot || (r.instanceTypes.length > 1 && !r.warmPool);
  return {
    capacityRebalance: spot,
    ...(mixed
      ? {
          mixedInstancesPolicy: {
            instancesDistribution: {
              onDemandAllocationStrategy: "prioritized",
              onDemandBaseCapacity: spot ? r.onDemandBaseCapacity : 0,
              onDemandPercentageAboveBaseCapacity: 100 - r.spotPercent,
              ...(spot ? { spotAllocationStrategy: SPOT_STRATEGY[r.spotAllocationStrategy] } : {}),
            },
            launchTemplate: {
              launchTemplateSpecification: { launchTemplateId: template.id, version: template.version },
              overrides: r.instanceTypes.map((instanceType) => ({ instanceType })),
            },
          },
        }
      : { launchTemplate: template }),
    ...(r.warmPool ? { warmPool: { poolState: "Stopped", minSize: r.warmPool.minSize, maxGroupPreparedCapacity: r.warmPool.minSize } } : {}),
  };
}

/** The Spot strategy the group declares for the configured one: capacity first, in the listed order. */
const SPOT_STRATEGY = {
  "capacity-optimized": "capacity-optimized-prioritized",
  "price-capacity-optimized": "price-capacity-optimized",
} as const;

/**
 * The GPU tier as an EC2 Auto Scaling group behind an internal Application Load Balancer:
 * - a hardened launch template (IMDSv2, encrypted gp3, no public IP, the AMI resolved at deploy, the
 *   user data that boots the gateway and the model); the group launches its explicit latest version,
 *   so a new AMI or user data starts an instance refresh, which rolls back on failure;
 * - Spot and on-demand mixed by config (a mixed instances policy, capacity rebalancing on), or an
 *   on-demand group with an optional warm pool of stopped instances;
 * - min 0; desired capacity belongs to the scaler (functions/gpu/scaler-handler.ts), so Pulumi
 *   never sets it after creation (`ignoreChanges`) and never waits for capacity;
 * - a terminate lifecycle hook (its own resource, so a new drainSeconds changes the hook in place,
 *   not the group: the group's `initialLifecycleHooks` is ForceNew) and the target group's
 *   deregistration delay give a leaving instance (scale-in, Spot interruption, rebalance)
 *   `drainSeconds` to finish its windows.
 *
 * An ALB, not an NLB: it balances per request (least outstanding requests), where an NLB pins each
 * of a Lambda's kept-alive connections to one target, and it drains in-flight requests on
 * deregistration.
 */
export class GpuFleet extends pulumi.ComponentResource {
  readonly role: aws.iam.Role;
  readonly launchTemplate: aws.ec2.LaunchTemplate;
  /** The internal ALB in front of the group (its load balancer, target group and listener). */
  readonly balancer: InternalLoadBalancer;
  readonly group: aws.autoscaling.Group;
  /** The group's declared tags, one `aws.autoscaling.Tag` each (GROUP_IGNORE_CHANGES). */
  readonly groupTagResources: aws.autoscaling.Tag[];
  /** The terminate hook (DRAIN_HOOK) the gateway completes once drained. */
  readonly drainHook: aws.autoscaling.LifecycleHook;
  /** The one address the consumers POST to: the load balancer's DNS name. */
  readonly serviceHost: pulumi.Output<string>;

  private readonly r: ReturnType<typeof resolveGpuFleetArgs>;
  private readonly tags: Record<string, string>;

  constructor(
    private readonly name: string,
    private readonly args: GpuFleetArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("encache:compute:GpuFleet", name, {}, opts);
    this.r = resolveGpuFleetArgs(args);
    this.tags = args.tags ?? {};
    // `<name>-role`, `-session-manager`, `-host` (the gateway, the image pulls, the log driver) and `-profile`.
    const { role, profile } = declareInstanceRole(name, { parent: this, tags: this.tags, ...(args.statements ? { statements: args.statements } : {}) });
    this.role = role;
    this.launchTemplate = this.declareLaunchTemplate(profile);
    this.balancer = this.declareLoadBalancer();
    this.group = this.declareGroup();
    this.groupTagResources = this.declareGroupTags();
    this.drainHook = this.declareDrainHook();
    this.serviceHost = this.balancer.loadBalancer.dnsName;
    this.registerOutputs({
      groupName: this.group.name,
      groupArn: this.group.arn,
      serviceHost: this.serviceHost,
      targetGroupArn: this.balancer.targetGroup.arn,
      drainHookName: this.drainHook.name,
    });
  }

  /** The load balancer, as the consumers' address and the group's target. */
  get loadBalancer(): aws.lb.LoadBalancer {
    return this.balancer.loadBalancer;
  }
  get targetGroup(): aws.lb.TargetGroup {
    return this.balancer.targetGroup;
  }
  get listener(): aws.lb.Listener {
    return this.balancer.listener;
  }

  /** The stack's environment tag beside the caller's tags: the grants' condition. */
  private stackTags(): Record<string, string> {
    return { ...this.tags, [ENVIRONMENT_TAG]: this.args.environment };
  }

  /** `<name>-lt`: the hardened template, its AMI resolved at deploy, its user data base64. */
  private declareLaunchTemplate(profile: aws.iam.InstanceProfile): aws.ec2.LaunchTemplate {
    const { r, args } = this;
    return new aws.ec2.LaunchTemplate(
      `${this.name}-lt`,
      {
        description: `GPU fleet instances (${r.instanceTypes.join(", ")})`,
        imageId: resolveAmi(r.ami, this),
        instanceType: r.instanceTypes[0],
        ...(args.userData !== undefined ? { userData: pulumi.output(args.userData).apply((u) => Buffer.from(u, "utf8").toString("base64")) } : {}),
        iamInstanceProfile: { arn: profile.arn },
        metadataOptions: { ...HARDENED_METADATA },
        networkInterfaces: [{ deviceIndex: 0, securityGroups: [args.instanceSecurityGroupId], associatePublicIpAddress: "false", deleteOnTermination: "true" }],
        blockDeviceMappings: [encryptedRootVolume(ROOT_DEVICE, r.rootVolumeGiB)],
        monitoring: { enabled: true },
        updateDefaultVersion: true,
        tagSpecifications: ["instance", "volume", "network-interface"].map((resourceType) => ({
          resourceType,
          tags: { ...this.stackTags(), Name: r.groupName },
        })),
        tags: this.tags,
      },
      { parent: this },
    );
  }

  /** `<name>-lb`, `-tg`, `-listener`, in their own component; aliased to this one, where they were declared before. */
  private declareLoadBalancer(): InternalLoadBalancer {
    const { r, args } = this;
    return new InternalLoadBalancer(
      this.name,
      {
        vpcId: args.vpcId,
        subnetIds: args.subnetIds,
        securityGroupId: args.loadBalancerSecurityGroupId,
        port: r.servicePort,
        healthCheckPath: r.statusPath,
        deregistrationDelaySeconds: r.drainSeconds,
        deletionProtection: r.deletionProtection,
        formerParent: this,
        tags: this.tags,
      },
      { parent: this },
    );
  }

  /** `<name>`: the group, min 0, its desired capacity the scaler's. */
  private declareGroup(): aws.autoscaling.Group {
    const { r, args } = this;
    // The explicit latest version, not `$Latest`: a new version is then a change of the group's
    // template, which starts an instance refresh (the provider starts none for `$Latest`).
    const version = pulumi.interpolate`${this.launchTemplate.latestVersion}`;
    return new aws.autoscaling.Group(
      this.name,
      {
        name: r.groupName,
        minSize: 0,
        maxSize: r.maxSize,
        vpcZoneIdentifiers: args.subnetIds,
        // Never wait for instances on `up`: a group at 0 has none, and GPU quota may be 0 in a new account.
        waitForCapacityTimeout: "0",
        healthCheckType: "ELB",
        healthCheckGracePeriod: 600,
        targetGroupArns: [this.balancer.targetGroup.arn],
        ...groupCapacityInputs(r, { id: this.launchTemplate.id, version }),
        enabledMetrics: [...GROUP_METRICS],
        metricsGranularity: "1Minute",
        // A new template version (AMI, user data) replaces the instances in a rolling refresh: new ones
        // first (max 200 %), none taken while busy (the scaler's scale-in protection: Wait), rolled
        // back if the new ones do not become healthy. Auto Scaling can roll back because the AMI is an
        // id in the template, not an SSM parameter read at launch.
        instanceRefresh: {
          strategy: "Rolling",
          preferences: {
            autoRollback: true,
            minHealthyPercentage: 100,
            maxHealthyPercentage: 200,
            scaleInProtectedInstances: "Wait",
            skipMatching: true,
          },
        },
        // The tags the group is created with; after creation they are the `-tag-…` resources' (declareGroupTags).
        tags: this.groupTags().map(({ key, value }) => ({ key, value, propagateAtLaunch: true })),
      },
      // desiredCapacity is the scaler's; the provider reads it back, so a later `up` must not reset it.
      // tags: see GROUP_IGNORE_CHANGES.
      { parent: this, ignoreChanges: [...GROUP_IGNORE_CHANGES], protect: r.deletionProtection },
    );
  }

  /** The tags the program declares on the group: the stack's, the environment, Name. */
  private groupTags(): Array<{ key: string; value: string }> {
    return Object.entries({ ...this.stackTags(), Name: this.r.groupName }).map(([key, value]) => ({ key, value }));
  }

  /**
   * `<name>-tag-<key>`: each declared tag of the group as its own `aws.autoscaling.Tag`, so a changed
   * or new declared tag still reaches the group while the group ignores its `tags` (GROUP_IGNORE_CHANGES).
   * A Tag writes (CreateOrUpdateTags) and deletes its one key only: runtime tags are never its business.
   */
  private declareGroupTags(): aws.autoscaling.Tag[] {
    return this.groupTags().map(
      ({ key, value }) =>
        new aws.autoscaling.Tag(
          `${this.name}-tag-${key.replace(/[^A-Za-z0-9-]/g, "-")}`,
          { autoscalingGroupName: this.group.name, tag: { key, value, propagateAtLaunch: true } },
          { parent: this },
        ),
    );
  }

  /** `<name>-drain`: the terminate hook. */
  private declareDrainHook(): aws.autoscaling.LifecycleHook {
    // Its own resource, not the group's initialLifecycleHooks (ForceNew in the provider): a new
    // drainSeconds updates the hook in place. A hook added after the group still holds its instances:
    // it acts when one terminates.
    return new aws.autoscaling.LifecycleHook(
      `${this.name}-drain`,
      {
        name: DRAIN_HOOK,
        autoscalingGroupName: this.group.name,
        lifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
        heartbeatTimeout: this.r.drainSeconds,
        defaultResult: "CONTINUE",
      },
      { parent: this },
    );
  }
}
