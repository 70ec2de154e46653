/**
 * EC2: security groups, instances and launch templates, created in moto's default VPC; and
 * awsx's Vpc component, answered with that VPC (its children never run under mocks).
 */
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateLaunchTemplateCommand,
  CreateSecurityGroupCommand,
  RunInstancesCommand,
  type IpPermission,
  type RequestLaunchTemplateData,
  type ResourceType,
  type RunInstancesCommandInput,
  type TagSpecification,
  type _InstanceType,
} from "@aws-sdk/client-ec2";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, definedOnly, num, obj, objs, pascal, str, strs, tagMap, type Inputs } from "./inputs";

const ec2Tags = (resourceType: ResourceType, tags: Record<string, string>): TagSpecification[] =>
  Object.keys(tags).length === 0 ? [] : [{ ResourceType: resourceType, Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) }];

/** A remote component: moto's default VPC, because ECS RunTask and RunInstances need subnets that exist in moto. */
async function vpc(ctx: ProvisionContext, _args: Args, inputs: Inputs): Promise<Result> {
  const { vpcId, subnetIds } = await ctx.defaultNetwork();
  const named = strs(inputs, "availabilityZoneNames").length;
  const wanted = named > 0 ? named : (num(inputs, "numberOfAvailabilityZones") ?? 2);
  const azs = Math.max(1, Math.min(wanted, Math.floor(subnetIds.length / 2) || 1));
  const privateSubnetIds = subnetIds.slice(0, azs);
  const publicSubnetIds = subnetIds.length >= 2 * azs ? subnetIds.slice(azs, 2 * azs) : privateSubnetIds;
  return { id: undefined, state: { vpcId, privateSubnetIds, publicSubnetIds, isolatedSubnetIds: [] } };
}

async function securityGroup(ctx: ProvisionContext, args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  const name = physicalName(args);
  const vpcId = str(inputs, "vpcId") ?? (await ctx.defaultNetwork()).vpcId;
  const created = await ctx.ec2.send(
    new CreateSecurityGroupCommand({
      GroupName: name,
      Description: str(inputs, "description") ?? "Managed by Pulumi",
      VpcId: vpcId,
      TagSpecifications: ec2Tags("security-group", tagMap(inputs)),
    }),
  );
  const id = created.GroupId;
  if (!id) throw new Error("CreateSecurityGroup returned no GroupId");
  const ingress = objs(inputs, "ingress").map(ipPermission);
  if (ingress.length) await ctx.ec2.send(new AuthorizeSecurityGroupIngressCommand({ GroupId: id, IpPermissions: ingress }));
  // moto enforces no network rules; the default allow-all egress stands in for the program's.
  if (objs(inputs, "egress").length) notes.push("egress rules recorded only (moto keeps its default allow-all egress)");
  return { id, state: { ...inputs, name, vpcId, ownerId: ctx.account, arn: `arn:aws:ec2:${ctx.region}:${ctx.account}:security-group/${id}` } };
}

function ipPermission(rule: Inputs): IpPermission {
  return definedOnly({
    IpProtocol: str(rule, "protocol") ?? "-1",
    FromPort: num(rule, "fromPort"),
    ToPort: num(rule, "toPort"),
    IpRanges: strs(rule, "cidrBlocks").map((CidrIp) => ({ CidrIp, Description: str(rule, "description") })),
    Ipv6Ranges: strs(rule, "ipv6CidrBlocks").map((CidrIpv6) => ({ CidrIpv6 })),
    UserIdGroupPairs: strs(rule, "securityGroups").map((GroupId) => ({ GroupId })),
  });
}

async function instance(ctx: ProvisionContext, _args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  if (obj(inputs, "rootBlockDevice")) notes.push("rootBlockDevice recorded only (its device name depends on the real AMI)");
  const run = await ctx.ec2.send(new RunInstancesCommand(await runInstancesInput(ctx, inputs)));
  const launched = run.Instances?.[0];
  const id = launched?.InstanceId;
  if (!id) throw new Error("RunInstances returned no instance");
  return {
    id,
    state: {
      ...inputs,
      arn: `arn:aws:ec2:${ctx.region}:${ctx.account}:instance/${id}`,
      privateIp: launched.PrivateIpAddress ?? "",
      privateDns: launched.PrivateDnsName ?? "",
      publicIp: launched.PublicIpAddress ?? "",
      availabilityZone: launched.Placement?.AvailabilityZone ?? "",
      // moto starts instances instantly; AWS reports running once `pulumi up` returns.
      instanceState: "running",
    },
  };
}

/** One instance from pulumi-aws's Instance inputs; a missing AMI or subnet is moto's. */
async function runInstancesInput(ctx: ProvisionContext, inputs: Inputs): Promise<RunInstancesCommandInput> {
  const metadata = obj(inputs, "metadataOptions");
  const profile = str(inputs, "iamInstanceProfile");
  const userData = str(inputs, "userData");
  return {
    ImageId: str(inputs, "ami") ?? (await ctx.motoAmi()),
    InstanceType: (str(inputs, "instanceType") ?? "t3.micro") as _InstanceType,
    MinCount: 1,
    MaxCount: 1,
    SubnetId: str(inputs, "subnetId") ?? (await ctx.defaultNetwork()).subnetIds[0],
    SecurityGroupIds: strs(inputs, "vpcSecurityGroupIds").length ? strs(inputs, "vpcSecurityGroupIds") : undefined,
    IamInstanceProfile: profile ? { Name: profile } : undefined,
    ...pascal(str, inputs, ["keyName"]),
    UserData: userData ? Buffer.from(userData).toString("base64") : str(inputs, "userDataBase64"),
    ...pascal(bool, inputs, ["disableApiTermination"]),
    Monitoring: bool(inputs, "monitoring") !== undefined ? { Enabled: bool(inputs, "monitoring") } : undefined,
    MetadataOptions: metadata ? metadataOptions(metadata, ["httpTokens", "httpEndpoint"]) : undefined,
    TagSpecifications: [...ec2Tags("instance", tagMap(inputs)), ...ec2Tags("volume", tagMap(inputs, "volumeTags"))],
  };
}

