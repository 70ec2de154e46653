/**
 * Pulumi mocks that deploy into moto. Each `newResource` creates the resource in moto with the
 * AWS SDK and answers with moto's real ids, ARNs and URLs, so outputs flow into dependents as
 * they would on AWS (a Lambda's environment gets moto's queue URL, an SSM parameter gets the
 * moto instance id). Types moto cannot act on (Lambda, event source mappings, schedules,
 * alarms, log groups, ECR, autoscaling) are answered like the offline plan's mocks and left
 * uncreated; `outcomes()` says which is which.
 */
import {
  AddRoleToInstanceProfileCommand,
  AttachRolePolicyCommand,
  CreateInstanceProfileCommand,
  CreatePolicyCommand,
  CreateRoleCommand,
  IAMClient,
  PutRolePolicyCommand,
  type Tag as IamTag,
} from "@aws-sdk/client-iam";
import * as fs from "node:fs";
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import {
  CreateTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type LocalSecondaryIndex,
  type Projection,
} from "@aws-sdk/client-dynamodb";
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateLaunchTemplateCommand,
  CreateSecurityGroupCommand,
  DescribeImagesCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  EC2Client,
  RunInstancesCommand,
  type IpPermission,
  type RequestLaunchTemplateData,
  type ResourceType,
  type TagSpecification,
  type _InstanceType,
} from "@aws-sdk/client-ec2";
import {
  CreateClusterCommand,
  CreateServiceCommand,
  ECSClient,
  PutClusterCapacityProvidersCommand,
  RegisterTaskDefinitionCommand,
  type CapacityProviderStrategyItem,
  type ContainerDefinition,
  type RegisterTaskDefinitionCommandInput,
} from "@aws-sdk/client-ecs";
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { PutParameterCommand, SSMClient, type ParameterType } from "@aws-sdk/client-ssm";
import { createMocks, MOCK_ACCOUNT_ID, physicalName, shortHash } from "../plan/mocks";
import { plainValue } from "../plan/record";

export interface MotoMocksOptions {
  region: string;
  endpoint: string;
  /** SQS clients only (the `--speed` proxy sits in front of moto's SQS). Default: `endpoint`. */
  sqsEndpoint?: string;
  /** Where each Lambda's bundle is written: `<codeDir>/<logical name>/index.js`. */
  codeDir: string;
}

/** What happened to one registration. Keyed by type and logical name (what the mocks see). */
export interface ProvisionOutcome {
  type: string;
  name: string;
  /** True when the resource now exists in moto. */
  created: boolean;
  /** Why it was left uncreated, or what was adjusted for moto. */
  notes: string[];
}

export interface MotoMocks extends pulumi.runtime.Mocks {
  newResource(args: pulumi.runtime.MockResourceArgs): Promise<Result>;
  call(args: pulumi.runtime.MockCallArgs): Promise<Record<string, unknown>>;
  /** Every custom resource answered so far, in completion order. */
  outcomes(): ProvisionOutcome[];
  /** Every failed resource or call, in order. Pulumi wraps what newResource throws in its own errors. */
  failures(): ProvisionError[];
}

