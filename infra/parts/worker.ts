import * as fs from "node:fs";
import * as path from "node:path";
import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";
import { JOBS_TABLE_ROLE, metricsNamespace, PRODUCT, TABLE_ROLE_TAG } from "../../policy/contract";
import { WORKER_JOBS_TABLE } from "../../functions/shared/tables";
import { WORKER_ENV } from "../../functions/worker/env";
import { WORKER_GRANTS } from "../../functions/worker/iam";
import { ManagedQueue } from "../components/managed-queue";
import { Table } from "../components/table";
import { powertoolsServiceName } from "../components/queue-consumer";
import { QueueWorkerService } from "../components/queue-worker-service";
import { imageContentTag, writeImageContext } from "./worker.image";
import { REPO_ROOT } from "../bundle";
import type { Statement } from "../iam/document";
import { statementsFor } from "../iam/grants";
import { functionEnvironment, type PartArgs, partScope, type PartScope } from "./part-args";
import { inventoryRecord, type PartFace, type PartInventory } from "./inventory";
import { WORKER_STOP_TIMEOUT_SECONDS, type WorkerConfig, workQueueVisibilitySeconds } from "./worker.config";

/** The container entry, its Dockerfile and the build context the program writes, relative to the repository root. */
export const WORKER_ENTRY = "functions/worker/main.ts";
export const WORKER_DOCKERFILE = "functions/worker/Dockerfile";
export const WORKER_IMAGE_CONTEXT = "dist/worker-image";
/** The writable scratch volume; the Dockerfile creates it owned by `node`. */
export const WORKER_SCRATCH_PATH = "/scratch";

export interface WorkerArgs extends PartArgs {
  /** `encache:worker`. The worker adds a service to the platform cluster. */
  config: WorkerConfig;
}

/** `arn:aws:ecs:r:a:cluster/name` → `arn:aws:ecs:r:a:task/name/*`: every task of that cluster. Pure. */
export function clusterTasksArn(clusterArn: string): string {
  return `${clusterArn.replace(":cluster/", ":task/")}/*`;
}

/** Where the worker's symbolic resources live. */
export interface WorkerTaskAccess {
  workQueueArn: pulumi.Input<string>;
  workDlqArn: pulumi.Input<string>;
  /** ARN of the job ledger table. */
  jobsTableArn: pulumi.Input<string>;
  /** ARN of the cluster the tasks run in; protection is granted on its tasks only. */
  clusterArn: pulumi.Input<string>;
}

/** The task role's statements, derived from the grants beside the worker's code. Pure. */
export function workerTaskRoleStatements(a: WorkerTaskAccess): Statement[] {
  return statementsFor(WORKER_GRANTS, {
    "work-queue": { resource: a.workQueueArn },
    "work-dlq": { resource: a.workDlqArn },
    "jobs-table": { resource: a.jobsTableArn },
    "own-task": { resource: pulumi.output(a.clusterArn).apply(clusterTasksArn) },
  });
}

/**
 * Part 4 (docs/parts/worker.md): a work queue with its DLQ, the worker image in ECR, and a Fargate Spot
 * service whose tasks long-poll the queue, hold task scale-in protection while they work, and
 * scale on backlog per task.
 */
export class Worker extends pulumi.ComponentResource implements PartFace<WorkerOutputs> {
  readonly outputs: WorkerOutputs;
  readonly inventory: PartInventory;
  readonly queue: ManagedQueue;
  /** The job ledger (`<name>-jobs`): leases and completions, one item per job. */
  readonly jobsTable: Table;
  readonly repository: aws.ecr.Repository;
  readonly image: awsx.ecr.Image;
  readonly service: QueueWorkerService;
  /** Bytes of the bundled worker.js that goes into the image. */
  readonly bundleBytes: number;
  /** The container's POWERTOOLS_SERVICE_NAME, `<name>-<environment>`: the `service` dimension of its EMF metrics. */
  readonly powertoolsServiceName: string;

  constructor(name: string, args: WorkerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:parts:Worker", name, {}, opts);
    const part = partScope(this, name, args, "worker");

    this.queue = createQueue(part);
    this.jobsTable = createJobsTable(part);
    this.repository = createRepository(part);
    ({ image: this.image, bundleBytes: this.bundleBytes } = createImage(part, this.repository));
    this.powertoolsServiceName = powertoolsServiceName(name, args.platform.environment);
    this.service = createService(part, {
      queue: this.queue,
      jobsTable: this.jobsTable,
      repository: this.repository,
      image: this.image,
      powertoolsServiceName: this.powertoolsServiceName,
    });

    this.outputs = this.stackOutputs();
    this.inventory = this.describeInventory(name, args);
    this.registerOutputs({ ...this.outputs, inventory: inventoryRecord(this.inventory) });
  }

