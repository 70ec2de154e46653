import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { fargateSizeProblem } from "../../policy/contract";
import { type ContainerHardening, hardenedContainerFields, SCRATCH_VOLUME } from "../lib/container-hardening";
import { assumedBy, type Statement, trustScope } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";
import { declare } from "../lib/declared-document";

/** `<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag|@digest]` → the repository ARN; undefined for other registries. Pure. */
export function ecrRepositoryArn(image: string): string | undefined {
  const m = /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?\/([a-z0-9._/-]+?)(:[\w.-]+)?(@sha256:[a-f0-9]{64})?$/.exec(image);
  if (!m) return undefined;
  const partition = m[3] ? "aws-cn" : "aws";
  return `arn:${partition}:ecr:${m[2]}:${m[1]}:repository/${m[4]}`;
}

/**
 * What ECS's agent does with the execution role: pull the image (only from ECR needs IAM; the
 * token call has no resource-level permissions) and write the container's logs.
 */
export function executionRoleStatements(args: { image: string; logGroupArn: pulumi.Input<string> }): Statement[] {
  const repo = ecrRepositoryArn(args.image);
  return [
    ...(repo
      ? [
          { Sid: "EcrToken", Effect: "Allow" as const, Action: ["ecr:GetAuthorizationToken"], Resource: "*" },
          { Sid: "PullImage", Effect: "Allow" as const, Action: ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"], Resource: repo },
        ]
      : []),
    { Sid: "WriteTaskLogs", Effect: "Allow", Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: pulumi.interpolate`${args.logGroupArn}:*` },
  ];
}

export interface FargateTaskDefinitionArgs {
  /** Task definition family (revisions accumulate under it). */
  family: string;
  /** The one container's name; RunTask overrides address it by this name. */
  containerName: string;
  /** Container image URI. An ECR image gets pull rights on its repository only. */
  image: string;
  /** Region of the log group, for the awslogs driver. */
  region: string;
  /**
   * Task CPU units (a Fargate size).
   * @default 1024
   */
  cpu?: number;
  /**
   * Task memory in MiB; also set on the container (moto's RunTask, and ECS on EC2, need container-level memory).
   * @default 2048
   */
  memoryMb?: number;
  /**
   * CPU architecture.
   * @default "X86_64"
   */
  cpuArchitecture?: "X86_64" | "ARM64";
  /**
   * Fixed container environment; per-run values come from RunTask overrides.
   * @default {}
   */
  environment?: Record<string, pulumi.Input<string>>;
  /**
   * What the workload's own code calls, as plain statements; the task role gets exactly these.
   * @default [] (a task role with no permissions)
   */
  taskRoleStatements?: Statement[];
  /**
   * Seconds ECS waits after SIGTERM before SIGKILL (Fargate allows at most 120; Spot warns 120 s ahead).
   * @default 120
   */
  stopTimeoutSeconds?: number;
  /**
   * Log retention in days.
   * @default 14
   */
  logRetentionDays?: number;
  /**
   * The container's hardening: a read-only root filesystem (with a writable scratch volume), a
   * non-root user, every Linux capability dropped. Each can be turned off for an image that needs
   * it; what is off is listed in the container's `encache.hardening-waived` label.
   * @default { readOnlyRootFilesystem: true, user: "1000:1000", dropAllCapabilities: true, scratchPath: "/tmp" }
   */
  hardening?: ContainerHardening;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const fargateTaskDefinitionDefaults = {
  cpu: 1024,
  memoryMb: 2048,
  cpuArchitecture: "X86_64",
  stopTimeoutSeconds: 120,
  logRetentionDays: 14,
} as const;

export type ResolvedFargateTaskDefinitionSizing = {
  cpu: number;
  memoryMb: number;
  cpuArchitecture: "X86_64" | "ARM64";
  stopTimeoutSeconds: number;
  logRetentionDays: number;
};

/** Fills defaults and refuses what ECS would refuse. Pure. */
export function resolveFargateTaskDefinitionArgs(
  args: Pick<FargateTaskDefinitionArgs, "family" | "containerName" | "cpu" | "memoryMb" | "cpuArchitecture" | "stopTimeoutSeconds" | "logRetentionDays">,
): ResolvedFargateTaskDefinitionSizing {
  const r: ResolvedFargateTaskDefinitionSizing = {
    ...fargateTaskDefinitionDefaults,
    ...Object.fromEntries(Object.entries(args).filter(([k, v]) => v !== undefined && k in fargateTaskDefinitionDefaults)),
  };
  const errors: string[] = [];
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(args.family)) errors.push(`family "${args.family}" must be 1-255 letters, digits, _ or -`);
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(args.containerName)) errors.push(`containerName "${args.containerName}" must be 1-255 letters, digits, _ or -`);
  const size = fargateSizeProblem(r.cpu, r.memoryMb);
  if (size) errors.push(size);
  if (!Number.isInteger(r.stopTimeoutSeconds) || r.stopTimeoutSeconds < 2 || r.stopTimeoutSeconds > 120) errors.push("stopTimeoutSeconds must be 2..120 on Fargate");
  if (errors.length > 0) throw new Error(`FargateTaskDefinition: ${errors.join("; ")}`);
  return r;
}

