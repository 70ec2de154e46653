/**
 * The composition root, and only that: the stack config, the shared network, alerts and cluster,
 * then parts 1 to 5 in order, each with its own config slice, the stack's dashboard over every
 * part's inventory, and the stack outputs, each part's under their public names.
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
import { OperatorPolicy } from "./components/operator-policy";
import { Network } from "./components/network";
import { PlatformDashboard } from "./components/platform-dashboard";
import { loadStackConfig, platformSettings } from "./config";
import { zoneNamesFor } from "./network-zones";
import { Fleet } from "./parts/fleet";
import { gpuGroupName } from "./parts/gpu";
import { Ingest } from "./parts/ingest";
import type { PartArgs } from "./parts/part-args";
import { dashboardQueues, dashboardViews } from "./parts/inventory";
import { operatorStatements, opsQueues } from "./parts/operator";
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

  const accountId = aws.getCallerIdentityOutput().accountId;
  // Every alarm of every part notifies this topic (and any topics config adds).
  const alerts = new AlertTopic("platform-alerts", {
    accountId,
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

  // The parts, 1 to 5 (docs/parts/): each with its own config slice, each giving its outputs and its inventory.
  const parts = [
    new Ingest("ingest", { ...shared, config: { ingest: config.ingest, gpu: config.gpu } }),
    new Retraining("retraining", { ...shared, config: config.retraining }),
    new Fleet("fleet", { ...shared, config: config.fleet }),
    new Worker("worker", { ...shared, config: config.worker }),
    new Pool("pool", { ...shared, config: config.pool }),
  ] as const;
  const [ingest, retraining, fleet, worker, pool] = parts;

  // The stack's dashboard, over every part's inventory: AWS's metrics and the functions' EMF metrics.
  const inventory = parts.flatMap((p) => p.inventory);
  const dashboard = new PlatformDashboard("platform-dashboard", {
    region,
    environment: config.environment,
    ...dashboardQueues(inventory),
    ...dashboardViews(inventory),
  });

  // The on-call's policy for `npm run ops` (docs/operations.md), on this stack's resources only.
  const sources = inventory.flatMap((p) => p.queues);
  const { gpu } = config;
  const operator = new OperatorPolicy("operator", {
    environment: config.environment,
    statements: operatorStatements({
      region,
      accountId,
      environment: config.environment,
      sourceQueueArns: sources.map((q) => q.queue.arn),
      dlqArns: sources.map((q) => q.queue.dlqArn),
      terminalQueueArns: inventory.flatMap((p) => p.terminalQueues).map((t) => t.arn),
      quarantineQueueArns: inventory
        .flatMap((p) => p.terminalQueues)
        .filter((t) => t.role === "quarantine")
        .map((t) => t.arn),
      // Only ingest's consumers quarantine into a queue of their own (the others use their DLQ).
      quarantineSourceArns: [ingest.queue.arn, ingest.queue.dlqArn],
      worker: { clusterName: cluster.cluster.name, clusterArn: cluster.cluster.arn, serviceName: worker.service.service.name },
      gpu:
        gpu.capacity.mode === "fleet"
          ? { mode: "fleet", groupName: gpuGroupName(config.environment), holdTag: gpu.holdTag }
          : { mode: "instance", nameTag: gpu.nameTag, holdTag: gpu.holdTag },
    }),
    tags,
  });

  // The stack outputs (a user contract: names and values stay as they are).
  return {
    vpcId: network.vpcId,
    alertTopicArn: alerts.topic.arn,
    clusterName: cluster.cluster.name,
    ...ingest.outputs,
    ...retraining.outputs,
    ...fleet.outputs,
    ...worker.outputs,
    ...pool.outputs,
    dashboardName: dashboard.dashboard.dashboardName,
    operatorPolicyArn: operator.policy.arn,
    opsQueues: opsQueues(inventory),
    // What `ops gpu` needs of the config: the hold tag the idle stop or scaler honours, and its idle
    // time; with a Spot fleet, the breaker's settings (`ops status` judges its records by them).
    opsGpu: {
      mode: gpu.capacity.mode,
      holdTag: gpu.holdTag,
      idleStopMinutes: gpu.idleStopMinutes,
      ...(gpu.capacity.fleet && gpu.capacity.fleet.spotPercent > 0 ? { spotBreaker: gpu.capacity.fleet.spotBreaker } : {}),
    },
  };
};
