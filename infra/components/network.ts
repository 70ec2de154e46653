import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";
import { assumedBy, trustScope } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";

export interface NetworkArgs {
  /** IPv4 CIDR of the VPC. */
  cidrBlock: string;
  /**
   * The stack's environment (`dev`, `prod`): part of the awsx VPC's resource name, from which awsx
   * derives the `Name` tag of the VPC and of every child (see vpcNaming).
   */
  environment: string;
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
  /** The stack's region, for the endpoints' service names (`com.amazonaws.<region>.<service>`). */
  region: string;
  /**
   * Gateway endpoints (`s3`, `dynamodb`), added to every route table of the VPC.
   * @default []
   */
  gatewayEndpoints?: readonly string[];
  /**
   * Interface endpoints by service (`sqs`, `ecr.dkr`…), one network interface per zone in the
   * private subnets, private DNS on, reachable on 443 from inside the VPC only.
   * @default []
   */
  interfaceEndpoints?: readonly string[];
  /**
   * Days the VPC flow logs are kept in CloudWatch Logs.
   * @default 14
   */
  flowLogRetentionDays?: number;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/** EC2's default quota of Elastic IP addresses per region ("EC2-VPC Elastic IPs", L-0263D0A3). */
export const DEFAULT_ELASTIC_IP_QUOTA = 5;

/**
 * The NAT gateways awsx creates for a strategy over `zones` zones, each with an Elastic IP of its
 * own (awsx allocates one per gateway unless given allocation ids, which this program never
 * passes): `Single` one, `OnePerAz` one per zone. Every stack in a region draws its EIPs from the
 * same quota. Pure.
 */
export function natGatewayCount(strategy: NonNullable<NetworkArgs["natGateways"]>, zones: number): number {
  return strategy === "Single" ? 1 : zones;
}

/**
 * The awsx VPC's resource name, and the alias that keeps a stack created before the environment
 * was in it. awsx (awsx/ec2/vpc.ts) tags what it creates from that name alone: the VPC and the
 * internet gateway `Name: <name>`, each subnet and its route table `<name>-<type>-<n>`, each NAT
 * gateway and Elastic IP `<name>-<n>`, and puts the name last on subnets and route tables, so
 * tags passed in cannot override it there. The name must therefore carry the environment, or dev
 * and prod in one account show the same `Name` on all of them.
 *
 * Renaming a resource replaces it unless an alias names the old one. The alias on the component
 * carries over, by the engine's parent-alias inheritance (a child whose name starts with its
 * parent's gets the parent's old name in its alias), the VPC, internet gateway, subnets, route
 * tables, their associations and routes, and the endpoints: an existing stack sees their `Name`
 * tags updated in place. Not the NAT gateways and Elastic IPs: their names (`<name>-<n>`) do not
 * start with their parent subnet's (`<name>-public-<n>`), so an existing stack would replace them
 * (README, "Elastic IPs": new addresses are allocated before the old are released). Pure.
 */
export function vpcNaming(name: string, environment: string): { name: string; aliases: Array<{ name: string }> } {
  return { name: `${name}-vpc-${environment}`, aliases: [{ name: `${name}-vpc` }] };
}

/** The zones the VPC spans: the named ones, else `availabilityZones`, else 2. Pure. */
export function zoneCount(args: Pick<NetworkArgs, "availabilityZoneNames" | "availabilityZones">): number {
  return args.availabilityZoneNames?.length ?? args.availabilityZones ?? 2;
}

/**
 * The VPC endpoints awsx creates: gateway endpoints for S3 and DynamoDB (free) and the interface
 * endpoints the stack asks for. Pure, so the specs are tested without mocks.
 */
export function vpcEndpointSpecs(
  args: Pick<NetworkArgs, "region" | "gatewayEndpoints" | "interfaceEndpoints" | "tags">,
): awsx.types.input.ec2.VpcEndpointSpecArgs[] {
  const serviceName = (service: string) => `com.amazonaws.${args.region}.${service}`;
  const tags = args.tags ?? {};
  return [
    ...(args.gatewayEndpoints ?? []).map((s) => ({ serviceName: serviceName(s), vpcEndpointType: "Gateway", tags })),
    ...(args.interfaceEndpoints ?? []).map((s) => ({ serviceName: serviceName(s), vpcEndpointType: "Interface", privateDnsEnabled: true, tags })),
  ];
}

/**
 * The platform VPC: public subnets for the NAT gateways only, private subnets for everything
 * we run. Functions in the private subnets reach S3 and DynamoDB through gateway endpoints and
 * other AWS APIs through NAT (or the interface endpoints the stack asks for); nothing gets a public IP.
 * Every flow (accepted and rejected) is logged to CloudWatch Logs, and the VPC's default security
 * group has no rules, so nothing that lands in it by mistake can talk.
 */
export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly privateSubnetIds: pulumi.Output<string[]>;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:network:Network", name, {}, opts);
    const naming = vpcNaming(name, args.environment);
    const vpc = new awsx.ec2.Vpc(
      naming.name,
      {
        cidrBlock: args.cidrBlock,
        ...(args.availabilityZoneNames ? { availabilityZoneNames: args.availabilityZoneNames } : { numberOfAvailabilityZones: zoneCount(args) }),
        natGateways: { strategy: args.natGateways ?? "Single" },
        subnetStrategy: "Auto",
        enableDnsHostnames: true,
        // awsx then fills each endpoint's route tables (gateway) or private subnets and an
        // HTTPS-from-the-VPC security group (interface) from the resources it generates.
        vpcEndpointStrategy: "Auto",
        vpcEndpointSpecs: vpcEndpointSpecs(args),
        tags: args.tags ?? {},
      },
      { parent: this, aliases: naming.aliases },
    );
    this.vpcId = vpc.vpcId;
    this.privateSubnetIds = vpc.privateSubnetIds;
    const tags = args.tags ?? {};