/**
 * A one-container Fargate task definition with its own log group, an execution role that can
 * pull exactly its image and write exactly its logs, and a task role holding only the
 * workload's statements. Launchers pass both roles on with `iam:PassRole` scoped to their ARNs.
 */
export class FargateTaskDefinition extends pulumi.ComponentResource {
  readonly taskDefinition: aws.ecs.TaskDefinition;
  readonly taskRole: aws.iam.Role;
  readonly executionRole: aws.iam.Role;
  readonly logGroup: aws.cloudwatch.LogGroup;
  readonly family: string;

  constructor(name: string, args: FargateTaskDefinitionArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:compute:FargateTaskDefinition", name, {}, opts);
    const r = resolveFargateTaskDefinitionArgs(args);
    const tags = args.tags ?? {};
    this.family = args.family;

    this.logGroup = new aws.cloudwatch.LogGroup(`${name}-logs`, { retentionInDays: r.logRetentionDays, tags }, { parent: this });

    const trust = trustScope(this);
    this.executionRole = new aws.iam.Role(`${name}-execution`, { assumeRolePolicy: assumedBy("ecs-tasks.amazonaws.com", trust), tags }, { parent: this });
    const executionPolicy = new aws.iam.RolePolicy(
      `${name}-execution-policy`,
      {
        role: this.executionRole.id,
        policy: declaredPolicy(executionRoleStatements({ image: args.image, logGroupArn: this.logGroup.arn }), { resource: `${name}-execution-policy`, resourceType: ROLE_POLICY_TYPE, parent: this }),
      },
      { parent: this },
    );

    this.taskRole = new aws.iam.Role(`${name}-task`, { assumeRolePolicy: assumedBy("ecs-tasks.amazonaws.com", trust), tags }, { parent: this });
    const taskStatements = args.taskRoleStatements ?? [];
    const taskPolicies =
      taskStatements.length > 0
        ? [
            new aws.iam.RolePolicy(
              `${name}-task-policy`,
              { role: this.taskRole.id, policy: declaredPolicy(taskStatements, { resource: `${name}-task-policy`, resourceType: ROLE_POLICY_TYPE, parent: this }) },
              { parent: this },
            ),
          ]
        : [];

    const environment = Object.entries(args.environment ?? {}).map(([key, value]) => ({ name: key, value }));
    const hardened = hardenedContainerFields(args.hardening);
    this.taskDefinition = new aws.ecs.TaskDefinition(
      name,
      {
        family: args.family,
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: String(r.cpu),
        memory: String(r.memoryMb),
        runtimePlatform: { operatingSystemFamily: "LINUX", cpuArchitecture: r.cpuArchitecture },
        // A bind-mount volume without a host path: task-scoped ephemeral storage, the read-only root's scratch.
        ...("mountPoints" in hardened ? { volumes: [{ name: SCRATCH_VOLUME }] } : {}),
        executionRoleArn: this.executionRole.arn,
        taskRoleArn: this.taskRole.arn,
        containerDefinitions: pulumi.jsonStringify(
          declare(
            [
              {
                name: args.containerName,
            image: args.image,
            essential: true,
            ...hardened,
            memory: r.memoryMb,
            stopTimeout: r.stopTimeoutSeconds,
            environment,
            logConfiguration: {
              logDriver: "awslogs",
              options: { "awslogs-group": this.logGroup.name, "awslogs-region": args.region, "awslogs-stream-prefix": args.containerName },
            },
          },
            ],
            { resource: name, resourceType: "aws:ecs/taskDefinition:TaskDefinition", property: "containerDefinitions", parent: this },
          ),
        ),
        tags,
      },
      // The execution role must be able to pull and log before the first task starts.
      { parent: this, dependsOn: [executionPolicy, ...taskPolicies] },
    );

    this.registerOutputs({ taskDefinitionArn: this.taskDefinition.arn, taskRoleArn: this.taskRole.arn, executionRoleArn: this.executionRole.arn });
  }
}
