import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { metricsNamespace } from "../../policy/contract";
import { CLAIM_TABLE } from "../../functions/shared/tables";
import { REFILL_ENV } from "../../functions/pool/env";
import { POOL_CLASS_TAG_KEY, POOL_TAG_KEY } from "../../functions/pool/tags";
import { CLAIM_GRANTS, REFILL_GRANTS } from "../../functions/pool/iam";
import { ManagedQueue } from "../components/managed-queue";
import { declareInstanceRole } from "../components/hardened-instance";
import { PoolLaunchTemplate } from "../components/pool-launch-template";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import { httpsEgress, type Statement } from "../iam/document";
import { declaredPolicy, MANAGED_POLICY_TYPE } from "../iam/declared";
import { arnOf, statementsFor } from "../iam/grants";
import { consumerSizing } from "./consumer.config";
import { firstSubnet, functionEnvironment, type PartArgs, partScope, type PartScope } from "./part-args";
import { functionConsumer, inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { POOL_QUEUE_VISIBILITY_SECONDS, type PoolClassConfig, type PoolConfig, refillRetentionSeconds } from "./pool.config";

/** Handler entry points, relative to the repository root. */
export const POOL_ENTRIES = { refill: "functions/pool/refill.ts" } as const;

/** The pool runs EC2 instances, not tasks: `cluster` is accepted like every part's and unused. */
export interface PoolArgs extends PartArgs {
  /** `encache:pool`. */
  config: PoolConfig;
}

/** One resource class's pool: its advert queue, launch template and refill schedule. */
export interface PoolClassResources {
  queue: ManagedQueue;
  launchTemplate: PoolLaunchTemplate;
  schedule: QueueSchedule;
}

/** Where the pool grants' symbolic resources live. */
export interface PoolAccess {
  region: string;
  /** Every EC2 ARN names the account (no `*`). */
  accountId: pulumi.Input<string>;
  /** The instance types the classes' templates launch (PoolLaunchTemplate.instanceType): RunInstances is limited to them. */
  instanceTypes: string[];
  /** Value of the `encache:pool` tag: EC2 start and launch are conditioned on it. */
  poolTag: string;
  tableArn: pulumi.Input<string>;
  poolQueueArns: pulumi.Input<string>[];
  refillDlqArn: pulumi.Input<string>;
  launchTemplateArns: pulumi.Input<string>[];
  subnetId: pulumi.Input<string>;
  securityGroupArn: pulumi.Input<string>;
  instanceRoleArn: pulumi.Input<string>;
  /** Whether any class launches Spot: only then is the Spot-request grant declared. */
  hasSpotClass: boolean;
  /** The public SSM parameters the classes' templates resolve their AMI from. */
  amiParameters: string[];
}

/** The refill function's statements and the claim API's, derived from the grants beside their code. Pure. */
export function poolStatements(a: PoolAccess): { refill: Statement[]; claim: Statement[] } {
  const ec2 = (resource: pulumi.Input<string>) => arnOf("arn:aws:ec2:", a.region, ":", a.accountId, ":", resource);
  const created = ["instance", "volume", "network-interface"].map((t) => ec2(`${t}/*`));
  const poolTagged = { [`aws:RequestTag/${POOL_TAG_KEY}`]: a.poolTag };
  // Present on every resource a RunInstances from a template touches (AWS's "require a launch template" example).
  const fromPoolTemplate = { "ec2:LaunchTemplate": a.launchTemplateArns };
  const bindings = {
    "pool-queues": { resource: a.poolQueueArns },
    "claim-table": { resource: a.tableArn },
    "*": { resource: "*" },
    "pool-instances": {
      resource: ec2("instance/*"),
      condition: { StringEquals: { [`aws:ResourceTag/${POOL_TAG_KEY}`]: a.poolTag } },
    },
    // What RunInstances creates must carry the pool tag in the request (CreateTags on create, too).
    "pool-launch-created": { resource: created, condition: { StringEquals: poolTagged } },
    "pool-launch-instances": {
      resource: ec2("instance/*"),
      condition: { StringEquals: { ...poolTagged, "ec2:InstanceType": [...new Set(a.instanceTypes)].sort() }, ArnLike: fromPoolTemplate },
    },
    "pool-launch-attachments": { resource: [ec2("volume/*"), ec2("network-interface/*")], condition: { StringEquals: poolTagged, ArnLike: fromPoolTemplate } },
    // What it uses is named: the pool's templates, subnet and group, and AMIs (an image belongs to no
    // account of ours: its ARN has none). The templates resolve the AMI at launch, so no AMI id is
    // known and the ARN names every image: ec2:IsLaunchTemplateResource (true when the resource is
    // the one the launch template specifies) keeps a caller from overriding the template's AMI,
    // subnet or group in the request (AWS's "prevent overriding launch template parameters" pattern).
    "pool-launch-inputs": {
      resource: [...a.launchTemplateArns, ec2(arnOf("subnet/", a.subnetId)), a.securityGroupArn, `arn:aws:ec2:${a.region}::image/*`],
      condition: { ArnLike: fromPoolTemplate, Bool: { "ec2:IsLaunchTemplateResource": "true" } },
    },
    "instance-role": { resource: a.instanceRoleArn },
    "pool-spot-requests": { resource: ec2("spot-instances-request/*"), condition: { ArnLike: fromPoolTemplate } },
    // Public parameters live in no account: their ARNs have an empty account field.
    "pool-ami-parameters": { resource: [...new Set(a.amiParameters)].sort().map((p) => `arn:aws:ssm:${a.region}::parameter${p}`) },
    "refill-dlq": { resource: a.refillDlqArn },
  };
  const refillGrants = a.hasSpotClass ? REFILL_GRANTS : REFILL_GRANTS.filter((g) => g.resource !== "pool-spot-requests");
  return { refill: statementsFor(refillGrants, bindings), claim: statementsFor(CLAIM_GRANTS, bindings) };
}

/**
 * Part 5 (docs/parts/pool.md): the warm-instance pool. One advert queue and one launch template per
 * resource class, the claim table (per-instance locks and per-class refill leases), the
 * refill function fed by one schedule per class, and the managed policy a claim worker
 * attaches to use the claim API (`functions/pool/claim.ts`).
 */
export class Pool extends pulumi.ComponentResource implements PartFace<PoolOutputs> {
  readonly outputs: PoolOutputs;
  readonly inventory: PartInventory;
  readonly classes: Record<string, PoolClassResources>;
  /** The claim library's settings for the stack's claim workers (published as `poolClaimSettings`). */
  private readonly claimSettings: PoolOutputs["poolClaimSettings"];
  /** Each class's configured size: the count refill tops the class up to. */
  readonly classSizes: Record<string, number>;
  readonly claimTable: Table;
  readonly refillQueue: ManagedQueue;
  readonly scheduleDlq: TerminalQueue;
  readonly refill: QueueConsumer;
  readonly claimPolicy: aws.iam.Policy;
  readonly instanceRole: aws.iam.Role;
  readonly instanceProfile: aws.iam.InstanceProfile;
  /** The claim API's name (`<name>-claim`, its managed policy's): the consumer of every advert queue. */
  readonly claimPolicyLabel: string;

  constructor(name: string, args: PoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Pool", name, {}, opts);
    this.claimPolicyLabel = `${name}-claim`;
    const part = partScope(this, name, args, "pool");

    ({ role: this.instanceRole, profile: this.instanceProfile } = createInstanceRole(part));
    const compute = createComputeNetwork(part);
    this.claimTable = createClaimTable(part);
    ({ queue: this.refillQueue, scheduleDlq: this.scheduleDlq } = createRefillQueue(part));
    this.classSizes = Object.fromEntries(Object.entries(args.config.classes).map(([className, cls]) => [className, cls.size]));
    const { lockTtlSeconds, requeueDelaySeconds, tolerance } = args.config;
    this.claimSettings = { lockTtlSeconds, requeueDelaySeconds, tolerance };
    this.classes = createClasses(part, { ...compute, instanceProfile: this.instanceProfile, refillQueue: this.refillQueue, scheduleDlq: this.scheduleDlq });
    const statements = poolStatements({
      region: args.region,
      accountId: aws.getCallerIdentityOutput({}, { parent: this }).accountId,
      // From the templates the stack declares, not from the classes' config lists: a class's other
      // types are types an advert may name, but no template launches them.
      instanceTypes: Object.values(this.classes).map((r) => r.launchTemplate.instanceType),
      poolTag: args.config.poolTag,
      tableArn: this.claimTable.table.arn,
      poolQueueArns: Object.values(this.classes).map((r) => r.queue.queue.arn),
      refillDlqArn: this.refillQueue.dlq.arn,
      launchTemplateArns: Object.values(this.classes).map((r) => r.launchTemplate.template.arn),
      subnetId: compute.subnetId,
      securityGroupArn: compute.securityGroup.arn,
      instanceRoleArn: this.instanceRole.arn,
      hasSpotClass: Object.values(args.config.classes).some((c) => c.usageClass === "spot"),
      amiParameters: Object.values(args.config.classes).map((c) => c.amiParameter),
    });
    this.refill = createRefill(part, { classes: this.classes, claimTable: this.claimTable, refillQueue: this.refillQueue, statements: statements.refill });
    this.claimPolicy = createClaimPolicy(part, statements.claim);

    this.outputs = this.stackOutputs();
    this.inventory = this.describeInventory(name);
    this.registerOutputs({ ...this.outputs, inventory: inventoryRecord(this.inventory) });
  }

  /** The part's stack outputs, under their public names. */
  private stackOutputs(): PoolOutputs {
    return {
      poolQueueUrls: Object.fromEntries(Object.entries(this.classes).map(([k, r]) => [k, r.queue.url])),
      poolClaimTableName: this.claimTable.table.name,
      poolRefillFunction: this.refill.function.name,
      poolClaimPolicyArn: this.claimPolicy.arn,
      poolClaimSettings: this.claimSettings,
    };
  }

  /** The refill queue and its function, each class's advert queue (claimed through the claim API), and the pool's view of the dashboard. */
  private describeInventory(name: string): PartInventory {
    const classes = Object.entries(this.classes);
    return {
      part: name,
      queues: [
        { queue: this.refillQueue, consumers: [functionConsumer(this.refill)] },
        ...classes.map(([className, r]) => ({
          queue: r.queue,
          consumers: [{ name: this.claimPolicyLabel, kind: "api" as const }],
          advert: { className, size: this.classSizes[className]! },
        })),
      ],
      terminalQueues: [this.scheduleDlq],
      ecsServices: [],
      views: {
        pool: {
          classes: classes.map(([className, r]) => ({ name: className, queueName: r.queue.name, size: this.classSizes[className]! })),
          refillService: this.refill.powertoolsServiceName,
          refillLogGroup: this.refill.logGroup.name,
        },
      },
    };
  }
}

/** Part 5's stack outputs. */
export interface PoolOutputs extends Record<string, pulumi.Input<unknown>> {
  /** Each class's advert queue URL, by class. */
  poolQueueUrls: Record<string, pulumi.Output<string>>;
  poolClaimTableName: pulumi.Output<string>;
  poolRefillFunction: pulumi.Output<string>;
  poolClaimPolicyArn: pulumi.Output<string>;
  /** What a claim worker passes the claim library: the stack's `encache:pool` lock TTL, re-queue delay and tolerance. */
  poolClaimSettings: { lockTtlSeconds: number; requeueDelaySeconds: number; tolerance: number };
}

type PoolPart = PartScope<PoolArgs>;

/** The role and profile every pool instance runs with: Session Manager only, a pool instance's workload brings its own credentials. */
function createInstanceRole({ name, tags, parent }: PoolPart): { role: aws.iam.Role; profile: aws.iam.InstanceProfile } {
  return declareInstanceRole(`${name}-instance`, { parent, tags });
}

/** The instances' security group, and the one private subnet they launch in. */
function createComputeNetwork({ name, args, tags, parent }: PoolPart): { securityGroup: aws.ec2.SecurityGroup; subnetId: pulumi.Output<string> } {
  const securityGroup = new aws.ec2.SecurityGroup(
    `${name}-instances-sg`,
    {
      vpcId: args.network.vpcId,
      description: "Warm pool instances: no inbound; egress to AWS APIs and artifacts via NAT",
      egress: [httpsEgress("AWS APIs (SSM, SQS) through NAT"), ...args.network.extraEgress.poolInstances],
      tags,
    },
    { parent },
  );
  // Pinned to one private subnet so the RunInstances grant can name it (see docs/parts/pool.md).
  return { securityGroup, subnetId: firstSubnet(args.network.privateSubnetIds) };
}

/** Per-instance claim locks and per-class refill leases, expiring by TTL. */
function createClaimTable({ name, args, tags, parent }: PoolPart): Table {
  const { hashKey, ttlAttribute } = CLAIM_TABLE;
  return new Table(
    `${name}-claims`,
    { hashKey, attributes: { [hashKey]: "S" }, ttlAttribute, deletionProtection: args.platform.deletionProtection, tags },
    { parent },
  );
}

/** The refill queue (fed by the schedules) and the schedules' DLQ. */
function createRefillQueue({ name, args, tags, parent }: PoolPart): { queue: ManagedQueue; scheduleDlq: TerminalQueue } {
  const { refill } = args.config;
  const queue = new ManagedQueue(
    `${name}-refill`,
    {
      visibilityTimeoutSeconds: refill.queueVisibilityTimeoutSeconds,
      // A refill request older than a few periods is worthless: the next schedule supersedes it.
      messageRetentionSeconds: refillRetentionSeconds(refill),
      maxReceiveCount: args.platform.maxReceiveCount,
      alarmActions: args.platform.alarmActions,
      protectDlq: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
  const scheduleDlq = new TerminalQueue(
    `${name}-refill-schedule-dlq`,
    { role: "dlq", alarmActions: args.platform.alarmActions, protect: args.platform.deletionProtection, tags },
    { parent },
  );
  return { queue, scheduleDlq };
}

/** Per resource class: its advert queue, its launch template and its refill schedule. */
function createClasses(
  part: PoolPart,
  deps: {
    securityGroup: aws.ec2.SecurityGroup;
    subnetId: pulumi.Output<string>;
    instanceProfile: aws.iam.InstanceProfile;
    refillQueue: ManagedQueue;
    scheduleDlq: TerminalQueue;
  },
): Record<string, PoolClassResources> {
  return Object.fromEntries(Object.entries(part.args.config.classes).map(([className, cls]) => [className, createClass(part, className, cls, deps)]));
}

function createClass(
  { name, args, tags, parent }: PoolPart,
  className: string,
  cls: PoolClassConfig,
  deps: {
    securityGroup: aws.ec2.SecurityGroup;
    subnetId: pulumi.Output<string>;
    instanceProfile: aws.iam.InstanceProfile;
    refillQueue: ManagedQueue;
    scheduleDlq: TerminalQueue;
  },
): PoolClassResources {
  const p = args.config;
  const queue = new ManagedQueue(
    `${name}-${className}`,
    {
      visibilityTimeoutSeconds: POOL_QUEUE_VISIBILITY_SECONDS,
      messageRetentionSeconds: p.advertRetentionSeconds,
      maxReceiveCount: args.platform.maxReceiveCount,
      alarmActions: args.platform.alarmActions,
      protectDlq: args.platform.deletionProtection,
      tags: { ...tags, [POOL_CLASS_TAG_KEY]: className },
    },
    { parent },
  );
  const launchTemplate = new PoolLaunchTemplate(
    `${name}-${className}-lt`,
    {
      instanceType: cls.instanceTypes[0]!,
      subnetId: deps.subnetId,
      securityGroupIds: [deps.securityGroup.id],
      instanceProfileArn: deps.instanceProfile.arn,
      membershipTags: { [POOL_TAG_KEY]: p.poolTag, [POOL_CLASS_TAG_KEY]: className },
      amiParameter: cls.amiParameter,
      rootDeviceName: cls.rootDeviceName,
      rootVolumeGiB: cls.rootVolumeGiB,
      usageClass: cls.usageClass,
      tags,
    },
    { parent },
  );
  const minutes = p.refill.everyMinutes;
  const schedule = deps.refillQueue.schedule(
    `${name}-refill-${className}`,
    {
      scheduleExpression: `rate(${minutes} ${minutes === 1 ? "minute" : "minutes"})`,
      message: { resource_class: className, scheduled_time: "<aws.scheduler.scheduled-time>" },
      deadLetterQueueArn: deps.scheduleDlq.queue.arn,
      // A missed run is superseded by the next one; don't retry past a period.
      maximumEventAgeSeconds: Math.max(60, minutes * 60),
      description: `Top the ${className} warm pool up to ${cls.size}`,
      tags,
    },
    { parent },
  );
  return { queue, launchTemplate, schedule };
}

/** The refill function: tops each class up to its size, one class per message. */
function createRefill(
  { name, args, tags, parent }: PoolPart,
  deps: { classes: Record<string, PoolClassResources>; claimTable: Table; refillQueue: ManagedQueue; statements: Statement[] },
): QueueConsumer {
  const p = args.config;
  const { refillQueue } = deps;
  return refillQueue.consumer(
    `${name}-refill`,
    {
      entry: POOL_ENTRIES.refill,
      statements: deps.statements,
      environment: functionEnvironment(
        REFILL_ENV,
        {
          classes: pulumi.output(
            Object.entries(deps.classes).map(([className, r]) => {
              const cls = p.classes[className]!;
              return {
                name: className,
                queueUrl: r.queue.queue.url,
                launchTemplateId: r.launchTemplate.template.id,
                size: cls.size,
                instanceTypes: cls.instanceTypes,
                cpu: cls.cpu,
                memoryMib: cls.memoryMib,
                usageClass: cls.usageClass,
              };
            }),
          ),
          claimTableName: deps.claimTable.table.name,
          poolTag: p.poolTag,
          poolTagKey: POOL_TAG_KEY,
          poolClassTagKey: POOL_CLASS_TAG_KEY,
          leaseSeconds: p.refill.timeoutSeconds,
          quarantineQueueUrl: refillQueue.dlq.url,
        },
        // POWERTOOLS_SERVICE_NAME is left to the QueueConsumer: `<its name>-<environment>`, per stack.
        { POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Pool"), POWERTOOLS_LOG_LEVEL: "INFO" },
      ),
      ...consumerSizing(p.refill),
      logRetentionDays: args.platform.logRetentionDays,
      tags,
    },
    { parent },
  );
}

/** The claim API's grants, as a managed policy the claim worker's role attaches. */
function createClaimPolicy({ name, tags, parent }: PoolPart, statements: Statement[]): aws.iam.Policy {
  return new aws.iam.Policy(
    `${name}-claim`,
    {
      description: "The warm-pool claim API: pick up adverts, take claim locks, start pool-tagged instances",
      policy: declaredPolicy(statements, { resource: `${name}-claim`, resourceType: MANAGED_POLICY_TYPE, parent }),
      tags,
    },
    { parent },
  );
}
