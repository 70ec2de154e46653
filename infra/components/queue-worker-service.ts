import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { TASK_PROTECTION_ENV, TASK_PROTECTION_MODE, TASK_PROTECTION_TAG } from "../../policy/contract";
import { httpsEgress, type Statement } from "../iam/document";
import type { FargateCluster } from "./fargate-cluster";
import { FargateTaskDefinition } from "./fargate-task-definition";

export interface QueueWorkerScaling {
  /** Fewest tasks (≥ 1: backlog ÷ running tasks has no value at zero tasks). */
  minTasks: number;
  maxTasks: number;
  /** Target visible messages per running task. */
  backlogPerTaskTarget: number;
  /**
   * @default 60
   */
  scaleOutCooldownSeconds?: number;
  /**
   * @default 300
   */
  scaleInCooldownSeconds?: number;
}

export interface QueueWorkerServiceArgs {
  /** The platform cluster (Container Insights on, FARGATE and FARGATE_SPOT providers). */
  cluster: FargateCluster;
  /** Image URI, ideally digest-pinned. */
  image: pulumi.Input<string>;
  /** ARN of the ECR repository the image lives in: the execution role may pull from it only. */
  repositoryArn: pulumi.Input<string>;
  /** Name of the queue whose backlog drives scaling. */
  queueName: pulumi.Input<string>;
  /** What the worker's own code calls, as plain statements; the task role gets exactly these. */
  taskRoleStatements: Statement[];
  vpcId: pulumi.Input<string>;
  subnetIds: pulumi.Input<pulumi.Input<string>[]>;
  /** Region of the log group, for the awslogs driver. */
  region: string;
  /**
   * Egress beyond HTTPS that the workload needs (the stack config's `network.extraEgress.worker`).
   * @default []
   */
  extraEgress?: Array<{ protocol: string; fromPort: number; toPort: number; cidrBlocks: string[]; description: string }>;
  /**
   * Task definition family. No default: a family is shared by everything in the account and
   * region that registers into it, so each stack needs its own.
   */
  family: string;
  scaling: QueueWorkerScaling;
  /**
   * Task CPU units.
   * @default 512
   */
  cpu?: number;
  /**
   * Task memory in MiB, also the container's hard limit.
   * @default 1024
   */
  memoryMb?: number;
  /**
   * Tasks always on on-demand FARGATE before FARGATE_SPOT takes the rest.
   * @default 0
   */
  fargateBase?: number;
  /**
   * Container environment.
   * @default {}
   */
  environment?: Record<string, pulumi.Input<string>>;
  /**
   * Where the writable scratch volume is mounted (the root filesystem is read-only).
   * @default "/scratch"
   */
  scratchPath?: string;
  /**
   * Seconds between SIGTERM and SIGKILL (Fargate allows at most 120).
   * @default 120
   */
  stopTimeoutSeconds?: number;
  /**
   * The containers hold task scale-in protection (sets the marker tag and env var).
   * @default true
   */
  taskProtection?: boolean;
  /**
   * @default "worker"
   */
  containerName?: string;
  /**
   * @default 14
   */
  logRetentionDays?: number;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const queueWorkerServiceDefaults = {
  cpu: 512,
  memoryMb: 1024,
  fargateBase: 0,
  scratchPath: "/scratch",
  stopTimeoutSeconds: 120,
  taskProtection: true,
  containerName: "worker",
  logRetentionDays: 14,
  scaleOutCooldownSeconds: 60,
  scaleInCooldownSeconds: 300,
} as const;

export interface ResolvedQueueWorkerSettings {
  cpu: number;
  memoryMb: number;
  fargateBase: number;
  scratchPath: string;
  stopTimeoutSeconds: number;
  taskProtection: boolean;
  containerName: string;
  logRetentionDays: number;
  scaling: Required<QueueWorkerScaling>;
}

/** Fills defaults and refuses what ECS or Application Auto Scaling would refuse. Pure. */
export function resolveQueueWorkerServiceArgs(
  args: Pick<
    QueueWorkerServiceArgs,
    "family" | "cpu" | "memoryMb" | "fargateBase" | "scratchPath" | "stopTimeoutSeconds" | "taskProtection" | "containerName" | "logRetentionDays" | "scaling"
  >,
): ResolvedQueueWorkerSettings {
  const d = queueWorkerServiceDefaults;
  const s = args.scaling;
  const r: ResolvedQueueWorkerSettings = {
    cpu: args.cpu ?? d.cpu,
    memoryMb: args.memoryMb ?? d.memoryMb,
    fargateBase: args.fargateBase ?? d.fargateBase,
    scratchPath: args.scratchPath ?? d.scratchPath,
    stopTimeoutSeconds: args.stopTimeoutSeconds ?? d.stopTimeoutSeconds,
    taskProtection: args.taskProtection ?? d.taskProtection,
    containerName: args.containerName ?? d.containerName,
    logRetentionDays: args.logRetentionDays ?? d.logRetentionDays,
    scaling: {
      minTasks: s.minTasks,
      maxTasks: s.maxTasks,
      backlogPerTaskTarget: s.backlogPerTaskTarget,
      scaleOutCooldownSeconds: s.scaleOutCooldownSeconds ?? d.scaleOutCooldownSeconds,
      scaleInCooldownSeconds: s.scaleInCooldownSeconds ?? d.scaleInCooldownSeconds,
    },
  };
  const errors: string[] = [];
  const int = (label: string, v: number, min: number, max: number) => {
    if (!Number.isInteger(v) || v < min || v > max) errors.push(`${label} must be an integer in ${min}..${max} (got ${v})`);
  };
  int("stopTimeoutSeconds", r.stopTimeoutSeconds, 2, 120);
  int("scaling.minTasks", r.scaling.minTasks, 1, 1000);
  int("scaling.maxTasks", r.scaling.maxTasks, 1, 1000);
  int("fargateBase", r.fargateBase, 0, 1000);
  int("scaling.scaleOutCooldownSeconds", r.scaling.scaleOutCooldownSeconds, 0, 3600);
  int("scaling.scaleInCooldownSeconds", r.scaling.scaleInCooldownSeconds, 0, 3600);
  if (r.scaling.minTasks > r.scaling.maxTasks) errors.push("scaling.minTasks must not exceed scaling.maxTasks");
  if (!(r.scaling.backlogPerTaskTarget > 0)) errors.push("scaling.backlogPerTaskTarget must be above 0");
  if (!/^\/[A-Za-z0-9_.\-/]+$/.test(r.scratchPath) || r.scratchPath === "/") errors.push("scratchPath must be an absolute path below /");
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(r.containerName)) errors.push("containerName must be 1-255 letters, digits, _ or -");
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(args.family)) errors.push(`family "${args.family}" must be 1-255 letters, digits, _ or -`);
  if (errors.length > 0) throw new Error(`QueueWorkerService: ${errors.join("; ")}`);
  return r;
}

