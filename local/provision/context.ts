/**
 * What every provisioner shares: the AWS clients pointed at moto, the account and region, the
 * lookups several of them need (moto's default network, one moto AMI), the offline plan's mocks
 * for what is only recorded, and the log of outcomes and failures the entry answers from.
 */
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DescribeImagesCommand, DescribeSubnetsCommand, DescribeVpcsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { ECSClient } from "@aws-sdk/client-ecs";
import { IAMClient } from "@aws-sdk/client-iam";
import { SNSClient } from "@aws-sdk/client-sns";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import type * as pulumi from "@pulumi/pulumi";
import { createMocks, MOCK_ACCOUNT_ID } from "../../plan/mocks";
import { plainValue } from "../../plan/record";
import type { Inputs } from "./inputs";

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

/** What a mock answers for one resource: its id (undefined for components) and its state. */
export type Result = { id: string | undefined; state: Record<string, unknown> };
export type Args = pulumi.runtime.MockResourceArgs;

export interface DefaultNetwork {
  vpcId: string;
  /** Sorted by availability zone. */
  subnetIds: string[];
}

export interface ProvisionContext {
  region: string;
  account: string;
  codeDir: string;
  sqs: SQSClient;
  ec2: EC2Client;
  iam: IAMClient;
  ecs: ECSClient;
  ddb: DynamoDBClient;
  ssm: SSMClient;
  sns: SNSClient;
  cloudwatch: CloudWatchClient;
  autoscaling: AutoScalingClient;
  events: EventBridgeClient;
  /** Everything moto cannot act on is answered exactly as the offline plan answers it. */
  planMocks: pulumi.runtime.Mocks;
  /** moto's default VPC and its subnets (looked up once). */
  defaultNetwork(): Promise<DefaultNetwork>;
  /** One AMI moto knows (looked up once); see `newestAmazonAmi`. */
  motoAmi(): Promise<string>;
}

export function createContext(opts: MotoMocksOptions): ProvisionContext {
  const { region, endpoint } = opts;
  const credentials = { accessKeyId: "testing", secretAccessKey: "testing" };
  const base = { region, endpoint, credentials };
  const ec2 = new EC2Client(base);
  return {
    region,
    account: MOCK_ACCOUNT_ID,
    codeDir: opts.codeDir,
    sqs: new SQSClient({ ...base, endpoint: opts.sqsEndpoint ?? endpoint }),
    ec2,
    iam: new IAMClient(base),
    ecs: new ECSClient(base),
    ddb: new DynamoDBClient(base),
    ssm: new SSMClient(base),
    sns: new SNSClient(base),
    cloudwatch: new CloudWatchClient(base),
    autoscaling: new AutoScalingClient(base),
    events: new EventBridgeClient(base),
    planMocks: createMocks(region),
    defaultNetwork: once(() => defaultNetwork(ec2)),
    motoAmi: once(() => newestAmazonAmi(ec2)),
  };
}

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}

async function defaultNetwork(ec2: EC2Client): Promise<DefaultNetwork> {
  const vpcs = await ec2.send(new DescribeVpcsCommand({ Filters: [{ Name: "is-default", Values: ["true"] }] }));
  const vpcId = vpcs.Vpcs?.[0]?.VpcId;
  if (!vpcId) throw new Error("moto has no default VPC");
  const subnets = await ec2.send(new DescribeSubnetsCommand({ Filters: [{ Name: "vpc-id", Values: [vpcId] }] }));
  const sorted = [...(subnets.Subnets ?? [])].sort((a, b) => String(a.AvailabilityZone).localeCompare(String(b.AvailabilityZone)));
  return { vpcId, subnetIds: sorted.flatMap((s) => (s.SubnetId ? [s.SubnetId] : [])) };
}

/**
 * One real moto AMI answers every AMI lookup: moto's RunInstances and templates need one it
 * knows. The newest Amazon Linux 2 x86_64 image, like the SSM "latest" parameters; the name
 * filter keeps the answer small (listing all ~1,000 of moto's images takes seconds).
 */
async function newestAmazonAmi(ec2: EC2Client): Promise<string> {
  for (const name of ["amzn2-ami-hvm-*-x86_64-gp2", "*"]) {
    const images = await ec2.send(
      new DescribeImagesCommand({
        Owners: ["amazon"],
        Filters: [
          { Name: "name", Values: [name] },
          { Name: "architecture", Values: ["x86_64"] },
        ],
      }),
    );
    const newest = [...(images.Images ?? [])].sort((a, b) => String(b.Name).localeCompare(String(a.Name)))[0]?.ImageId;
    if (newest) return newest;
  }
  throw new Error("moto lists no x86_64 Amazon AMI");
}

// ---- provisioners ----

/** Answers one registration of its type; marks `outcome.created` when the resource now exists in moto. */
export type Provisioner = (ctx: ProvisionContext, args: Args, outcome: ProvisionOutcome) => Promise<Result>;

/** Each service's module exports one of these: Pulumi type token → provisioner. */
export type Provisioners = Record<string, Provisioner>;

/** Answers one mocked provider function (a data source such as `aws.ssm.getParameter`). */
export type CallAnswer = (ctx: ProvisionContext, args: pulumi.runtime.MockCallArgs) => Promise<Record<string, unknown>>;

/** What most provisioners do: create the resource in moto from its plain inputs, noting adjustments. */
export type Create = (ctx: ProvisionContext, args: Args, inputs: Inputs, notes: string[]) => Promise<Result>;

/** A provisioner from a `Create`: secrets arrive wrapped, and moto needs the plain values. */
export function creates(create: Create): Provisioner {
  return async (ctx, args, outcome) => {
    const inputs = await plainValue(args.inputs as Inputs);
    const result = await create(ctx, args, inputs, outcome.notes);
    outcome.created = args.custom === true;
    return result;
  };
}
