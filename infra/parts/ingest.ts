import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import { GpuInstance } from "../components/gpu-instance";
import { DLQ_RETENTION_SECONDS, ManagedQueue } from "../components/managed-queue";
import { TerminalQueue } from "../components/terminal-queue";
import { QueueConsumer } from "../components/queue-consumer";
import { policyDocument } from "../iam/document";
import { dlqConsumerStatements, gpuEc2PolicyStatements, windowConsumerStatements } from "../iam/ingest";

/** Handler entry points, relative to the repository root. */
export const INGEST_ENTRIES = {
  window: "functions/ingest/window.ts",
  dlq: "functions/ingest/dlq.ts",
} as const;

export interface IngestArgs {
  config: StackConfig;
  /** AWS region the stack deploys to (scopes the tag-conditioned StartInstances grant). */
  region: string;
  vpcId: pulumi.Input<string>;
  privateSubnetIds: pulumi.Input<string[]>;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * Part 1 (seed 000): the ingest queue and its DLQ, the window consumer that POSTs each window
 * to the GPU service, and the DLQ consumer that starts the stopped GPU instance when work is
 * waiting for it.
 */
export class Ingest extends pulumi.ComponentResource {
  readonly queue: ManagedQueue;
  readonly quarantine: TerminalQueue;
  readonly gpu: GpuInstance;
  readonly windowConsumer: QueueConsumer;
  readonly dlqConsumer: QueueConsumer;
  readonly gpuEc2Policy: aws.iam.Policy;