/**
 * FARGATE_SPOT takes every task; an optional base of on-demand FARGATE tasks comes first.
 * A strategy, never a launch type (the two are exclusive). Pure.
 */
export function capacityProviderStrategy(fargateBase: number): Array<{ capacityProvider: string; base: number; weight: number }> {
  const spot = { capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 };
  return fargateBase > 0 ? [spot, { capacityProvider: "FARGATE", base: fargateBase, weight: 0 }] : [spot];
}

/**
 * Backlog per task as metric math: the queue's visible messages ÷ the service's running tasks
 * from Container Insights. Target tracking keeps it at the target. Pure (inputs may be outputs).
 */
export function backlogPerTaskMetrics(names: { queueName: pulumi.Input<string>; clusterName: pulumi.Input<string>; serviceName: pulumi.Input<string> }) {
  return [
    {
      id: "visible",
      label: "Visible messages",
      metricStat: {
        metric: { namespace: "AWS/SQS", metricName: "ApproximateNumberOfMessagesVisible", dimensions: [{ name: "QueueName", value: names.queueName }] },
        stat: "Sum",
      },
      returnData: false,
    },
    {
      id: "running",
      label: "Running tasks",
      metricStat: {
        metric: {
          namespace: "ECS/ContainerInsights",
          metricName: "RunningTaskCount",
          dimensions: [
            { name: "ClusterName", value: names.clusterName },
            { name: "ServiceName", value: names.serviceName },
          ],
        },
        stat: "Average",
      },
      returnData: false,
    },
    { id: "backlog_per_task", label: "Backlog per task", expression: "visible / running", returnData: true },
  ];
}

