import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import type { FargateCluster } from "../components/fargate-cluster";
import { PoolLaunchTemplate } from "../components/pool-launch-template";
import { ManagedQueue } from "../components/managed-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { QueueSchedule } from "../components/queue-schedule";
import { Table } from "../components/table";
import { TerminalQueue } from "../components/terminal-queue";
import { assumedBy, policyDocument } from "../iam/document";
import { claimStatements, refillStatements } from "../iam/pool";

/** Handler entry points, relative to the repository root. */
export const POOL_ENTRIES = { refill: "functions/pool/refill.ts" } as const;
/** Tag keys that mark pool membership and class (the functions read the same keys). */
export const POOL_TAG_KEY = "encache:pool";
export const POOL_CLASS_TAG_KEY = "encache:pool-class";
/** A pool queue is emptied by delete-on-receive; its visibility only covers one pickup cycle. */
const POOL_QUEUE_VISIBILITY_SECONDS = 30;

export interface PoolArgs {
  config: StackConfig;
  /** AWS region (scopes the tag-conditioned EC2 grants). */
  region: string;
  vpcId: pulumi.Input<string>;
  privateSubnetIds: pulumi.Input<string[]>;
  /**
   * Unused: the pool runs EC2 instances, not tasks. Accepted so every part takes the same args.
   * @default undefined
   */
  cluster?: FargateCluster;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/** One resource class's pool: its advert queue and launch template. */
export interface PoolClassResources {
  queue: ManagedQueue;
  launchTemplate: PoolLaunchTemplate;
  schedule: QueueSchedule;
}

/**
 * Part 5 (seed 004): the warm-instance pool. One advert queue and one launch template per
 * resource class, the claim table (per-instance locks and per-class refill leases), the
 * refill function fed by one schedule per class, and the managed policy a claim worker
 * attaches to use the claim API (`functions/pool/claim.ts`).
 */
export class Pool extends pulumi.ComponentResource {
  readonly classes: Record<string, PoolClassResources> = {};
  readonly claimTable: Table;
  readonly refillQueue: ManagedQueue;
  readonly scheduleDlq: TerminalQueue;
  readonly refill: QueueConsumer;
  readonly claimPolicy: aws.iam.Policy;
  readonly instanceRole: aws.iam.Role;
  readonly instanceProfile: aws.iam.InstanceProfile;