/**
 * EC2 resolves a `resolve:ssm:` image at each launch; moto does not, so the local template names
 * moto's AMI instead, the one the SSM parameter would resolve to here.
 */
async function withLocalAmi(ctx: ProvisionContext, data: RequestLaunchTemplateData): Promise<RequestLaunchTemplateData> {
  return data.ImageId?.startsWith("resolve:ssm:") ? { ...data, ImageId: await ctx.motoAmi() } : data;
}

async function launchTemplate(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.ec2.send(
    new CreateLaunchTemplateCommand({
      LaunchTemplateName: name,
      VersionDescription: str(inputs, "description"),
      LaunchTemplateData: await withLocalAmi(ctx, launchTemplateData(inputs)),
      TagSpecifications: ec2Tags("launch-template", tagMap(inputs)),
    }),
  );
  const lt = created.LaunchTemplate;
  const id = lt?.LaunchTemplateId;
  if (!id) throw new Error("CreateLaunchTemplate returned no LaunchTemplateId");
  return {
    id,
    state: {
      ...inputs,
      name,
      arn: `arn:aws:ec2:${ctx.region}:${ctx.account}:launch-template/${id}`,
      latestVersion: lt.LatestVersionNumber ?? 1,
      defaultVersion: lt.DefaultVersionNumber ?? 1,
    },
  };
}

/**
 * Maps pulumi-aws's LaunchTemplate inputs (camelCase, some booleans as strings, tag maps) to
 * the EC2 API's LaunchTemplateData. Only fields the API shares with the provider are mapped.
 */
export function launchTemplateData(inputs: Inputs): RequestLaunchTemplateData {
  const profile = obj(inputs, "iamInstanceProfile");
  const market = obj(inputs, "instanceMarketOptions");
  const monitoring = obj(inputs, "monitoring");
  const sgIds = strs(inputs, "vpcSecurityGroupIds");
  // The SDK's unions of literals (instance and volume types…); the provider has already checked the program's strings.
  return {
    // pulumi takes user data already base64-encoded for launch templates.
    ...pascal(str, inputs, ["imageId", "instanceType", "keyName", "userData"]),
    ...(profile ? { IamInstanceProfile: pascal(str, profile, ["arn", "name"]) } : {}),
    ...(sgIds.length ? { SecurityGroupIds: sgIds } : {}),
    BlockDeviceMappings: objs(inputs, "blockDeviceMappings").map((m) => ({
      ...pascal(str, m, ["deviceName"]),
      ...(obj(m, "ebs") ? { Ebs: ebs(obj(m, "ebs")) } : {}),
    })),
    NetworkInterfaces: objs(inputs, "networkInterfaces").map((n) => ({
      ...pascal(bool, n, ["associatePublicIpAddress", "deleteOnTermination"]),
      ...pascal(num, n, ["deviceIndex"]),
      ...pascal(str, n, ["subnetId"]),
      ...(strs(n, "securityGroups").length ? { Groups: strs(n, "securityGroups") } : {}),
    })),
    ...(market ? { InstanceMarketOptions: marketOptions(market) } : {}),
    ...(obj(inputs, "metadataOptions") ? { MetadataOptions: metadataOptions(obj(inputs, "metadataOptions")) } : {}),
    ...(monitoring ? { Monitoring: pascal(bool, monitoring, ["enabled"]) } : {}),
    TagSpecifications: objs(inputs, "tagSpecifications").flatMap((t) => ec2Tags(str(t, "resourceType") as ResourceType, tagMap(t))),
  } as RequestLaunchTemplateData;
}

function ebs(o: Inputs | undefined): Record<string, unknown> {
  return {
    ...pascal(bool, o, ["deleteOnTermination", "encrypted"]),
    ...pascal(num, o, ["volumeSize", "iops", "throughput"]),
    ...pascal(str, o, ["volumeType"]),
  };
}

function marketOptions(market: Inputs): Record<string, unknown> {
  const spot = obj(market, "spotOptions");
  return {
    ...pascal(str, market, ["marketType"]),
    ...(spot ? { SpotOptions: pascal(str, spot, ["instanceInterruptionBehavior", "spotInstanceType", "maxPrice"]) } : {}),
  };
}

/** An instance's or a template's metadata options (the instance's takes no InstanceMetadataTags). */
function metadataOptions(metadata: Inputs | undefined, keys = ["httpEndpoint", "httpTokens", "instanceMetadataTags"]): Record<string, unknown> {
  return { ...pascal(str, metadata, keys), ...pascal(num, metadata, ["httpPutResponseHopLimit"]) };
}

export const ec2Provisioners: Provisioners = {
  "awsx:ec2:Vpc": creates(vpc),
  "aws:ec2/securityGroup:SecurityGroup": creates(securityGroup),
  "aws:ec2/instance:Instance": creates(instance),
  "aws:ec2/launchTemplate:LaunchTemplate": creates(launchTemplate),
};