    // Takes over the default group AWS creates with the VPC and removes its rules.
    new aws.ec2.DefaultSecurityGroup(`${name}-default-sg`, { vpcId: this.vpcId, ingress: [], egress: [], tags }, { parent: this });

    const flowLogs = new aws.cloudwatch.LogGroup(`${name}-flow-logs`, { retentionInDays: args.flowLogRetentionDays ?? 14, tags }, { parent: this });
    const role = new aws.iam.Role(
      `${name}-flow-logs-role`,
      { assumeRolePolicy: assumedBy("vpc-flow-logs.amazonaws.com", trustScope(this)), tags },
      { parent: this },
    );
    const policy = new aws.iam.RolePolicy(
      `${name}-flow-logs-policy`,
      {
        role: role.id,
        policy: declaredPolicy(
          [
            // AWS's flow-log delivery role, on the one log group.
            {
              Sid: "DeliverFlowLogs",
              Effect: "Allow",
              Action: ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
              Resource: pulumi.interpolate`${flowLogs.arn}:*`,
            },
            // DescribeLogGroups has no resource type in the Service Authorization Reference: on an
            // ARN it matches nothing, so `*` as in AWS's flow-log role (policy/lib/unscopable-actions.json).
            { Sid: "FindLogGroup", Effect: "Allow", Action: ["logs:DescribeLogGroups"], Resource: "*" },
          ],
          { resource: `${name}-flow-logs-policy`, resourceType: ROLE_POLICY_TYPE, parent: this },
        ),
      },
      { parent: this },
    );
    new aws.ec2.FlowLog(
      `${name}-flow-log`,
      {
        vpcId: this.vpcId,
        trafficType: "ALL",
        logDestinationType: "cloud-watch-logs",
        logDestination: flowLogs.arn,
        iamRoleArn: role.arn,
        maxAggregationInterval: 600,
        tags,
      },
      { parent: this, dependsOn: [policy] },
    );
    this.registerOutputs({ vpcId: this.vpcId, privateSubnetIds: this.privateSubnetIds });
  }
}
