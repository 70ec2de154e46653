import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import type { FargateCluster } from "../components/fargate-cluster";
import { ManagedQueue } from "../components/managed-queue";
import { QueueWorkerService } from "../components/queue-worker-service";
import { writeImageContext } from "../components/queue-worker-service-image";
import { workerTaskRoleStatements } from "../iam/worker";
import { workQueueVisibilitySeconds } from "./worker.config";

/** The container entry, its Dockerfile and the build context the program writes, relative to the repository root. */
export const WORKER_ENTRY = "functions/worker/main.ts";
export const WORKER_DOCKERFILE = "functions/worker/Dockerfile";
export const WORKER_IMAGE_CONTEXT = "dist/worker-image";
/** The writable scratch volume; the Dockerfile creates it owned by `node`. */
export const WORKER_SCRATCH_PATH = "/scratch";

export interface WorkerArgs {
  config: StackConfig;
  region: string;
  vpcId: pulumi.Input<string>;
  privateSubnetIds: pulumi.Input<string[]>;
  /** The platform's ECS cluster; the worker adds a service to it. */
  cluster: FargateCluster;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * Part 4 (seed 003): a work queue with its DLQ, the worker image in ECR, and a Fargate Spot
 * service whose tasks long-poll the queue, hold task scale-in protection while they work, and
 * scale on backlog per task.
 */
export class Worker extends pulumi.ComponentResource {
  readonly queue: ManagedQueue;
  readonly repository: aws.ecr.Repository;
  readonly image: awsx.ecr.Image;
  readonly service: QueueWorkerService;
  /** Bytes of the bundled worker.js that goes into the image. */
  readonly bundleBytes: number;

  constructor(name: string, args: WorkerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Worker", name, {}, opts);
    const { config: c, region } = args;
    const w = c.worker;
    const tags = { ...(args.tags ?? {}), "encache:part": "worker" };
    const child = { parent: this };

    this.queue = new ManagedQueue(
      name,
      {
        visibilityTimeoutSeconds: workQueueVisibilitySeconds(w),
        messageRetentionSeconds: w.messageRetentionSeconds,
        maxReceiveCount: c.queues.maxReceiveCount,
        alarmActions: c.alarmActions,
        tags,
      },
      child,
    );

    this.repository = new aws.ecr.Repository(
      `${name}-images`,
      {
        imageTagMutability: "IMMUTABLE",
        imageScanningConfiguration: { scanOnPush: true },
        encryptionConfigurations: [{ encryptionType: "AES256" }],
        forceDelete: !c.deletionProtection,
        tags,
      },
      child,
    );
    new aws.ecr.LifecyclePolicy(
      `${name}-images-lifecycle`,
      {
        repository: this.repository.name,
        policy: JSON.stringify({
          rules: [
            {
              rulePriority: 1,
              description: `Keep the last ${w.keepImages} images`,
              selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: w.keepImages },
              action: { type: "expire" },
            },
          ],
        }),
      },
      child,
    );

    const bundle = writeImageContext(WORKER_ENTRY, WORKER_IMAGE_CONTEXT);
    this.bundleBytes = bundle.bytes;
    this.image = new awsx.ecr.Image(
      `${name}-image`,
      {
        repositoryUrl: this.repository.repositoryUrl,
        context: WORKER_IMAGE_CONTEXT,
        dockerfile: WORKER_DOCKERFILE,
        platform: "linux/amd64",
      },
      child,
    );

    this.service = new QueueWorkerService(
      name,
      {
        cluster: args.cluster,
        image: this.image.imageUri,
        repositoryArn: this.repository.arn,
        queueName: this.queue.queue.name,
        taskRoleStatements: workerTaskRoleStatements({
          workQueueArn: this.queue.queue.arn,
          workDlqArn: this.queue.dlq.arn,
          clusterArn: args.cluster.cluster.arn,
        }),
        vpcId: args.vpcId,
        subnetIds: args.privateSubnetIds,
        region,
        cpu: w.cpu,
        memoryMb: w.memoryMb,
        fargateBase: w.fargateBase,
        scratchPath: WORKER_SCRATCH_PATH,
        stopTimeoutSeconds: 120,
        taskProtection: true,
        scaling: {
          minTasks: w.minTasks,
          maxTasks: w.maxTasks,
          backlogPerTaskTarget: w.backlogPerTaskTarget,
          scaleOutCooldownSeconds: w.scaleOutCooldownSeconds,
          scaleInCooldownSeconds: w.scaleInCooldownSeconds,
        },
        environment: {
          AWS_REGION: region,
          WORK_QUEUE_URL: this.queue.queue.url,
          QUARANTINE_QUEUE_URL: this.queue.dlq.url,
          WORKER_CONCURRENCY: String(w.concurrency),
          WORKER_WAIT_TIME_SECONDS: "20",
          WORKER_IDLE_WINDOW_SECONDS: String(w.idleWindowSeconds),
          WORKER_MAX_PROTECTED_SECONDS: String(w.maxProtectedSeconds),
          WORKER_DEFAULT_VISIBILITY_SECONDS: String(w.defaultVisibilitySeconds),
          WORKER_MAX_VISIBILITY_SECONDS: String(w.maxVisibilitySeconds),
          WORKER_HEARTBEAT_SECONDS: String(w.heartbeatSeconds),
          WORKER_RETRY_DELAY_SECONDS: String(w.retryDelaySeconds),
          WORKER_SHUTDOWN_GRACE_SECONDS: String(w.shutdownGraceSeconds),
          TASK_PROTECTION_EXPIRES_MINUTES: String(w.protectionExpiresMinutes),
          WORKER_EXECUTABLES: JSON.stringify(w.executables),
          WORKER_SCRATCH_DIR: WORKER_SCRATCH_PATH,
          POWERTOOLS_SERVICE_NAME: "worker",
          POWERTOOLS_METRICS_NAMESPACE: "Encache/Worker",
          POWERTOOLS_LOG_LEVEL: "INFO",
        },
        logRetentionDays: c.logRetentionDays,
        tags,
      },
      child,
    );

    this.registerOutputs({
      queueUrl: this.queue.queue.url,
      dlqUrl: this.queue.dlq.url,
      repositoryUrl: this.repository.repositoryUrl,
      imageUri: this.image.imageUri,
      serviceName: this.service.service.name,
    });
  }
}