/**
 * The children this service declared itself before its task definition became a
 * FargateTaskDefinition: each now lives under that component, two of them under the task
 * definition's own role names. Their earlier names under this service, by their names now.
 */
export function earlierChildNames(name: string): Record<string, string> {
  return { [`${name}-task`]: `${name}-task-role`, [`${name}-execution`]: `${name}-execution-role` };
}

/**
 * A Fargate Spot ECS service whose tasks long-poll a queue: one hardened container (non-root,
 * read-only root filesystem with a writable scratch volume, container memory limit, logs,
 * stopTimeout) in a FargateTaskDefinition with its task and execution roles, a security group
 * with egress only, no public IP, and target tracking on backlog per task.
 *
 * Children: the task definition `<name>` (a FargateTaskDefinition), `<name>-sg`, the service
 * `<name>`, `<name>-scaling` and `<name>-backlog-per-task`.
 */
export class QueueWorkerService extends pulumi.ComponentResource {
  /** The task definition, its roles and its log group. */
  readonly task: FargateTaskDefinition;
  readonly service: aws.ecs.Service;
  readonly securityGroup: aws.ec2.SecurityGroup;
  readonly scalingTarget: aws.appautoscaling.Target;
  readonly scalingPolicy: aws.appautoscaling.Policy;
  readonly settings: ResolvedQueueWorkerSettings;

  private readonly tags: Record<string, string>;

  constructor(
    private readonly name: string,
    private readonly args: QueueWorkerServiceArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("encache:compute:QueueWorkerService", name, {}, opts);
    this.settings = resolveQueueWorkerServiceArgs(args);
    this.tags = args.tags ?? {};

    this.task = this.declareTaskDefinition();
    this.securityGroup = this.declareSecurityGroup();
    this.service = this.declareService();
    this.scalingTarget = this.declareScalingTarget();
    this.scalingPolicy = this.declareBacklogPerTaskPolicy();

    this.registerOutputs({
      serviceName: this.service.name,
      taskDefinitionArn: this.taskDefinition.arn,
      taskRoleArn: this.taskRole.arn,
      logGroupName: this.logGroup.name,
    });
  }

  get taskDefinition(): aws.ecs.TaskDefinition {
    return this.task.taskDefinition;
  }

  get taskRole(): aws.iam.Role {
    return this.task.taskRole;
  }

  get executionRole(): aws.iam.Role {
    return this.task.executionRole;
  }

  get logGroup(): aws.cloudwatch.LogGroup {
    return this.task.logGroup;
  }

  /**
   * `<name>`: the one hardened container (non-root, read-only root with a scratch volume, no
   * capabilities, an init process that reaps the allow-listed executables' orphans and forwards
   * SIGTERM), holding task protection when asked.
   */
  private declareTaskDefinition(): FargateTaskDefinition {
    const { args, settings: r } = this;
    return new FargateTaskDefinition(
      this.name,
      {
        family: args.family,
        containerName: r.containerName,
        image: args.image,
        repositoryArn: args.repositoryArn,
        region: args.region,
        cpu: r.cpu,
        memoryMb: r.memoryMb,
        containerCpu: true,
        privileged: false,
        hardening: { scratchPath: r.scratchPath, initProcess: true },
        stopTimeoutSeconds: r.stopTimeoutSeconds,
        logRetentionDays: r.logRetentionDays,
        environment: { ...(args.environment ?? {}), ...(r.taskProtection ? { [TASK_PROTECTION_ENV]: TASK_PROTECTION_MODE } : {}) },
        taskRoleStatements: args.taskRoleStatements,
        taskDefinitionTags: r.taskProtection ? { [TASK_PROTECTION_TAG]: TASK_PROTECTION_MODE } : {},
        tags: this.tags,
      },
      { parent: this, transformations: [this.keepEarlierUrns()] },
    );
  }

