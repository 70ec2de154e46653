import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { encryptedRootVolume, HARDENED_METADATA } from "./hardened-instance";

export interface PoolLaunchTemplateArgs {
  /** Instance type the template launches. */
  instanceType: string;
  /** The subnet instances start in (private). */
  subnetId: pulumi.Input<string>;
  /** Security groups of the instances. */
  securityGroupIds: pulumi.Input<string>[];
  /** ARN of the instance profile (the only role the launcher may pass). */
  instanceProfileArn: pulumi.Input<string>;
  /** Tags that mark pool membership and class; applied to the template, instances, volumes and ENIs. */
  membershipTags: Record<string, string>;
  /**
   * Public SSM parameter that resolves the AMI (read with an invoke at deploy time).
   * @default "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
   */
  amiParameter?: string;
  /**
   * Root device name of the AMI (`/dev/xvda` for Amazon Linux, `/dev/sda1` for Ubuntu).
   * @default "/dev/xvda"
   */
  rootDeviceName?: string;
  /**
   * Size of the encrypted gp3 root volume, GiB.
   * @default 30
   */
  rootVolumeGiB?: number;
  /**
   * `spot` sets one-time Spot market options.
   * @default "on-demand"
   */
  usageClass?: "on-demand" | "spot";
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const poolLaunchTemplateDefaults = {
  amiParameter: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
  rootDeviceName: "/dev/xvda",
  rootVolumeGiB: 30,
  usageClass: "on-demand",
} as const;

/** Fills defaults and checks what EC2 would refuse. Pure. */
export function resolvePoolLaunchTemplateArgs(
  args: Pick<PoolLaunchTemplateArgs, "instanceType" | "amiParameter" | "rootDeviceName" | "rootVolumeGiB" | "usageClass" | "membershipTags">,
) {
  const r = {
    ...poolLaunchTemplateDefaults,
    ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
  } as Omit<typeof poolLaunchTemplateDefaults, "usageClass"> & {
    usageClass: "on-demand" | "spot";
    instanceType: string;
    membershipTags: Record<string, string>;
  };
  const errors: string[] = [];
  if (!INSTANCE_TYPE_PATTERN.test(r.instanceType)) errors.push(`instanceType "${r.instanceType}" is not an EC2 instance type`);
  if (!r.amiParameter.startsWith("/aws/service/")) errors.push("amiParameter must be a public parameter under /aws/service/");
  if (!/^\/dev\/[a-z0-9]+$/.test(r.rootDeviceName)) errors.push(`rootDeviceName "${r.rootDeviceName}" is not a device name`);
  if (!Number.isInteger(r.rootVolumeGiB) || r.rootVolumeGiB < 8) errors.push("rootVolumeGiB must be an integer ≥ 8");
  if (Object.keys(r.membershipTags).length === 0) errors.push("membershipTags must not be empty: IAM conditions and the refill count key on them");
  if (errors.length > 0) throw new Error(`PoolLaunchTemplate: ${errors.join("; ")}`);
  return r;
}

/**
 * A launch template for warm pool instances: IMDSv2 only, no public IP, encrypted gp3 root,
 * detailed monitoring, and pool membership/class tags on the template and on everything it
 * creates. The refill function launches from its default version.
 */
/**
 * The AMI as EC2 resolves it at each launch (`resolve:ssm:`), not as the deploy saw it: the
 * template then stays the same when a new AMI is published, so an `up` adds no template version,
 * and every refill launches the current image. Pure.
 */
export function amiResolvedAtLaunch(amiParameter: string): string {
  return `resolve:ssm:${amiParameter}`;
}

export class PoolLaunchTemplate extends pulumi.ComponentResource {
  readonly template: aws.ec2.LaunchTemplate;
  /** The one instance type the template launches: the pool's RunInstances grant allows these and no other. */
  readonly instanceType: string;

  constructor(name: string, args: PoolLaunchTemplateArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:compute:PoolLaunchTemplate", name, {}, opts);
    const r = resolvePoolLaunchTemplateArgs(args);
    const tags = { ...(args.tags ?? {}), ...r.membershipTags };
    this.instanceType = r.instanceType;

    this.template = new aws.ec2.LaunchTemplate(
      name,
      {
        description: `Warm pool instances (${r.instanceType})`,
        imageId: amiResolvedAtLaunch(r.amiParameter),
        instanceType: r.instanceType,
        iamInstanceProfile: { arn: args.instanceProfileArn },
        metadataOptions: { ...HARDENED_METADATA, instanceMetadataTags: "enabled" },
        networkInterfaces: [
          { deviceIndex: 0, subnetId: args.subnetId, securityGroups: args.securityGroupIds, associatePublicIpAddress: "false", deleteOnTermination: "true" },
        ],
        blockDeviceMappings: [encryptedRootVolume(r.rootDeviceName, r.rootVolumeGiB)],
        instanceMarketOptions:
          r.usageClass === "spot"
            ? { marketType: "spot", spotOptions: { spotInstanceType: "one-time", instanceInterruptionBehavior: "terminate" } }
            : undefined,
        monitoring: { enabled: true },
        updateDefaultVersion: true,
        tagSpecifications: ["instance", "volume", "network-interface"].map((resourceType) => ({ resourceType, tags })),
        tags,
      },
      { parent: this },
    );
    this.registerOutputs({ launchTemplateId: this.template.id, launchTemplateArn: this.template.arn });
  }
}
