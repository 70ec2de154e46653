import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { assumedBy, httpsEgress, type Statement, trustScope } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";
import { hardenedContainerFields, SCRATCH_VOLUME } from "../lib/container-hardening";
import { declare } from "../lib/declared-document";

const TASK_DEFINITION_TYPE = "aws:ecs/taskDefinition:TaskDefinition";
import { TASK_PROTECTION_ENV, TASK_PROTECTION_MODE, TASK_PROTECTION_TAG } from "../../policy/contract";
import type { FargateCluster } from "./fargate-cluster";


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
  args: Pick<QueueWorkerServiceArgs, "family" | "cpu" | "memoryMb" | "fargateBase" | "scratchPath" | "stopTimeoutSeconds" | "taskProtection" | "containerName" | "logRetentionDays" | "scaling">,
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

/** What the ECS agent does with the execution role: pull the image from its repository, write the logs. */
export function executionRoleStatements(a: { repositoryArn: pulumi.Input<string>; logGroupArn: pulumi.Input<string> }): Statement[] {
  return [
    // GetAuthorizationToken has no resource-level permissions.
    { Sid: "EcrToken", Effect: "Allow", Action: ["ecr:GetAuthorizationToken"], Resource: "*" },
    {
      Sid: "PullImage",
      Effect: "Allow",
      Action: ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
      Resource: a.repositoryArn,
    },
    { Sid: "WriteTaskLogs", Effect: "Allow", Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: pulumi.interpolate`${a.logGroupArn}:*` },
  ];
}

/**
 * A Fargate Spot ECS service whose tasks long-poll a queue: one hardened container (non-root,
 * read-only root filesystem with a writable scratch volume, container memory limit, logs,
 * stopTimeout), its task and execution roles, a security group with egress only, no public IP,
 * and target tracking on backlog per task.
 */
export class QueueWorkerService extends pulumi.ComponentResource {
  readonly taskDefinition: aws.ecs.TaskDefinition;
  readonly service: aws.ecs.Service;
  readonly taskRole: aws.iam.Role;
  readonly executionRole: aws.iam.Role;
  readonly logGroup: aws.cloudwatch.LogGroup;
  readonly securityGroup: aws.ec2.SecurityGroup;
  readonly scalingTarget: aws.appautoscaling.Target;
  readonly scalingPolicy: aws.appautoscaling.Policy;
  readonly settings: ResolvedQueueWorkerSettings;

  constructor(name: string, args: QueueWorkerServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:compute:QueueWorkerService", name, {}, opts);
    this.settings = resolveQueueWorkerServiceArgs(args);
    const scope: ServiceScope = { name, args, r: this.settings, tags: args.tags ?? {}, parent: this };

    this.logGroup = new aws.cloudwatch.LogGroup(`${name}-logs`, { retentionInDays: this.settings.logRetentionDays, tags: scope.tags }, { parent: this });
    const roles = createRoles(scope, this.logGroup);
    ({ taskRole: this.taskRole, executionRole: this.executionRole } = roles);
    this.taskDefinition = createTaskDefinition(scope, { ...roles, logGroup: this.logGroup });
    this.securityGroup = createSecurityGroup(scope);
    this.service = createService(scope, this.taskDefinition, this.securityGroup);
    ({ target: this.scalingTarget, policy: this.scalingPolicy } = createScaling(scope, this.service));

    this.registerOutputs({
      serviceName: this.service.name,
      taskDefinitionArn: this.taskDefinition.arn,
      taskRoleArn: this.taskRole.arn,
      logGroupName: this.logGroup.name,
    });
  }
}

interface ServiceScope {
  name: string;
  args: QueueWorkerServiceArgs;
  r: ResolvedQueueWorkerSettings;
  tags: Record<string, string>;
  parent: pulumi.Resource;
}

interface ServiceRoles {
  taskRole: aws.iam.Role;
  executionRole: aws.iam.Role;
  /** The roles' inline policies: the task definition waits for them, so no task starts without its grants. */
  policies: aws.iam.RolePolicy[];
}

/** The task role (exactly the workload's statements) and the execution role (image pull, logs). */
function createRoles({ name, args, tags, parent }: ServiceScope, logGroup: aws.cloudwatch.LogGroup): ServiceRoles {
  const trust = trustScope(parent);
  const taskRole = new aws.iam.Role(`${name}-task-role`, { assumeRolePolicy: assumedBy("ecs-tasks.amazonaws.com", trust), tags }, { parent });
  const taskPolicy = new aws.iam.RolePolicy(
    `${name}-task-policy`,
    { role: taskRole.id, policy: declaredPolicy(args.taskRoleStatements, { resource: `${name}-task-policy`, resourceType: ROLE_POLICY_TYPE, parent }) },
    { parent },
  );
  const executionRole = new aws.iam.Role(`${name}-execution-role`, { assumeRolePolicy: assumedBy("ecs-tasks.amazonaws.com", trust), tags }, { parent });
  const executionPolicy = new aws.iam.RolePolicy(
    `${name}-execution-policy`,
    {
      role: executionRole.id,
      policy: declaredPolicy(executionRoleStatements({ repositoryArn: args.repositoryArn, logGroupArn: logGroup.arn }), {
        resource: `${name}-execution-policy`,
        resourceType: ROLE_POLICY_TYPE,
        parent,
      }),
    },
    { parent },
  );
  return { taskRole, executionRole, policies: [taskPolicy, executionPolicy] };
}