  /** The part's stack outputs, under their public names. */
  private stackOutputs(): WorkerOutputs {
    return {
      workerQueueUrl: this.queue.url,
      workerDlqUrl: this.queue.dlqUrl,
      workerRepositoryUrl: this.repository.repositoryUrl,
      workerImageUri: this.image.imageUri,
      workerServiceName: this.service.service.name,
      workerTaskRoleArn: this.service.taskRole.arn,
      workerJobsTable: this.jobsTable.table.name,
    };
  }

  /** The work queue and the ECS service that consumes it, and its view of the dashboard. */
  private describeInventory(name: string, args: WorkerArgs): PartInventory {
    const ecs = {
      name,
      clusterName: args.cluster.cluster.name,
      serviceName: this.service.service.name,
      queueName: this.queue.name,
      metricsService: this.powertoolsServiceName,
      backlogPerTaskTarget: this.service.settings.scaling.backlogPerTaskTarget,
    };
    return {
      part: name,
      queues: [{ queue: this.queue, consumers: [{ name, kind: "ecs-service", service: this.powertoolsServiceName, roleArn: this.service.taskRole.arn }] }],
      terminalQueues: [],
      ecsServices: [ecs],
      views: {
        worker: {
          queueName: ecs.queueName,
          clusterName: ecs.clusterName,
          serviceName: ecs.serviceName,
          metricsService: ecs.metricsService,
          backlogPerTaskTarget: ecs.backlogPerTaskTarget,
        },
      },
    };
  }
}

/** Part 4's stack outputs. */
export interface WorkerOutputs extends Record<string, pulumi.Input<unknown>> {
  workerQueueUrl: pulumi.Output<string>;
  workerDlqUrl: pulumi.Output<string>;
  workerRepositoryUrl: pulumi.Output<string>;
  workerImageUri: pulumi.Output<string>;
  workerServiceName: pulumi.Output<string>;
  workerTaskRoleArn: pulumi.Output<string>;
  /** The job ledger's generated name: where an operator reads a job's lease, runs and outcome. */
  workerJobsTable: pulumi.Output<string>;
}

type WorkerPart = PartScope<WorkerArgs>;

/** The work queue and its DLQ; the visibility covers the longest job's first lease. */
function createQueue({ name, args, tags, parent }: WorkerPart): ManagedQueue {
  const w = args.config;
  return new ManagedQueue(
    name,
    {
      visibilityTimeoutSeconds: workQueueVisibilitySeconds(w),
      messageRetentionSeconds: w.messageRetentionSeconds,
      maxReceiveCount: args.platform.maxReceiveCount,
      alarmActions: args.platform.alarmActions,
      protectDlq: args.platform.deletionProtection,
      tags,
    },
    { parent },
  );
}

/**
 * The job ledger: TTL drops an item 28 days after its last write (functions/worker/ledger.ts,
 * LEDGER_RETENTION_SECONDS), PITR and encryption come with the Table component. Tagged as a jobs
 * table, so job-table-ttl holds it to its TTL.
 */
function createJobsTable({ name, args, tags, parent }: WorkerPart): Table {
  const { hashKey, ttlAttribute } = WORKER_JOBS_TABLE;
  return new Table(
    `${name}-jobs`,
    {
      hashKey,
      attributes: { [hashKey]: "S" },
      ttlAttribute,
      deletionProtection: args.platform.deletionProtection,
      tags: { ...tags, [TABLE_ROLE_TAG]: JOBS_TABLE_ROLE },
    },
    { parent },
  );
}

/** The image repository: immutable tags, scanned on push, the last `keepImages` kept. */
function createRepository({ name, args, tags, parent }: WorkerPart): aws.ecr.Repository {
  const repository = new aws.ecr.Repository(
    `${name}-images`,
    {
      imageTagMutability: "IMMUTABLE",
      imageScanningConfiguration: { scanOnPush: true },
      encryptionConfigurations: [{ encryptionType: "AES256" }],
      forceDelete: !args.platform.deletionProtection,
      tags,
    },
    // The running service pulls its image from here; a replaced repository loses every image.
    { parent, protect: args.platform.deletionProtection },
  );
  new aws.ecr.LifecyclePolicy(
    `${name}-images-lifecycle`,
    {
      repository: repository.name,
      policy: JSON.stringify({
        rules: [
          {
            rulePriority: 1,
            description: `Keep the last ${args.config.keepImages} images`,
            selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: args.config.keepImages },
            action: { type: "expire" },
          },
        ],
      }),
    },
    { parent },
  );
  return repository;
}