/** A failed AWS call while provisioning, naming the resource. */
export class ProvisionError extends Error {
  constructor(
    readonly resourceType: string,
    readonly logicalName: string,
    cause: unknown,
  ) {
    super(`provisioning ${resourceType} "${logicalName}" in moto failed: ${describe(cause)}`, { cause });
    this.name = "ProvisionError";
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name !== "Error" ? `${err.name}: ` : ""}${err.message}`;
  return String(err);
}

/** The bundle path for a function, shared with the topology builder. */
export function codePathFor(codeDir: string, logicalName: string): string {
  return path.resolve(codeDir, logicalName, "index.js");
}

type Inputs = Record<string, unknown>;
/** What a mock answers for one resource: its id (undefined for components) and its state. */
export type Result = { id: string | undefined; state: Record<string, unknown> };
type Args = pulumi.runtime.MockResourceArgs;

// ---- typed readers for deserialized inputs (the mocks hand us `any`) ----

const str = (o: Inputs, k: string): string | undefined => (typeof o[k] === "string" && o[k] !== "" ? (o[k] as string) : undefined);
const num = (o: Inputs, k: string): number | undefined => {
  const v = o[k];
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};
/** Pulumi-aws takes some booleans as "true"/"false" strings (launch templates). */
const bool = (o: Inputs, k: string): boolean | undefined => {
  const v = o[k];
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  return undefined;
};
const obj = (o: Inputs, k: string): Inputs | undefined =>
  typeof o[k] === "object" && o[k] !== null && !Array.isArray(o[k]) ? (o[k] as Inputs) : undefined;
const objs = (o: Inputs, k: string): Inputs[] => (Array.isArray(o[k]) ? (o[k] as unknown[]).filter((x): x is Inputs => typeof x === "object" && x !== null) : []);
const strs = (o: Inputs, k: string): string[] => (Array.isArray(o[k]) ? (o[k] as unknown[]).filter((x): x is string => typeof x === "string") : []);
const tagMap = (o: Inputs, k = "tags"): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(o, k) ?? {}).filter((e): e is [string, string] => typeof e[1] === "string"));
/** A policy document input may be a JSON string or an object (pulumi-aws's PolicyDocument). */
const policyText = (o: Inputs, k: string): string | undefined => (typeof o[k] === "string" ? (o[k] as string) : o[k] ? JSON.stringify(o[k]) : undefined);
const definedOnly = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** Pulumi-style auto-names, the same deterministic scheme as the offline plan. */
export { physicalName };

const iamTags = (tags: Record<string, string>): IamTag[] | undefined =>
  Object.keys(tags).length === 0 ? undefined : Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));

const ec2Tags = (resourceType: ResourceType, tags: Record<string, string>): TagSpecification[] =>
  Object.keys(tags).length === 0 ? [] : [{ ResourceType: resourceType, Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) }];

// ---- the mocks ----

export function createMotoMocks(opts: MotoMocksOptions): MotoMocks {
  const { region, endpoint } = opts;
  const acct = MOCK_ACCOUNT_ID;
  const credentials = { accessKeyId: "testing", secretAccessKey: "testing" };
  const base = { region, endpoint, credentials };
  const sqs = new SQSClient({ ...base, endpoint: opts.sqsEndpoint ?? endpoint });
  const ec2 = new EC2Client(base);
  const iam = new IAMClient(base);
  const ecs = new ECSClient(base);
  const ddb = new DynamoDBClient(base);
  const ssm = new SSMClient(base);
  // Everything moto cannot act on is answered exactly as the offline plan answers it.
  const planMocks = createMocks(region);
  const outcomes: ProvisionOutcome[] = [];
  const failures: ProvisionError[] = [];
  const failed = (type: string, name: string, err: unknown): ProvisionError => {
    const failure = new ProvisionError(type, name, err);
    failures.push(failure);
    return failure;
  };

  let defaultNetwork: Promise<{ vpcId: string; subnetIds: string[] }> | undefined;
  const network = () =>
    (defaultNetwork ??= (async () => {
      const vpcs = await ec2.send(new DescribeVpcsCommand({ Filters: [{ Name: "is-default", Values: ["true"] }] }));
      const vpcId = vpcs.Vpcs?.[0]?.VpcId;
      if (!vpcId) throw new Error("moto has no default VPC");
      const subnets = await ec2.send(new DescribeSubnetsCommand({ Filters: [{ Name: "vpc-id", Values: [vpcId] }] }));
      const sorted = [...(subnets.Subnets ?? [])].sort((a, b) => String(a.AvailabilityZone).localeCompare(String(b.AvailabilityZone)));
      return { vpcId, subnetIds: sorted.flatMap((s) => (s.SubnetId ? [s.SubnetId] : [])) };
    })());

  let ami: Promise<string> | undefined;
  /**
   * One real moto AMI answers every AMI lookup: moto's RunInstances and templates need one it
   * knows. The newest Amazon Linux 2 x86_64 image, like the SSM "latest" parameters; the name
   * filter keeps the answer small (listing all ~1,000 of moto's images takes seconds).
   */
  const motoAmi = () =>
    (ami ??= (async () => {
      for (const name of ["amzn2-ami-hvm-*-x86_64-gp2", "*"]) {
        const images = await ec2.send(new DescribeImagesCommand({ Owners: ["amazon"], Filters: [{ Name: "name", Values: [name] }, { Name: "architecture", Values: ["x86_64"] }] }));
        const newest = [...(images.Images ?? [])].sort((a, b) => String(b.Name).localeCompare(String(a.Name)))[0]?.ImageId;
        if (newest) return newest;
      }
      throw new Error("moto lists no x86_64 Amazon AMI");
    })());

  const handlers: Record<string, (args: Args, inputs: Inputs, notes: string[]) => Promise<Result>> = {
    "aws:sqs/queue:Queue": async (args, inputs) => {
      const fifo = bool(inputs, "fifoQueue") === true;
      const name = str(inputs, "name") ?? `${physicalName(args)}${fifo ? ".fifo" : ""}`;
      const attribute = (k: string, v: string | number | boolean | undefined) => (v === undefined ? {} : { [k]: String(v) });
      const created = await sqs.send(
        new CreateQueueCommand({
          QueueName: name,
          Attributes: {
            ...attribute("VisibilityTimeout", num(inputs, "visibilityTimeoutSeconds")),
            ...attribute("MessageRetentionPeriod", num(inputs, "messageRetentionSeconds")),
            ...attribute("DelaySeconds", num(inputs, "delaySeconds")),
            ...attribute("ReceiveMessageWaitTimeSeconds", num(inputs, "receiveWaitTimeSeconds")),
            ...attribute("MaximumMessageSize", num(inputs, "maxMessageSize")),
            ...attribute("RedrivePolicy", str(inputs, "redrivePolicy")),
            ...attribute("SqsManagedSseEnabled", bool(inputs, "sqsManagedSseEnabled")),
            ...attribute("FifoQueue", fifo ? true : undefined),
            ...attribute("ContentBasedDeduplication", bool(inputs, "contentBasedDeduplication")),
          },
          tags: tagMap(inputs),
        }),
      );
      const url = created.QueueUrl;
      if (!url) throw new Error("CreateQueue returned no QueueUrl");
      const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }));
      return { id: url, state: { ...inputs, name, url, arn: attrs.Attributes?.QueueArn ?? `arn:aws:sqs:${region}:${acct}:${name}` } };
    },

    "aws:dynamodb/table:Table": async (args, inputs) => {
      const name = physicalName(args);
      const keys = (o: Inputs): KeySchemaElement[] => [
        { AttributeName: str(o, "hashKey"), KeyType: "HASH" },
        ...(str(o, "rangeKey") ? [{ AttributeName: str(o, "rangeKey"), KeyType: "RANGE" as const }] : []),
      ];
      const provisioned = str(inputs, "billingMode") === "PROVISIONED";
      const throughput = (o: Inputs) =>
        provisioned ? { ProvisionedThroughput: { ReadCapacityUnits: num(o, "readCapacity") ?? 1, WriteCapacityUnits: num(o, "writeCapacity") ?? 1 } } : {};
      const projection = (o: Inputs): Projection =>
        definedOnly({ ProjectionType: (str(o, "projectionType") ?? "ALL") as Projection["ProjectionType"], NonKeyAttributes: strs(o, "nonKeyAttributes").length ? strs(o, "nonKeyAttributes") : undefined });
      const gsis: GlobalSecondaryIndex[] = objs(inputs, "globalSecondaryIndexes").map((g) => ({ IndexName: str(g, "name"), KeySchema: keys(g), Projection: projection(g), ...throughput(g) }));
      const lsis: LocalSecondaryIndex[] = objs(inputs, "localSecondaryIndexes").map((l) => ({
        IndexName: str(l, "name"),
        KeySchema: [{ AttributeName: str(inputs, "hashKey"), KeyType: "HASH" }, { AttributeName: str(l, "rangeKey"), KeyType: "RANGE" }],
        Projection: projection(l),
      }));
      const stream = bool(inputs, "streamEnabled") ? { StreamSpecification: { StreamEnabled: true, StreamViewType: str(inputs, "streamViewType") as "NEW_AND_OLD_IMAGES" } } : {};
      const created = await ddb.send(
        new CreateTableCommand({
          TableName: name,
          AttributeDefinitions: objs(inputs, "attributes").map((a): AttributeDefinition => ({ AttributeName: str(a, "name"), AttributeType: str(a, "type") as AttributeDefinition["AttributeType"] })),
          KeySchema: keys(inputs),
          BillingMode: provisioned ? "PROVISIONED" : "PAY_PER_REQUEST",
          ...throughput(inputs),
          ...(gsis.length ? { GlobalSecondaryIndexes: gsis } : {}),
          ...(lsis.length ? { LocalSecondaryIndexes: lsis } : {}),
          ...stream,
          ...(obj(inputs, "serverSideEncryption")?.enabled === true ? { SSESpecification: { Enabled: true } } : {}),
          Tags: Object.entries(tagMap(inputs)).map(([Key, Value]) => ({ Key, Value })),
        }),
      );
      const ttl = obj(inputs, "ttl");
      if (ttl && bool(ttl, "enabled") && str(ttl, "attributeName")) {
        await ddb.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { Enabled: true, AttributeName: str(ttl, "attributeName") } }));
      }
      const table = created.TableDescription;
      return { id: name, state: { ...inputs, name, arn: table?.TableArn ?? `arn:aws:dynamodb:${region}:${acct}:table/${name}`, streamArn: table?.LatestStreamArn ?? "" } };
    },

    "aws:ssm/parameter:Parameter": async (args, inputs) => {
      const name = physicalName(args);
      const created = await ssm.send(
        new PutParameterCommand({
          Name: name,
          Value: str(inputs, "value") ?? String(inputs.value ?? ""),
          Type: (str(inputs, "type") ?? "String") as ParameterType,
          Description: str(inputs, "description"),
          Tags: Object.entries(tagMap(inputs)).map(([Key, Value]) => ({ Key, Value })),
        }),
      );
      return { id: name, state: { ...inputs, name, version: created.Version ?? 1, arn: `arn:aws:ssm:${region}:${acct}:parameter${name.startsWith("/") ? "" : "/"}${name}` } };
    },

    "awsx:ec2:Vpc": async (_args, inputs) => {
      // A remote component (its children never run under mocks): answer with moto's default
      // VPC, because ECS RunTask and RunInstances need subnets that exist in moto.
      const { vpcId, subnetIds } = await network();
      const azs = Math.max(1, Math.min(num(inputs, "numberOfAvailabilityZones") ?? 2, Math.floor(subnetIds.length / 2) || 1));
      const privateSubnetIds = subnetIds.slice(0, azs);
      const publicSubnetIds = subnetIds.length >= 2 * azs ? subnetIds.slice(azs, 2 * azs) : privateSubnetIds;
      return { id: undefined, state: { vpcId, privateSubnetIds, publicSubnetIds, isolatedSubnetIds: [] } };
    },

    "aws:ec2/securityGroup:SecurityGroup": async (args, inputs, notes) => {
      const name = physicalName(args);
      const vpcId = str(inputs, "vpcId") ?? (await network()).vpcId;
      const created = await ec2.send(
        new CreateSecurityGroupCommand({ GroupName: name, Description: str(inputs, "description") ?? "Managed by Pulumi", VpcId: vpcId, TagSpecifications: ec2Tags("security-group", tagMap(inputs)) }),
      );
      const id = created.GroupId;
      if (!id) throw new Error("CreateSecurityGroup returned no GroupId");
      const ingress = objs(inputs, "ingress").map(ipPermission);
      if (ingress.length) await ec2.send(new AuthorizeSecurityGroupIngressCommand({ GroupId: id, IpPermissions: ingress }));
      // moto enforces no network rules; the default allow-all egress stands in for the program's.
      if (objs(inputs, "egress").length) notes.push("egress rules recorded only (moto keeps its default allow-all egress)");
      return { id, state: { ...inputs, name, vpcId, ownerId: acct, arn: `arn:aws:ec2:${region}:${acct}:security-group/${id}` } };
    },

    "aws:ec2/instance:Instance": async (_args, inputs, notes) => {
      const tags = tagMap(inputs);
      const volumeTags = tagMap(inputs, "volumeTags");
      const metadata = obj(inputs, "metadataOptions");
      const profile = str(inputs, "iamInstanceProfile");
      const userData = str(inputs, "userData");
      if (obj(inputs, "rootBlockDevice")) notes.push("rootBlockDevice recorded only (its device name depends on the real AMI)");
      const run = await ec2.send(
        new RunInstancesCommand({
          ImageId: str(inputs, "ami") ?? (await motoAmi()),
          InstanceType: (str(inputs, "instanceType") ?? "t3.micro") as _InstanceType,
          MinCount: 1,
          MaxCount: 1,
          SubnetId: str(inputs, "subnetId") ?? (await network()).subnetIds[0],
          SecurityGroupIds: strs(inputs, "vpcSecurityGroupIds").length ? strs(inputs, "vpcSecurityGroupIds") : undefined,
          IamInstanceProfile: profile ? { Name: profile } : undefined,
          KeyName: str(inputs, "keyName"),
          UserData: userData ? Buffer.from(userData).toString("base64") : str(inputs, "userDataBase64"),
          DisableApiTermination: bool(inputs, "disableApiTermination"),
          Monitoring: bool(inputs, "monitoring") !== undefined ? { Enabled: bool(inputs, "monitoring") } : undefined,
          MetadataOptions: metadata
            ? definedOnly({ HttpTokens: str(metadata, "httpTokens") as "required", HttpEndpoint: str(metadata, "httpEndpoint") as "enabled", HttpPutResponseHopLimit: num(metadata, "httpPutResponseHopLimit") })
            : undefined,
          TagSpecifications: [...ec2Tags("instance", tags), ...ec2Tags("volume", volumeTags)],
        }),
      );
      const instance = run.Instances?.[0];
      const id = instance?.InstanceId;
      if (!id) throw new Error("RunInstances returned no instance");
      return {
        id,
        state: {
          ...inputs,
          arn: `arn:aws:ec2:${region}:${acct}:instance/${id}`,
          privateIp: instance.PrivateIpAddress ?? "",
          privateDns: instance.PrivateDnsName ?? "",
          publicIp: instance.PublicIpAddress ?? "",
          availabilityZone: instance.Placement?.AvailabilityZone ?? "",
          // moto starts instances instantly; AWS reports running once `pulumi up` returns.
          instanceState: "running",
        },
      };
    },

    "aws:ec2/launchTemplate:LaunchTemplate": async (args, inputs) => {
      const name = physicalName(args);
      const created = await ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: name,
          VersionDescription: str(inputs, "description"),
          LaunchTemplateData: launchTemplateData(inputs),
          TagSpecifications: ec2Tags("launch-template", tagMap(inputs)),
        }),
      );
      const lt = created.LaunchTemplate;
      const id = lt?.LaunchTemplateId;
      if (!id) throw new Error("CreateLaunchTemplate returned no LaunchTemplateId");
      return { id, state: { ...inputs, name, arn: `arn:aws:ec2:${region}:${acct}:launch-template/${id}`, latestVersion: lt.LatestVersionNumber ?? 1, defaultVersion: lt.DefaultVersionNumber ?? 1 } };
    },

    "aws:ecs/cluster:Cluster": async (args, inputs) => {
      const name = physicalName(args);
      const created = await ecs.send(
        new CreateClusterCommand({
          clusterName: name,
          settings: objs(inputs, "settings").map((s) => ({ name: str(s, "name") as "containerInsights", value: str(s, "value") })),
          tags: ecsTags(inputs),
        }),
      );
      const arn = created.cluster?.clusterArn ?? `arn:aws:ecs:${region}:${acct}:cluster/${name}`;
      return { id: arn, state: { ...inputs, name, arn } };
    },

    "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders": async (_args, inputs) => {
      const cluster = str(inputs, "clusterName");
      await ecs.send(
        new PutClusterCapacityProvidersCommand({
          cluster,
          capacityProviders: strs(inputs, "capacityProviders"),
          defaultCapacityProviderStrategy: capacityStrategy(objs(inputs, "defaultCapacityProviderStrategies")),
        }),
      );
      return { id: cluster, state: { ...inputs } };
    },

    "aws:ecs/taskDefinition:TaskDefinition": async (args, inputs, notes) => {
      const family = str(inputs, "family") ?? physicalName(args);
      const { containers, notes: memoryNotes } = containersForMoto(str(inputs, "containerDefinitions") ?? "[]", num(inputs, "memory"));
      notes.push(...memoryNotes);
      const runtime = obj(inputs, "runtimePlatform");
      const request: RegisterTaskDefinitionCommandInput = {
        family,
        containerDefinitions: containers,
        cpu: str(inputs, "cpu") ?? (num(inputs, "cpu") !== undefined ? String(num(inputs, "cpu")) : undefined),
        memory: str(inputs, "memory") ?? (num(inputs, "memory") !== undefined ? String(num(inputs, "memory")) : undefined),
        networkMode: str(inputs, "networkMode") as RegisterTaskDefinitionCommandInput["networkMode"],
        requiresCompatibilities: strs(inputs, "requiresCompatibilities") as RegisterTaskDefinitionCommandInput["requiresCompatibilities"],
        executionRoleArn: str(inputs, "executionRoleArn"),
        taskRoleArn: str(inputs, "taskRoleArn"),
        runtimePlatform: runtime
          ? definedOnly({ cpuArchitecture: str(runtime, "cpuArchitecture") as "X86_64", operatingSystemFamily: str(runtime, "operatingSystemFamily") as "LINUX" })
          : undefined,
        volumes: objs(inputs, "volumes").map((v) => definedOnly({ name: str(v, "name"), host: str(v, "hostPath") ? { sourcePath: str(v, "hostPath") } : undefined })),
        tags: ecsTags(inputs),
      };
      const created = await ecs.send(new RegisterTaskDefinitionCommand(request));
      const td = created.taskDefinition;
      const arn = td?.taskDefinitionArn;
      if (!arn) throw new Error("RegisterTaskDefinition returned no taskDefinitionArn");
      return { id: family, state: { ...inputs, family, arn, arnWithoutRevision: arn.replace(/:\d+$/, ""), revision: td.revision ?? 1 } };
    },

    "aws:ecs/service:Service": async (args, inputs) => {
      const name = physicalName(args);
      const net = obj(inputs, "networkConfiguration");
      const breaker = obj(inputs, "deploymentCircuitBreaker");
      const strategy = capacityStrategy(objs(inputs, "capacityProviderStrategies"));
      const created = await ecs.send(
        new CreateServiceCommand({
          serviceName: name,
          cluster: str(inputs, "cluster"),
          taskDefinition: str(inputs, "taskDefinition"),
          desiredCount: num(inputs, "desiredCount") ?? 0,
          ...(strategy.length ? { capacityProviderStrategy: strategy } : { launchType: (str(inputs, "launchType") ?? "FARGATE") as "FARGATE" }),
          networkConfiguration: net
            ? {
                awsvpcConfiguration: {
                  subnets: strs(net, "subnets"),
                  securityGroups: strs(net, "securityGroups"),
                  assignPublicIp: bool(net, "assignPublicIp") ? "ENABLED" : "DISABLED",
                },
              }
            : undefined,
          deploymentConfiguration: definedOnly({
            maximumPercent: num(inputs, "deploymentMaximumPercent"),
            minimumHealthyPercent: num(inputs, "deploymentMinimumHealthyPercent"),
            deploymentCircuitBreaker: breaker ? { enable: bool(breaker, "enable") ?? false, rollback: bool(breaker, "rollback") ?? false } : undefined,
          }),
          propagateTags: str(inputs, "propagateTags") as "SERVICE",
          enableECSManagedTags: bool(inputs, "enableEcsManagedTags"),
          tags: ecsTags(inputs),
        }),
      );
      const arn = created.service?.serviceArn ?? `arn:aws:ecs:${region}:${acct}:service/${name}`;
      return { id: arn, state: { ...inputs, name, arn } };
    },

    "aws:iam/role:Role": async (args, inputs) => {
      const name = physicalName(args);
      const created = await iam.send(
        new CreateRoleCommand({
          RoleName: name,
          AssumeRolePolicyDocument: policyText(inputs, "assumeRolePolicy"),
          Path: str(inputs, "path"),
          Description: str(inputs, "description"),
          MaxSessionDuration: num(inputs, "maxSessionDuration"),
          PermissionsBoundary: str(inputs, "permissionsBoundary"),
          Tags: iamTags(tagMap(inputs)),
        }),
      );
      for (const p of objs(inputs, "inlinePolicies")) {
        const policyName = str(p, "name");
        if (policyName) await iam.send(new PutRolePolicyCommand({ RoleName: name, PolicyName: policyName, PolicyDocument: policyText(p, "policy") }));
      }
      for (const policyArn of strs(inputs, "managedPolicyArns")) await iam.send(new AttachRolePolicyCommand({ RoleName: name, PolicyArn: policyArn }));
      return { id: name, state: { ...inputs, name, arn: created.Role?.Arn ?? `arn:aws:iam::${acct}:role/${name}`, uniqueId: created.Role?.RoleId ?? "" } };
    },

    "aws:iam/rolePolicy:RolePolicy": async (args, inputs) => {
      const name = physicalName(args);
      const role = roleName(str(inputs, "role"));
      await iam.send(new PutRolePolicyCommand({ RoleName: role, PolicyName: name, PolicyDocument: policyText(inputs, "policy") }));
      return { id: `${role}:${name}`, state: { ...inputs, name } };
    },

    "aws:iam/policy:Policy": async (args, inputs) => {
      const name = physicalName(args);
      const created = await iam.send(
        new CreatePolicyCommand({
          PolicyName: name,
          PolicyDocument: policyText(inputs, "policy"),
          Path: str(inputs, "path"),
          Description: str(inputs, "description"),
          Tags: iamTags(tagMap(inputs)),
        }),
      );
      const arn = created.Policy?.Arn ?? `arn:aws:iam::${acct}:policy/${name}`;
      return { id: arn, state: { ...inputs, name, arn, policyId: created.Policy?.PolicyId ?? "" } };
    },

    "aws:iam/instanceProfile:InstanceProfile": async (args, inputs) => {
      const name = physicalName(args);
      const created = await iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: name, Path: str(inputs, "path"), Tags: iamTags(tagMap(inputs)) }));
      const role = str(inputs, "role");
      if (role) await iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: roleName(role) }));
      const profile = created.InstanceProfile;
      return { id: name, state: { ...inputs, name, arn: profile?.Arn ?? `arn:aws:iam::${acct}:instance-profile/${name}`, uniqueId: profile?.InstanceProfileId ?? "" } };
    },
  };

  /** Attachments of AWS-managed policies need moto's MOTO_IAM_LOAD_MANAGED_POLICIES; without it they stay uncreated. */
  async function attachRolePolicy(args: Args, inputs: Inputs, outcome: ProvisionOutcome): Promise<Result> {
    const policyArn = str(inputs, "policyArn");
    const role = roleName(str(inputs, "role"));
    try {
      await iam.send(new AttachRolePolicyCommand({ RoleName: role, PolicyArn: policyArn }));
      outcome.created = true;
    } catch (err) {
      if (!policyArn?.startsWith("arn:aws:iam::aws:policy/") || !["NoSuchEntity", "NoSuchEntityException"].includes((err as Error).name)) throw err;
      outcome.notes.push(`AWS-managed ${policyArn} is not loaded in moto (start it with MOTO_IAM_LOAD_MANAGED_POLICIES=true)`);
    }
    return { id: `${role}-${shortHash(args.name).slice(0, 20)}`, state: { ...inputs } };
  }

  /** Lambda is not created in moto (it cannot run it): the bundle goes to disk for the local runtime. */
  async function lambdaFunction(args: Args, outcome: ProvisionOutcome): Promise<Result> {
    const target = codePathFor(opts.codeDir, args.name);
    const code = await archiveIndexJs(args.inputs.code);
    if (code === undefined) throw new Error("the code archive has no index.js");
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    await fs.promises.writeFile(target, code);
    outcome.notes.push(`bundle written to ${target}`);
    return planMocks.newResource(args) as Result;
  }

  return {
    async newResource(args: Args): Promise<Result> {
      if (!args.custom && args.type !== "awsx:ec2:Vpc" && args.type !== "awsx:ecr:Image") return { id: undefined, state: {} };
      const outcome: ProvisionOutcome = { type: args.type, name: args.name, created: false, notes: [] };
      try {
        let result: Result;
        const handler = handlers[args.type];
        if (handler) {
          // Secrets arrive wrapped; moto needs the plain values.
          const inputs = await plainValue(args.inputs as Inputs);
          result = await handler(args, inputs, outcome.notes);
          outcome.created = args.custom === true;
        } else if (args.type === "aws:iam/rolePolicyAttachment:RolePolicyAttachment") {
          result = await attachRolePolicy(args, await plainValue(args.inputs as Inputs), outcome);
        } else if (args.type === "aws:lambda/function:Function") {
          result = await lambdaFunction(args, outcome);
        } else {
          // Event source mappings, schedules, alarms, log groups, ECR, autoscaling, the
          // RedriveAllowPolicy (moto can't read it back) and awsx:ecr:Image: recorded only.
          result = (await planMocks.newResource(args)) as Result;
        }
        if (args.custom) outcomes.push(outcome);
        return result;
      } catch (err) {
        throw failed(args.type, args.name, err);
      }
    },

    async call(args: pulumi.runtime.MockCallArgs): Promise<Record<string, unknown>> {
      if (args.token === "aws:ssm/getParameter:getParameter") {
        const name = String((args.inputs as Inputs).name);
        try {
          const value = await motoAmi();
          return { ...(args.inputs as Inputs), id: name, name, arn: `arn:aws:ssm:${region}::parameter${name}`, type: "String", value, insecureValue: value, version: 1 };
        } catch (err) {
          throw failed(args.token, name, err);
        }
      }
      return planMocks.call(args) as Record<string, unknown>;
    },

    outcomes: () => [...outcomes],
    failures: () => [...failures],
  };
}

/** RolePolicy/InstanceProfile/Attachment take a role name, but pulumi also accepts the ARN. */
function roleName(role: string | undefined): string | undefined {
  return role?.startsWith("arn:") ? role.slice(role.lastIndexOf("/") + 1) : role;
}

function ecsTags(inputs: Inputs): Array<{ key: string; value: string }> {
  return Object.entries(tagMap(inputs)).map(([key, value]) => ({ key, value }));
}

function capacityStrategy(items: Inputs[]): CapacityProviderStrategyItem[] {
  return items.map((s) => definedOnly({ capacityProvider: str(s, "capacityProvider"), weight: num(s, "weight"), base: num(s, "base") }));
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

/**
 * moto's RunTask answers 500 unless every container sets `memory`. AWS accepts a task-level
 * memory alone, so a container without it gets the task's, in moto only (the recorded inputs
 * keep the program's definitions).
 */
export function containersForMoto(containerDefinitionsJson: string, taskMemory: number | undefined): { containers: ContainerDefinition[]; notes: string[] } {
  const parsed: unknown = JSON.parse(containerDefinitionsJson);
  if (!Array.isArray(parsed)) throw new Error("containerDefinitions is not a JSON array");
  const notes: string[] = [];
  const containers = (parsed as ContainerDefinition[]).map((c) => {
    if (c.memory !== undefined || taskMemory === undefined) return c;
    notes.push(`container ${c.name ?? "?"}: memory set to the task's ${taskMemory} MiB for moto (its RunTask needs a container-level memory)`);
    return { ...c, memory: taskMemory };
  });
  return { containers, notes };
}