/** The one hardened container: non-root, read-only root with a scratch volume, no capabilities. */
function createTaskDefinition({ name, args, r, tags, parent }: ServiceScope, deps: ServiceRoles & { logGroup: aws.cloudwatch.LogGroup }): aws.ecs.TaskDefinition {
  const environment = {
    ...(args.environment ?? {}),
    ...(r.taskProtection ? { [TASK_PROTECTION_ENV]: TASK_PROTECTION_MODE } : {}),
  };
  // A plain structure with outputs as leaves (not built inside an apply), so its declaration keeps
  // every known field readable on a first preview.
  const containers = declare(
    [
      {
        name: r.containerName,
        image: args.image,
        essential: true,
        privileged: false,
        // Read-only root with the scratch volume, the image's `node` user (uid 1000), no capabilities,
        // and an init process that reaps the allow-listed executables' orphans and forwards SIGTERM.
        ...hardenedContainerFields({ scratchPath: r.scratchPath, initProcess: true }),
        memory: r.memoryMb,
        cpu: r.cpu,
        stopTimeout: r.stopTimeoutSeconds,
        // In the order the provider stores them (orderEnvironmentVariables: Go's cmp.Compare, byte
        // order), not localeCompare's: the declaration then equals the stored definition.
        environment: Object.entries(environment)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([key, value]) => ({ name: key, value })),
        logConfiguration: {
          logDriver: "awslogs",
          options: { "awslogs-group": deps.logGroup.name, "awslogs-region": args.region, "awslogs-stream-prefix": r.containerName },
        },
      },
    ],
    { resource: name, resourceType: TASK_DEFINITION_TYPE, property: "containerDefinitions", parent },
  );
  const containerDefinitions = pulumi.jsonStringify(containers);
  return new aws.ecs.TaskDefinition(
    name,
    {
      family: args.family,
      requiresCompatibilities: ["FARGATE"],
      networkMode: "awsvpc",
      cpu: String(r.cpu),
      memory: String(r.memoryMb),
      runtimePlatform: { operatingSystemFamily: "LINUX", cpuArchitecture: "X86_64" },
      taskRoleArn: deps.taskRole.arn,
      executionRoleArn: deps.executionRole.arn,
      // A bind-mount volume without a host path: task-scoped ephemeral storage on Fargate.
      volumes: [{ name: SCRATCH_VOLUME }],
      containerDefinitions,
      tags: { ...tags, ...(r.taskProtection ? { [TASK_PROTECTION_TAG]: TASK_PROTECTION_MODE } : {}) },
    },
    { parent, dependsOn: deps.policies },
  );
}

/** No ingress; egress to the AWS APIs through NAT. */
function createSecurityGroup({ name, args, tags, parent }: ServiceScope): aws.ec2.SecurityGroup {
  return new aws.ec2.SecurityGroup(
    `${name}-sg`,
    {
      vpcId: args.vpcId,
      description: `${name} tasks: no ingress; egress to AWS APIs through NAT`,
      // The task-protection endpoint is the ECS agent's, link-local, which security groups do not filter.
      egress: [httpsEgress("SQS, ECR, CloudWatch Logs through NAT"), ...(args.extraEgress ?? [])],
      tags,
    },
    { parent },
  );
}

/** The service: Spot after `fargateBase` on-demand tasks, private, rolling back a failed deploy. */
function createService({ name, args, r, tags, parent }: ServiceScope, taskDefinition: aws.ecs.TaskDefinition, securityGroup: aws.ec2.SecurityGroup): aws.ecs.Service {
  return new aws.ecs.Service(
    name,
    {
      cluster: args.cluster.cluster.arn,
      taskDefinition: taskDefinition.arn,
      desiredCount: r.scaling.minTasks,
      capacityProviderStrategies: capacityProviderStrategy(r.fargateBase),
      networkConfiguration: { subnets: args.subnetIds, securityGroups: [securityGroup.id], assignPublicIp: false },
      deploymentCircuitBreaker: { enable: true, rollback: true },
      // New tasks start before old ones stop; protected old tasks stop only once they release.
      deploymentMinimumHealthyPercent: 100,
      deploymentMaximumPercent: 200,
      enableEcsManagedTags: true,
      propagateTags: "SERVICE",
      tags,
    },
    // Autoscaling owns the desired count after creation; the strategy needs the cluster's providers.
    { parent, dependsOn: [args.cluster.capacityProviders], ignoreChanges: ["desiredCount"] },
  );
}

/** Target tracking on backlog per task (visible messages ÷ running tasks). */
function createScaling({ name, args, r, tags, parent }: ServiceScope, service: aws.ecs.Service): { target: aws.appautoscaling.Target; policy: aws.appautoscaling.Policy } {
  const target = new aws.appautoscaling.Target(
    `${name}-scaling`,
    {
      serviceNamespace: "ecs",
      scalableDimension: "ecs:service:DesiredCount",
      resourceId: pulumi.interpolate`service/${args.cluster.cluster.name}/${service.name}`,
      minCapacity: r.scaling.minTasks,
      maxCapacity: r.scaling.maxTasks,
      tags,
    },
    { parent },
  );
  const policy = new aws.appautoscaling.Policy(
    `${name}-backlog-per-task`,
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
          metrics: backlogPerTaskMetrics({ queueName: args.queueName, clusterName: args.cluster.cluster.name, serviceName: service.name }),
        },
      },
    },
    { parent },
  );
  return { target, policy };
}