  /**
   * Aliases that keep the URNs of the children this service declared itself before it composed a
   * FargateTaskDefinition (earlierChildNames): a changed parent or name would otherwise replace them.
   */
  private keepEarlierUrns(): pulumi.ResourceTransformation {
    const earlier = earlierChildNames(this.name);
    return ({ type, name, props, opts }) => {
      if (type === "encache:compute:FargateTaskDefinition") return undefined;
      return { props, opts: pulumi.mergeOptions(opts, { aliases: [{ name: earlier[name] ?? name, parent: this }] }) };
    };
  }

  /** `<name>-sg`: no ingress; egress to the AWS APIs through NAT. */
  private declareSecurityGroup(): aws.ec2.SecurityGroup {
    const { name, args } = this;
    return new aws.ec2.SecurityGroup(
      `${name}-sg`,
      {
        vpcId: args.vpcId,
        description: `${name} tasks: no ingress; egress to AWS APIs through NAT`,
        // The task-protection endpoint is the ECS agent's, link-local, which security groups do not filter.
        egress: [httpsEgress("SQS, ECR, CloudWatch Logs through NAT"), ...(args.extraEgress ?? [])],
        tags: this.tags,
      },
      { parent: this },
    );
  }

  /** `<name>`: the service, Spot after `fargateBase` on-demand tasks, private, rolling back a failed deploy. */
  private declareService(): aws.ecs.Service {
    const { args, settings: r } = this;
    return new aws.ecs.Service(
      this.name,
      {
        cluster: args.cluster.cluster.arn,
        taskDefinition: this.taskDefinition.arn,
        desiredCount: r.scaling.minTasks,
        capacityProviderStrategies: capacityProviderStrategy(r.fargateBase),
        networkConfiguration: { subnets: args.subnetIds, securityGroups: [this.securityGroup.id], assignPublicIp: false },
        deploymentCircuitBreaker: { enable: true, rollback: true },
        // New tasks start before old ones stop; protected old tasks stop only once they release.
        deploymentMinimumHealthyPercent: 100,
        deploymentMaximumPercent: 200,
        enableEcsManagedTags: true,
        propagateTags: "SERVICE",
        tags: this.tags,
      },
      // Autoscaling owns the desired count after creation; the strategy needs the cluster's providers.
      { parent: this, dependsOn: [args.cluster.capacityProviders], ignoreChanges: ["desiredCount"] },
    );
  }

  /** `<name>-scaling`: the service's desired count, between the fewest and most tasks. */
  private declareScalingTarget(): aws.appautoscaling.Target {
    const { args, settings: r } = this;
    return new aws.appautoscaling.Target(
      `${this.name}-scaling`,
      {
        serviceNamespace: "ecs",
        scalableDimension: "ecs:service:DesiredCount",
        resourceId: pulumi.interpolate`service/${args.cluster.cluster.name}/${this.service.name}`,
        minCapacity: r.scaling.minTasks,
        maxCapacity: r.scaling.maxTasks,
        tags: this.tags,
      },
      { parent: this },
    );
  }

  /** `<name>-backlog-per-task`: target tracking on backlog per task (visible messages ÷ running tasks). */
  private declareBacklogPerTaskPolicy(): aws.appautoscaling.Policy {
    const { args, settings: r } = this;
    const target = this.scalingTarget;
    return new aws.appautoscaling.Policy(
      `${this.name}-backlog-per-task`,
      {
        policyType: "TargetTrackingScaling",
        serviceNamespace: target.serviceNamespace,
        scalableDimension: target.scalableDimension,
        resourceId: target.resourceId,
        targetTrackingScalingPolicyConfiguration: {
          targetValue: r.scaling.backlogPerTaskTarget,
          scaleOutCooldown: r.scaling.scaleOutCooldownSeconds,
          scaleInCooldown: r.scaling.scaleInCooldownSeconds,
          customizedMetricSpecification: {
            metrics: backlogPerTaskMetrics({ queueName: args.queueName, clusterName: args.cluster.cluster.name, serviceName: this.service.name }),
          },
        },
      },
      { parent: this },
    );
  }
}
