/**
 * The composition root: the stack config, the shared network and cluster, then parts 1 to 5 in
 * order, each with its own config slice, and the stack outputs.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, STACK_TAG } from "../policy/contract";
import { FargateCluster } from "./components/fargate-cluster";
import { Network } from "./components/network";
import { loadStackConfig } from "./config";
import { Fleet } from "./parts/fleet";
import { Ingest } from "./parts/ingest";
import { type PartArgs, platformSettings } from "./parts/part-args";
import { Pool } from "./parts/pool";
import { Retraining } from "./parts/retraining";
import { Worker } from "./parts/worker";

// Validate everything first: a bad value must fail before a single resource is declared.
const config = loadStackConfig();

const region = aws.config.region;
if (!region) throw new Error("aws:region: is required (set it with `pulumi config set aws:region <region>`)");

const tags = { [ENVIRONMENT_TAG]: config.environment, [STACK_TAG]: pulumi.getStack() };

const network = new Network("platform", {
  cidrBlock: config.network.cidrBlock,
  natGateways: config.network.natGateways,
  availabilityZones: config.network.availabilityZones,
  tags,
});

// One ECS cluster for every part that runs tasks (retraining launcher, queue worker).
const cluster = new FargateCluster("platform-cluster", { tags });

const shared: PartArgs = {
  region,
  network: { vpcId: network.vpcId, privateSubnetIds: network.privateSubnetIds },
  cluster,
  platform: platformSettings(config),
  tags,
};

export const vpcId = network.vpcId;
export const clusterName = cluster.cluster.name;

// Part 1: ingest and the GPU (docs/parts/ingest.md).
const ingest = new Ingest("ingest", { ...shared, config: { ingest: config.ingest, gpu: config.gpu } });
export const ingestQueueUrl = ingest.queue.queue.url;
export const ingestDlqUrl = ingest.queue.dlq.url;
export const ingestQuarantineUrl = ingest.quarantine.queue.url;
export const gpuInstanceId = ingest.gpu.instance.id;
export const gpuInstanceIdParameter = ingest.gpu.instanceIdParameter.name;
export const ingestWindowFunction = ingest.windowConsumer.function.name;
export const ingestDlqConsumerFunction = ingest.dlqConsumer.function.name;

// Part 2: the retraining launcher (docs/parts/retraining.md).
const retraining = new Retraining("retraining", { ...shared, config: config.retraining });
export const retrainingQueueUrl = retraining.queue.queue.url;
export const retrainingDlqUrl = retraining.queue.dlq.url;
export const retrainingScheduleDlqUrl = retraining.scheduleDlq.queue.url;
export const retrainingStateTable = retraining.stateTable.table.name;
export const retrainingTaskDefinitionArn = retraining.strategyTask.taskDefinition.arn;
export const retrainingLauncherFunction = retraining.launcher.function.name;

// Part 3: fleet lifecycle (docs/parts/fleet.md).
const fleet = new Fleet("fleet", { ...shared, config: config.fleet });
export const fleetTerminationQueueUrl = fleet.terminationQueue.queue.url;
export const fleetTerminationDlqUrl = fleet.terminationQueue.dlq.url;
export const fleetHousekeepingQueueUrl = fleet.housekeepingQueue.queue.url;
export const fleetHousekeepingDlqUrl = fleet.housekeepingQueue.dlq.url;
export const fleetSchedulesDlqUrl = fleet.schedulesDlq.queue.url;
export const fleetJobsTable = fleet.jobs.table.name;
export const fleetTerminationFunction = fleet.terminationConsumer.function.name;
export const fleetHousekeepingFunction = fleet.housekeepingConsumer.function.name;

// Part 4: the long-running ECS queue worker (docs/parts/worker.md).
const worker = new Worker("worker", { ...shared, config: config.worker });
export const workerQueueUrl = worker.queue.queue.url;
export const workerDlqUrl = worker.queue.dlq.url;
export const workerRepositoryUrl = worker.repository.repositoryUrl;
export const workerImageUri = worker.image.imageUri;
export const workerServiceName = worker.service.service.name;
export const workerTaskRoleArn = worker.service.taskRole.arn;

// Part 5: the warm-instance pool (docs/parts/pool.md).
const pool = new Pool("pool", { ...shared, config: config.pool });
export const poolQueueUrls = Object.fromEntries(Object.entries(pool.classes).map(([k, r]) => [k, r.queue.queue.url]));
export const poolClaimTableName = pool.claimTable.table.name;
export const poolRefillFunction = pool.refill.function.name;
export const poolClaimPolicyArn = pool.claimPolicy.arn;
