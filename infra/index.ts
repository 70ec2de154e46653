/**
 * The composition root: the stack config, the shared network and cluster, then parts 1 to 5 in
 * order, each with its own config slice, the stack's dashboard over all of them, and the stack
 * outputs.
 *
 * The program is an async function (Pulumi calls an exported function and makes the object it
 * returns the stack outputs): the network's zones are pinned by AZ ID, and awsx's VPC takes zone
 * names, which only an AWS call can map the IDs to, before the VPC is declared.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ENVIRONMENT_TAG, STACK_TAG } from "../policy/contract";
import { AlertTopic } from "./components/alert-topic";
import { FargateCluster } from "./components/fargate-cluster";
import { Network } from "./components/network";
import { PlatformDashboard } from "./components/platform-dashboard";
import { loadStackConfig, platformSettings } from "./config";
import { zoneNamesFor } from "./network-zones";
import { Fleet } from "./parts/fleet";
import { Ingest } from "./parts/ingest";
import type { PartArgs } from "./parts/part-args";
import { Pool } from "./parts/pool";
import { Retraining } from "./parts/retraining";
import { Worker } from "./parts/worker";

export = async () => {
  // Validate everything first: a bad value must fail before a single resource is declared.
  const config = loadStackConfig();

  const region = aws.config.region;
  if (!region) throw new Error("aws:region: is required (set it with `pulumi config set aws:region <region>`)");

  const tags = { [ENVIRONMENT_TAG]: config.environment, [STACK_TAG]: pulumi.getStack() };

  const network = new Network("platform", {
    cidrBlock: config.network.cidrBlock,
    environment: config.environment,
    natGateways: config.network.natGateways,
    availabilityZones: config.network.availabilityZones,
    flowLogRetentionDays: config.logRetentionDays,
    region,
    gatewayEndpoints: config.network.gatewayEndpoints,
    interfaceEndpoints: config.network.interfaceEndpoints,
    ...(config.network.availabilityZoneIds ? { availabilityZoneNames: await zoneNamesFor(config.network.availabilityZoneIds) } : {}),
    tags,
  });

  // Every alarm of every part notifies this topic (and any topics config adds).
  const alerts = new AlertTopic("platform-alerts", {
    accountId: aws.getCallerIdentityOutput().accountId,
    subscriptions: config.alerts.subscriptions,
    tags,
  });

  // One ECS cluster for every part that runs tasks (retraining launcher, queue worker).
  const cluster = new FargateCluster("platform-cluster", { tags });

  const shared: PartArgs = {
    region,
    network: { vpcId: network.vpcId, privateSubnetIds: network.privateSubnetIds, cidrBlock: config.network.cidrBlock, extraEgress: config.network.extraEgress },
    cluster,
    platform: platformSettings(config, alerts.topic.arn),
    tags,
  };

  const vpcId = network.vpcId;
  const alertTopicArn = alerts.topic.arn;
  const clusterName = cluster.cluster.name;

  // Part 1: ingest and the GPU (docs/parts/ingest.md).
  const ingest = new Ingest("ingest", { ...shared, config: { ingest: config.ingest, gpu: config.gpu } });
  const ingestQueueUrl = ingest.queue.queue.url;
  const ingestDlqUrl = ingest.queue.dlq.url;
  const ingestQuarantineUrl = ingest.quarantine.queue.url;
  const gpuInstanceId = ingest.gpu.instance.id;
  const gpuInstanceIdParameter = ingest.gpu.instanceIdParameter.name;
  const ingestWindowFunction = ingest.windowConsumer.function.name;
  const ingestDlqConsumerFunction = ingest.dlqConsumer.function.name;

  // Part 2: the retraining launcher (docs/parts/retraining.md).
  const retraining = new Retraining("retraining", { ...shared, config: config.retraining });
  const retrainingQueueUrl = retraining.queue.queue.url;
  const retrainingDlqUrl = retraining.queue.dlq.url;
  const retrainingScheduleDlqUrl = retraining.scheduleDlq.queue.url;
  const retrainingStateTable = retraining.stateTable.table.name;
  const retrainingTaskDefinitionArn = retraining.strategyTask.taskDefinition.arn;
  const retrainingLauncherFunction = retraining.launcher.function.name;

  // Part 3: fleet lifecycle (docs/parts/fleet.md).
  const fleet = new Fleet("fleet", { ...shared, config: config.fleet });
  const fleetTerminationQueueUrl = fleet.terminationQueue.queue.url;
  const fleetTerminationDlqUrl = fleet.terminationQueue.dlq.url;
  const fleetHousekeepingQueueUrl = fleet.housekeepingQueue.queue.url;
  const fleetHousekeepingDlqUrl = fleet.housekeepingQueue.dlq.url;
  const fleetSchedulesDlqUrl = fleet.schedulesDlq.queue.url;
  const fleetJobsTable = fleet.jobs.table.name;
  const fleetTerminationFunction = fleet.terminationConsumer.function.name;
  const fleetHousekeepingFunction = fleet.housekeepingConsumer.function.name;

  // Part 4: the long-running ECS queue worker (docs/parts/worker.md).
  const worker = new Worker("worker", { ...shared, config: config.worker });
  const workerQueueUrl = worker.queue.queue.url;
  const workerDlqUrl = worker.queue.dlq.url;
  const workerRepositoryUrl = worker.repository.repositoryUrl;
  const workerImageUri = worker.image.imageUri;
  const workerServiceName = worker.service.service.name;
  const workerTaskRoleArn = worker.service.taskRole.arn;

  // Part 5: the warm-instance pool (docs/parts/pool.md).
  const pool = new Pool("pool", { ...shared, config: config.pool });
  const poolQueueUrls = Object.fromEntries(Object.entries(pool.classes).map(([k, r]) => [k, r.queue.queue.url]));
  const poolClaimTableName = pool.claimTable.table.name;
  const poolRefillFunction = pool.refill.function.name;
  const poolClaimPolicyArn = pool.claimPolicy.arn;

  // The stack's dashboard, over every part: AWS's metrics and the functions' EMF metrics.
  const queue = (label: string, q: { queue: aws.sqs.Queue }) => ({ label, name: q.queue.name });
  const dlq = (label: string, q: { dlq: aws.sqs.Queue }) => ({ label: `${label}-dlq`, name: q.dlq.name });
  const idle = ingest.idleStop;
  const sources = {
    ingest: ingest.queue,
    ...(idle ? { "ingest-gpu-idle": idle.queue } : {}),
    retraining: retraining.queue,
    "fleet-termination": fleet.terminationQueue,
    "fleet-housekeeping": fleet.housekeepingQueue,
    worker: worker.queue,
    "pool-refill": pool.refillQueue,
  };
  const advertQueues = Object.fromEntries(Object.entries(pool.classes).map(([className, r]) => [`pool-${className}`, r.queue]));
  const dashboard = new PlatformDashboard("platform-dashboard", {
    region,
    environment: config.environment,
    queues: Object.entries(sources).map(([label, q]) => queue(label, q)),
    deadLetterQueues: [
      ...Object.entries({ ...sources, ...advertQueues }).map(([label, q]) => dlq(label, q)),
      queue("ingest-quarantine", ingest.quarantine),
      ...(idle ? [queue("ingest-gpu-idle-schedule-dlq", idle.schedulesDlq)] : []),
      queue("retraining-schedule-dlq", retraining.scheduleDlq),
      queue("fleet-schedules-dlq", fleet.schedulesDlq),
      queue("pool-refill-schedule-dlq", pool.scheduleDlq),
    ],
    ingest: {
      gpuInstanceId,
      windowService: ingest.windowConsumer.powertoolsServiceName,
      dlqService: ingest.dlqConsumer.powertoolsServiceName,
      // Without the idle stop (gpu.idleStopMinutes 0) nothing reports the GPU's run state.
      ...(idle ? { gpuIdleService: idle.consumer.powertoolsServiceName } : {}),
    },
    worker: {
      queueName: worker.queue.queue.name,
      clusterName,
      serviceName: workerServiceName,
      metricsService: worker.powertoolsServiceName,
      backlogPerTaskTarget: worker.service.settings.scaling.backlogPerTaskTarget,
    },
    pool: {
      classes: Object.entries(pool.classes).map(([className, r]) => ({ name: className, queueName: r.queue.queue.name, size: pool.classSizes[className]! })),
      refillService: pool.refill.powertoolsServiceName,
      refillLogGroup: pool.refill.logGroup.name,
    },
  });
  const dashboardName = dashboard.dashboard.dashboardName;

  return {
    vpcId,
    alertTopicArn,
    clusterName,
    ingestQueueUrl,
    ingestDlqUrl,
    ingestQuarantineUrl,
    gpuInstanceId,
    gpuInstanceIdParameter,
    ingestWindowFunction,
    ingestDlqConsumerFunction,
    retrainingQueueUrl,
    retrainingDlqUrl,
    retrainingScheduleDlqUrl,
    retrainingStateTable,
    retrainingTaskDefinitionArn,
    retrainingLauncherFunction,
    fleetTerminationQueueUrl,
    fleetTerminationDlqUrl,
    fleetHousekeepingQueueUrl,
    fleetHousekeepingDlqUrl,
    fleetSchedulesDlqUrl,
    fleetJobsTable,
    fleetTerminationFunction,
    fleetHousekeepingFunction,
    workerQueueUrl,
    workerDlqUrl,
    workerRepositoryUrl,
    workerImageUri,
    workerServiceName,
    workerTaskRoleArn,
    poolQueueUrls,
    poolClaimTableName,
    poolRefillFunction,
    poolClaimPolicyArn,
    dashboardName,
  };
};
