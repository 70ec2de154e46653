import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";

export interface NetworkArgs {
  /** IPv4 CIDR of the VPC. */
  cidrBlock: string;
  /**
   * NAT gateways: `Single` (one shared) or `OnePerAz`.
   * @default "Single"
   */
  natGateways?: "Single" | "OnePerAz";
  /**
   * Availability zones to spread subnets over.
   * @default 2
   */
  availabilityZones?: number;
  /**
   * The zones by name, in this account (see infra/network-zones.ts); when set, `availabilityZones`
   * is not used.
   * @default the region's first `availabilityZones` zones
   */
  availabilityZoneNames?: string[];
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * The platform VPC: public subnets for the NAT gateways only, private subnets for everything
 * we run. Functions in the private subnets reach AWS APIs through NAT; nothing gets a public IP.
 */
export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly privateSubnetIds: pulumi.Output<string[]>;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:network:Network", name, {}, opts);
    const vpc = new awsx.ec2.Vpc(
      `${name}-vpc`,
      {
        cidrBlock: args.cidrBlock,
        ...(args.availabilityZoneNames ? { availabilityZoneNames: args.availabilityZoneNames } : { numberOfAvailabilityZones: args.availabilityZones ?? 2 }),
        natGateways: { strategy: args.natGateways ?? "Single" },
        subnetStrategy: "Auto",
        enableDnsHostnames: true,
        tags: args.tags ?? {},
      },
      { parent: this },
    );
    this.vpcId = vpc.vpcId;
    this.privateSubnetIds = vpc.privateSubnetIds;
    this.registerOutputs({ vpcId: this.vpcId, privateSubnetIds: this.privateSubnetIds });
  }
}