  constructor(name: string, args: PoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Pool", name, {}, opts);
    const { config: c, region } = args;
    const p = c.pool;
    const tags = { ...(args.tags ?? {}), "encache:part": "pool" };
    const child = { parent: this };

    this.instanceRole = new aws.iam.Role(`${name}-instance-role`, { assumeRolePolicy: assumedBy("ec2.amazonaws.com"), tags }, child);
    new aws.iam.RolePolicyAttachment(
      `${name}-instance-ssm-core`,
      { role: this.instanceRole.name, policyArn: aws.iam.ManagedPolicy.AmazonSSMManagedInstanceCore },
      child,
    );
    this.instanceProfile = new aws.iam.InstanceProfile(`${name}-instance-profile`, { role: this.instanceRole.name, tags }, child);

    const instancesSg = new aws.ec2.SecurityGroup(
      `${name}-instances-sg`,
      {
        vpcId: args.vpcId,
        description: "Warm pool instances: no inbound; egress to AWS APIs and artifacts via NAT",
        egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], description: "AWS APIs (SSM, SQS), artifacts" }],
        tags,
      },
      child,
    );
    // Pinned to one private subnet so the RunInstances grant can name it (see docs/parts/pool.md).
    const subnetId = pulumi.output(args.privateSubnetIds).apply((ids) => {
      const first = ids[0];
      if (!first) throw new Error("the network has no private subnet for the warm pool");
      return first;
    });

    this.claimTable = new Table(
      `${name}-claims`,
      { hashKey: "instance_id", attributes: { instance_id: "S" }, ttlAttribute: "expires_at", deletionProtection: c.deletionProtection, tags },
      child,
    );

    this.refillQueue = new ManagedQueue(
      `${name}-refill`,
      {
        visibilityTimeoutSeconds: p.refill.queueVisibilityTimeoutSeconds,
        // A refill request older than a few periods is worthless: the next schedule supersedes it.
        messageRetentionSeconds: Math.max(60, p.refill.everyMinutes * 60 * 4),
        maxReceiveCount: c.queues.maxReceiveCount,
        alarmActions: c.alarmActions,
        tags,
      },
      child,
    );
    this.scheduleDlq = new TerminalQueue(`${name}-refill-schedule-dlq`, { role: "dlq", alarmActions: c.alarmActions, tags }, child);

    for (const [className, cls] of Object.entries(p.classes)) {
      const membershipTags = { [POOL_TAG_KEY]: p.poolTag, [POOL_CLASS_TAG_KEY]: className };
      const queue = new ManagedQueue(
        `${name}-${className}`,
        {
          visibilityTimeoutSeconds: POOL_QUEUE_VISIBILITY_SECONDS,
          messageRetentionSeconds: p.advertRetentionSeconds,
          maxReceiveCount: c.queues.maxReceiveCount,
          alarmActions: c.alarmActions,
          tags: { ...tags, [POOL_CLASS_TAG_KEY]: className },
        },
        child,
      );
      const launchTemplate = new PoolLaunchTemplate(
        `${name}-${className}-lt`,
        {
          instanceType: cls.instanceTypes[0]!,
          subnetId,
          securityGroupIds: [instancesSg.id],
          instanceProfileArn: this.instanceProfile.arn,
          membershipTags,
          amiParameter: cls.amiParameter,
          rootDeviceName: cls.rootDeviceName,
          rootVolumeGiB: cls.rootVolumeGiB,
          usageClass: cls.usageClass,
          tags,
        },
        child,
      );
      const schedule = new QueueSchedule(
        `${name}-refill-${className}`,
        {
          queueArn: this.refillQueue.queue.arn,
          scheduleExpression: `rate(${p.refill.everyMinutes} ${p.refill.everyMinutes === 1 ? "minute" : "minutes"})`,
          message: { resource_class: className, scheduled_time: "<aws.scheduler.scheduled-time>" },
          deadLetterQueueArn: this.scheduleDlq.queue.arn,
          // A missed run is superseded by the next one; don't retry past a period.
          maximumEventAgeSeconds: Math.max(60, p.refill.everyMinutes * 60),
          description: `Top the ${className} warm pool up to ${cls.size}`,
          tags,
        },
        child,
      );
      this.classes[className] = { queue, launchTemplate, schedule };
    }

    const classList = Object.entries(this.classes);
    const poolQueueArns = classList.map(([, r]) => r.queue.queue.arn);
    const launchTemplateArns = classList.map(([, r]) => r.launchTemplate.template.arn);

    this.refill = new QueueConsumer(
      `${name}-refill`,
      {
        entry: POOL_ENTRIES.refill,
        queueArn: this.refillQueue.queue.arn,
        queueVisibilityTimeoutSeconds: this.refillQueue.settings.visibilityTimeoutSeconds,
        statements: refillStatements({
          region,
          poolTag: p.poolTag,
          tableArn: this.claimTable.table.arn,
          poolQueueArns,
          refillDlqArn: this.refillQueue.dlq.arn,
          launchTemplateArns,
          subnetId,
          securityGroupArn: instancesSg.arn,
          instanceRoleArn: this.instanceRole.arn,
        }),
        environment: {
          POOL_CLASSES: pulumi.jsonStringify(
            classList.map(([className, r]) => {
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
          CLAIM_TABLE_NAME: this.claimTable.table.name,
          POOL_TAG: p.poolTag,
          REFILL_LEASE_SECONDS: String(p.refill.timeoutSeconds),
          QUARANTINE_QUEUE_URL: this.refillQueue.dlq.url,
          POWERTOOLS_SERVICE_NAME: "pool-refill",
          POWERTOOLS_METRICS_NAMESPACE: "Encache/Pool",
          POWERTOOLS_LOG_LEVEL: "INFO",
        },
        timeoutSeconds: p.refill.timeoutSeconds,
        memoryMb: p.refill.memoryMb,
        batchSize: 1,
        maxConcurrency: p.refill.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.claimPolicy = new aws.iam.Policy(
      `${name}-claim`,
      {
        description: "The warm-pool claim API: pick up adverts, take claim locks, start pool-tagged instances",
        policy: policyDocument(claimStatements({ region, poolTag: p.poolTag, tableArn: this.claimTable.table.arn, poolQueueArns })),
        tags,
      },
      child,
    );

    this.registerOutputs({
      poolQueueUrls: Object.fromEntries(classList.map(([k, r]) => [k, r.queue.queue.url])),
      claimTableName: this.claimTable.table.name,
      refillFunction: this.refill.function.name,
      claimPolicyArn: this.claimPolicy.arn,
    });
  }
}