/**
 * The worker bundle in a build context, built and pushed by awsx, FROM the base image the config
 * pins by digest. awsx builds inside an apply that waits for the repository's URL, so a first
 * preview builds nothing; a later preview or `up` builds when an input changed.
 */
function createImage({ name, args, parent }: WorkerPart, repository: aws.ecr.Repository): { image: awsx.ecr.Image; bundleBytes: number } {
  const bundle = writeImageContext(WORKER_ENTRY, WORKER_IMAGE_CONTEXT);
  const platform = "linux/amd64";
  const dockerfile = fs.readFileSync(path.join(REPO_ROOT, WORKER_DOCKERFILE), "utf8");
  const buildArgs = workerBuildArgs(args.config);
  const image = new awsx.ecr.Image(
    `${name}-image`,
    {
      repositoryUrl: repository.repositoryUrl,
      context: WORKER_IMAGE_CONTEXT,
      dockerfile: WORKER_DOCKERFILE,
      platform,
      args: buildArgs,
      // Content-addressed over everything the build reads, the base image's digest included: a new
      // tag whenever the image could change (the repository is immutable).
      imageTag: imageContentTag({ context: bundle.context, dockerfile, platform, buildArgs }),
    },
    { parent },
  );
  return { image, bundleBytes: bundle.bytes };
}

/** The worker image's Docker build arguments: the pinned base image. Pure. */
export function workerBuildArgs(c: Pick<WorkerConfig, "baseImage">): Record<string, string> {
  return { BASE_IMAGE: c.baseImage };
}

/** The Fargate Spot service, its task roles and its backlog-per-task scaling. */
function createService(
  { name, args, tags, parent }: WorkerPart,
  deps: { queue: ManagedQueue; jobsTable: Table; repository: aws.ecr.Repository; image: awsx.ecr.Image; powertoolsServiceName: string },
): QueueWorkerService {
  const w = args.config;
  const { queue } = deps;
  return new QueueWorkerService(
    name,
    {
      cluster: args.cluster,
      image: deps.image.imageUri,
      repositoryArn: deps.repository.arn,
      queueName: queue.queue.name,
      taskRoleStatements: workerTaskRoleStatements({
        workQueueArn: queue.queue.arn,
        workDlqArn: queue.dlq.arn,
        jobsTableArn: deps.jobsTable.table.arn,
        clusterArn: args.cluster.cluster.arn,
      }),
      vpcId: args.network.vpcId,
      subnetIds: args.network.privateSubnetIds,
      region: args.region,
      // One family per stack: dev's revisions never land in prod's family.
      family: `${PRODUCT}-${name}-${args.platform.environment}`,
      extraEgress: args.network.extraEgress.worker,
      cpu: w.cpu,
      memoryMb: w.memoryMb,
      fargateBase: w.fargateBase,
      scratchPath: WORKER_SCRATCH_PATH,
      stopTimeoutSeconds: WORKER_STOP_TIMEOUT_SECONDS,
      taskProtection: true,
      scaling: {
        minTasks: w.minTasks,
        maxTasks: w.maxTasks,
        backlogPerTaskTarget: w.backlogPerTaskTarget,
        scaleOutCooldownSeconds: w.scaleOutCooldownSeconds,
        scaleInCooldownSeconds: w.scaleInCooldownSeconds,
      },
      environment: functionEnvironment(
        WORKER_ENV,
        {
          workQueueUrl: queue.queue.url,
          quarantineQueueUrl: queue.dlq.url,
          concurrency: w.concurrency,
          // SQS's longest long poll: an idle task makes the fewest receives.
          waitTimeSeconds: 20,
          idleWindowSeconds: w.idleWindowSeconds,
          maxProtectedSeconds: w.maxProtectedSeconds,
          defaultVisibilitySeconds: w.defaultVisibilitySeconds,
          maxVisibilitySeconds: w.maxVisibilitySeconds,
          heartbeatSeconds: w.heartbeatSeconds,
          retryDelaySeconds: w.retryDelaySeconds,
          shutdownGraceSeconds: w.shutdownGraceSeconds,
          protectionExpiresMinutes: w.protectionExpiresMinutes,
          executables: w.executables,
          scratchDir: WORKER_SCRATCH_PATH,
          jobsTable: deps.jobsTable.table.name,
        },
        {
          AWS_REGION: args.region,
          POWERTOOLS_SERVICE_NAME: deps.powertoolsServiceName,
          POWERTOOLS_METRICS_NAMESPACE: metricsNamespace("Worker"),
          POWERTOOLS_LOG_LEVEL: "INFO",
        },
      ),
      logRetentionDays: args.platform.logRetentionDays,
      tags,
    },
    { parent },
  );
}