/**
 * Maps pulumi-aws's LaunchTemplate inputs (camelCase, some booleans as strings, tag maps) to
 * the EC2 API's LaunchTemplateData. Only fields the API shares with the provider are mapped.
 */
export function launchTemplateData(inputs: Inputs): RequestLaunchTemplateData {
  const profile = obj(inputs, "iamInstanceProfile");
  const market = obj(inputs, "instanceMarketOptions");
  const spot = market ? obj(market, "spotOptions") : undefined;
  const metadata = obj(inputs, "metadataOptions");
  const monitoring = obj(inputs, "monitoring");
  const sgIds = strs(inputs, "vpcSecurityGroupIds");
  return definedOnly({
    ImageId: str(inputs, "imageId"),
    InstanceType: str(inputs, "instanceType") as _InstanceType | undefined,
    KeyName: str(inputs, "keyName"),
    // pulumi takes user data already base64-encoded for launch templates.
    UserData: str(inputs, "userData"),
    IamInstanceProfile: profile ? definedOnly({ Arn: str(profile, "arn"), Name: str(profile, "name") }) : undefined,
    SecurityGroupIds: sgIds.length ? sgIds : undefined,
    BlockDeviceMappings: objs(inputs, "blockDeviceMappings").map((m) => {
      const ebs = obj(m, "ebs");
      return definedOnly({
        DeviceName: str(m, "deviceName"),
        Ebs: ebs
          ? definedOnly({
              DeleteOnTermination: bool(ebs, "deleteOnTermination"),
              Encrypted: bool(ebs, "encrypted"),
              VolumeSize: num(ebs, "volumeSize"),
              VolumeType: str(ebs, "volumeType") as "gp3" | undefined,
              Iops: num(ebs, "iops"),
              Throughput: num(ebs, "throughput"),
            })
          : undefined,
      });
    }),
    NetworkInterfaces: objs(inputs, "networkInterfaces").map((n) =>
      definedOnly({
        AssociatePublicIpAddress: bool(n, "associatePublicIpAddress"),
        DeleteOnTermination: bool(n, "deleteOnTermination"),
        DeviceIndex: num(n, "deviceIndex"),
        SubnetId: str(n, "subnetId"),
        Groups: strs(n, "securityGroups").length ? strs(n, "securityGroups") : undefined,
      }),
    ),
    InstanceMarketOptions: market
      ? definedOnly({
          MarketType: str(market, "marketType") as "spot" | undefined,
          SpotOptions: spot
            ? definedOnly({
                InstanceInterruptionBehavior: str(spot, "instanceInterruptionBehavior") as "terminate" | undefined,
                SpotInstanceType: str(spot, "spotInstanceType") as "one-time" | undefined,
                MaxPrice: str(spot, "maxPrice"),
              })
            : undefined,
        })
      : undefined,
    MetadataOptions: metadata
      ? definedOnly({
          HttpEndpoint: str(metadata, "httpEndpoint") as "enabled" | undefined,
          HttpTokens: str(metadata, "httpTokens") as "required" | undefined,
          HttpPutResponseHopLimit: num(metadata, "httpPutResponseHopLimit"),
          InstanceMetadataTags: str(metadata, "instanceMetadataTags") as "enabled" | undefined,
        })
      : undefined,
    Monitoring: monitoring ? { Enabled: bool(monitoring, "enabled") } : undefined,
    TagSpecifications: objs(inputs, "tagSpecifications").flatMap((t) => ec2Tags(str(t, "resourceType") as ResourceType, tagMap(t))),
  });
}

/** The `index.js` text of a deserialized AssetArchive (whose `assets` and `text` are promises). */
async function archiveIndexJs(code: unknown): Promise<string | undefined> {
  const archive = code as { assets?: Promise<Record<string, unknown>> } | undefined;
  const assets = archive?.assets ? await archive.assets : undefined;
  const asset = assets?.["index.js"] as { text?: Promise<string>; path?: Promise<string> } | undefined;
  if (asset?.text) return asset.text;
  if (asset?.path) return fs.promises.readFile(await asset.path, "utf8");
  return undefined;
}