  constructor(name: string, args: IngestArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Ingest", name, {}, opts);
    const { config: c, region } = args;
    const tags = { ...(args.tags ?? {}), "encache:part": "ingest" };
    const child = { parent: this };

    this.queue = new ManagedQueue(
      name,
      {
        visibilityTimeoutSeconds: c.ingest.queueVisibilityTimeoutSeconds,
        messageRetentionSeconds: c.ingest.messageRetentionSeconds,
        maxReceiveCount: c.queues.maxReceiveCount,
        dlqVisibilityTimeoutSeconds: c.ingest.dlqVisibilityTimeoutSeconds,
        alarmActions: c.alarmActions,
        tags,
      },
      child,
    );
    this.quarantine = new TerminalQueue(`${name}-quarantine`, { role: "quarantine", alarmActions: c.alarmActions, tags }, child);

    const consumersSg = new aws.ec2.SecurityGroup(
      `${name}-consumers-sg`,
      {
        vpcId: args.vpcId,
        description: "Ingest consumers: egress to AWS APIs (via NAT) and to the GPU service",
        egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], description: "AWS APIs and the GPU service" }],
        tags,
      },
      child,
    );
    const gpuSg = new aws.ec2.SecurityGroup(
      `${name}-gpu-sg`,
      {
        vpcId: args.vpcId,
        description: "GPU worker: the ingest service port, from the ingest consumers only",
        ingress: [
          { protocol: "tcp", fromPort: c.gpu.servicePort, toPort: c.gpu.servicePort, securityGroups: [consumersSg.id], description: "GPU ingest service" },
        ],
        egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], description: "SSM agent, model downloads" }],
        tags,
      },
      child,
    );

    this.gpu = new GpuInstance(
      `${name}-gpu`,
      {
        instanceType: c.gpu.instanceType,
        subnetId: pulumi.output(args.privateSubnetIds).apply((ids) => {
          const first = ids[0];
          if (!first) throw new Error("the network has no private subnet for the GPU instance");
          return first;
        }),
        securityGroupIds: [gpuSg.id],
        amiParameter: c.gpu.amiParameter,
        nameTag: c.gpu.nameTag,
        instanceIdParameter: c.gpu.instanceIdParameter,
        rootVolumeGiB: c.gpu.rootVolumeGiB,
        deletionProtection: c.deletionProtection,
        tags,
      },
      child,
    );

    this.gpuEc2Policy = new aws.iam.Policy(
      `${name}-gpu-ec2`,
      {
        description: `Start the ${c.gpu.nameTag} instance (by tag) and describe instances`,
        policy: policyDocument(gpuEc2PolicyStatements({ region, nameTag: c.gpu.nameTag })),
        tags,
      },
      child,
    );

    const gpuEnv = {
      GPU_INSTANCE_ID_PARAM: c.gpu.instanceIdParameter,
      GPU_NAME_TAG: c.gpu.nameTag,
      GPU_SERVICE_PORT: String(c.gpu.servicePort),
      GPU_SERVICE_PATH: c.gpu.servicePath,
      GPU_REQUEST_TIMEOUT_MS: String(c.gpu.requestTimeoutMs),
      POWERTOOLS_METRICS_NAMESPACE: "Encache/Ingest",
      POWERTOOLS_LOG_LEVEL: "INFO",
    };
    const vpc = { subnetIds: args.privateSubnetIds, securityGroupIds: [consumersSg.id] };
    const parameterArn = this.gpu.instanceIdParameter.arn;

    this.windowConsumer = new QueueConsumer(
      `${name}-window`,
      {
        entry: INGEST_ENTRIES.window,
        queueArn: this.queue.queue.arn,
        queueVisibilityTimeoutSeconds: this.queue.settings.visibilityTimeoutSeconds,
        statements: windowConsumerStatements({ parameterArn, quarantineQueueArn: this.queue.dlq.arn }),
        environment: {
          ...gpuEnv,
          // Malformed windows go straight to the ingest DLQ with their reason (DESIGN: quarantine).
          QUARANTINE_QUEUE_URL: this.queue.dlq.url,
          POWERTOOLS_SERVICE_NAME: "ingest-window",
        },
        timeoutSeconds: c.ingest.window.timeoutSeconds,
        memoryMb: c.ingest.window.memoryMb,
        batchSize: c.ingest.window.batchSize,
        batchingWindowSeconds: c.ingest.window.batchingWindowSeconds,
        maxConcurrency: c.ingest.window.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        vpc,
        tags,
      },
      child,
    );

    this.dlqConsumer = new QueueConsumer(
      `${name}-dlq-consumer`,
      {
        entry: INGEST_ENTRIES.dlq,
        queueArn: this.queue.dlq.arn,
        queueVisibilityTimeoutSeconds: this.queue.settings.dlqVisibilityTimeoutSeconds,
        statements: dlqConsumerStatements({ parameterArn, quarantineQueueArn: this.quarantine.queue.arn, dlqArn: this.queue.dlq.arn }),
        managedPolicyArns: [this.gpuEc2Policy.arn],
        environment: {
          ...gpuEnv,
          INGEST_DLQ_URL: this.queue.dlq.url,
          // This consumer's own queue is the DLQ, so malformed messages go to the terminal quarantine queue.
          QUARANTINE_QUEUE_URL: this.quarantine.queue.url,
          DLQ_VISIBILITY_EXTENSION_SECONDS: String(c.ingest.dlqParkSeconds),
          // Quarantine a day before the DLQ's retention would delete a message nobody took.
          DLQ_MAX_AGE_SECONDS: String(DLQ_RETENTION_SECONDS - 86_400),
          POWERTOOLS_SERVICE_NAME: "ingest-dlq-consumer",
        },
        timeoutSeconds: c.ingest.dlqConsumer.timeoutSeconds,
        memoryMb: c.ingest.dlqConsumer.memoryMb,
        batchSize: c.ingest.dlqConsumer.batchSize,
        batchingWindowSeconds: c.ingest.dlqConsumer.batchingWindowSeconds,
        maxConcurrency: c.ingest.dlqConsumer.maxConcurrency,
        logRetentionDays: c.logRetentionDays,
        vpc,
        tags,
      },
      child,
    );

    this.registerOutputs({
      queueUrl: this.queue.queue.url,
      dlqUrl: this.queue.dlq.url,
      quarantineUrl: this.quarantine.queue.url,
      gpuInstanceId: this.gpu.instance.id,
    });
  }
}
