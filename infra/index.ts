import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { loadStackConfig } from "./config";
import { FargateCluster } from "./components/fargate-cluster";
import { Network } from "./components/network";
import { Ingest } from "./parts/ingest";
import { Fleet } from "./parts/fleet";
import { Retraining } from "./parts/retraining";

// Validate everything first: a bad value must fail before a single resource is declared.
const config = loadStackConfig();

const region = aws.config.region;
if (!region) throw new Error("aws:region: is required (set it with `pulumi config set aws:region <region>`)");

const tags = { "encache:environment": config.environment, "encache:stack": pulumi.getStack() };

const network = new Network("platform", {
  cidrBlock: config.network.cidrBlock,
  natGateways: config.network.natGateways,
  availabilityZones: config.network.availabilityZones,
  tags,
});

// One ECS cluster for every part that runs tasks (retraining launcher, queue worker).
const cluster = new FargateCluster("platform-cluster", { tags });

const ingest = new Ingest("ingest", {
  config,
  region,
  vpcId: network.vpcId,
  privateSubnetIds: network.privateSubnetIds,
  tags,
});

export const vpcId = network.vpcId;
export const clusterName = cluster.cluster.name;
export const ingestQueueUrl = ingest.queue.queue.url;
export const ingestDlqUrl = ingest.queue.dlq.url;
export const ingestQuarantineUrl = ingest.quarantine.queue.url;
export const gpuInstanceId = ingest.gpu.instance.id;
export const gpuInstanceIdParameter = ingest.gpu.instanceIdParameter.name;
export const ingestWindowFunction = ingest.windowConsumer.function.name;
export const ingestDlqConsumerFunction = ingest.dlqConsumer.function.name;

// Parts 2-5 are added below this line, one block each.

// Part 2: retraining launcher (seed 001).
const retraining = new Retraining("retraining", {
  config,
  region,
  vpcId: network.vpcId,
  privateSubnetIds: network.privateSubnetIds,
  cluster,
  tags,
});
export const retrainingQueueUrl = retraining.queue.queue.url;
export const retrainingDlqUrl = retraining.queue.dlq.url;
export const retrainingScheduleDlqUrl = retraining.scheduleDlq.queue.url;
export const retrainingStateTable = retraining.stateTable.table.name;
export const retrainingTaskDefinitionArn = retraining.strategyTask.taskDefinition.arn;
export const retrainingLauncherFunction = retraining.launcher.function.name;

// Part 5: the warm-instance pool (seed 004).
import { Pool } from "./parts/pool";
const pool = new Pool("pool", { config, region, vpcId: network.vpcId, privateSubnetIds: network.privateSubnetIds, cluster, tags });
export const poolQueueUrls = Object.fromEntries(Object.entries(pool.classes).map(([k, r]) => [k, r.queue.queue.url]));
export const poolClaimTableName = pool.claimTable.table.name;
export const poolRefillFunction = pool.refill.function.name;
export const poolClaimPolicyArn = pool.claimPolicy.arn;
// END part 5

// Part 3: fleet lifecycle (seed 002).
const fleet = new Fleet("fleet", {
  config,
  region,
  vpcId: network.vpcId,
  privateSubnetIds: network.privateSubnetIds,
  tags,
});
export const fleetTerminationQueueUrl = fleet.terminationQueue.queue.url;
export const fleetTerminationDlqUrl = fleet.terminationQueue.dlq.url;
export const fleetHousekeepingQueueUrl = fleet.housekeepingQueue.queue.url;
export const fleetHousekeepingDlqUrl = fleet.housekeepingQueue.dlq.url;
export const fleetSchedulesDlqUrl = fleet.schedulesDlq.queue.url;
export const fleetJobsTable = fleet.jobs.table.name;
export const fleetTerminationFunction = fleet.terminationConsumer.function.name;
export const fleetHousekeepingFunction = fleet.housekeepingConsumer.function.name;

// Part 4: the long-running ECS queue worker (seed 003).
import { Worker } from "./parts/worker";
const worker = new Worker("worker", { config, region, vpcId: network.vpcId, privateSubnetIds: network.privateSubnetIds, cluster, tags });
export const workerQueueUrl = worker.queue.queue.url;
export const workerDlqUrl = worker.queue.dlq.url;
export const workerRepositoryUrl = worker.repository.repositoryUrl;
export const workerImageUri = worker.image.imageUri;
export const workerServiceName = worker.service.service.name;
export const workerTaskRoleArn = worker.service.taskRole.arn;
