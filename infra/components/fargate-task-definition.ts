import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { fargateSizeProblem } from "../aws-rules";
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
 * token call has no resource-level permissions) and write the container's logs. The repository is
 * `repositoryArn` when given (an image whose URI is known only after deployment), else read from a
 * literal ECR `image`. Pure.
 */
export function executionRoleStatements(args: {
  image?: pulumi.Input<string>;
  repositoryArn?: pulumi.Input<string>;
  logGroupArn: pulumi.Input<string>;
}): Statement[] {
  const repo = args.repositoryArn ?? (typeof args.image === "string" ? ecrRepositoryArn(args.image) : undefined);
  return [
    ...(repo
      ? [
          { Sid: "EcrToken", Effect: "Allow" as const, Action: ["ecr:GetAuthorizationToken"], Resource: "*" },
          {
            Sid: "PullImage",
            Effect: "Allow" as const,
            Action: ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
            Resource: repo,
          },
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
  image: pulumi.Input<string>;
  /**
   * The ECR repository the execution role may pull from, for an image whose URI is an output.
   * @default read from `image` when it is a literal ECR URI; none for other registries
   */
  repositoryArn?: pulumi.Input<string>;
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
   * Fixed container environment; per-run values come from RunTask overrides. Declared in byte
   * order of the names, the order the AWS provider stores a container's environment in.
   * @default {}
   */
  environment?: Record<string, pulumi.Input<string>>;
  /**
   * Write `privileged` into the container definition; left out, ECS's own default (false) holds.
   * @default undefined
   */
  privileged?: boolean;
  /**
   * Reserve the task's CPU units for the container too (its `cpu` field), not only the task's.
   * @default false
   */
  containerCpu?: boolean;
  /**
   * Tags of the task definition only, besides `tags` (a marker the pack reads on it, say).
   * @default {}
   */
  taskDefinitionTags?: Record<string, string>;
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
  if (!Number.isInteger(r.stopTimeoutSeconds) || r.stopTimeoutSeconds < 2 || r.stopTimeoutSeconds > 120)
    errors.push("stopTimeoutSeconds must be 2..120 on Fargate");
  if (errors.length > 0) throw new Error(`FargateTaskDefinition: ${errors.join("; ")}`);
  return r;
}

/** The container environment as ECS takes it, in byte order of the names (Go's cmp.Compare, as the provider stores it). Pure. */
export function containerEnvironment<V>(environment: Record<string, V>): Array<{ name: string; value: V }> {
  return Object.entries(environment)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ name, value }));
}

const TASK_DEFINITION_TYPE = "aws:ecs/taskDefinition:TaskDefinition";
const ECS_TASKS = "ecs-tasks.amazonaws.com";

/**
 * A one-container Fargate task definition with its own log group, an execution role that can
 * pull exactly its image and write exactly its logs, and a task role holding only the
 * workload's statements. Launchers pass both roles on with `iam:PassRole` scoped to their ARNs;
 * a service (QueueWorkerService) composes one, as awsx's FargateService composes its own.
 *
 * Children: `<name>-logs`, `<name>-execution` and `<name>-execution-policy`, `<name>-task` and
 * `<name>-task-policy`, and the task definition `<name>`.
 */
export class FargateTaskDefinition extends pulumi.ComponentResource {
  readonly taskDefinition: aws.ecs.TaskDefinition;
  readonly taskRole: aws.iam.Role;
  readonly executionRole: aws.iam.Role;
  readonly logGroup: aws.cloudwatch.LogGroup;
  readonly family: string;
  /** The resolved sizing, so a caller can check it without waiting on outputs. */
  readonly sizing: ResolvedFargateTaskDefinitionSizing;

  private readonly tags: Record<string, string>;

  constructor(
    private readonly name: string,
    private readonly args: FargateTaskDefinitionArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("encache:compute:FargateTaskDefinition", name, {}, opts);
    this.sizing = resolveFargateTaskDefinitionArgs(args);
    this.tags = args.tags ?? {};
    this.family = args.family;

    this.logGroup = this.declareLogGroup();
    const trust = trustScope(this);
    this.executionRole = this.declareRole("execution", trust);
    const executionPolicy = this.declareExecutionPolicy();
    this.taskRole = this.declareRole("task", trust);
    const taskPolicies = this.declareTaskPolicy();
    // The execution role must be able to pull and log before the first task starts.
    this.taskDefinition = this.declareTaskDefinition([executionPolicy, ...taskPolicies]);

    this.registerOutputs({ taskDefinitionArn: this.taskDefinition.arn, taskRoleArn: this.taskRole.arn, executionRoleArn: this.executionRole.arn });
  }

  /** `<name>-logs`: the container's awslogs group. */
  private declareLogGroup(): aws.cloudwatch.LogGroup {
    return new aws.cloudwatch.LogGroup(`${this.name}-logs`, { retentionInDays: this.sizing.logRetentionDays, tags: this.tags }, { parent: this });
  }

  /** `<name>-execution` or `<name>-task`: a role only ECS tasks of this account and region assume. */
  private declareRole(role: "execution" | "task", trust: ReturnType<typeof trustScope>): aws.iam.Role {
    return new aws.iam.Role(`${this.name}-${role}`, { assumeRolePolicy: assumedBy(ECS_TASKS, trust), tags: this.tags }, { parent: this });
  }

  /** `<name>-execution-policy`: pull exactly the image, write exactly the logs. */
  private declareExecutionPolicy(): aws.iam.RolePolicy {
    const statements = executionRoleStatements({ image: this.args.image, repositoryArn: this.args.repositoryArn, logGroupArn: this.logGroup.arn });
    return this.declareRolePolicy("execution-policy", this.executionRole, statements);
  }

  /** `<name>-task-policy`: the workload's statements, when it has any (a role with no policy grants nothing). */
  private declareTaskPolicy(): aws.iam.RolePolicy[] {
    const statements = this.args.taskRoleStatements ?? [];
    return statements.length > 0 ? [this.declareRolePolicy("task-policy", this.taskRole, statements)] : [];
  }

  private declareRolePolicy(suffix: string, role: aws.iam.Role, statements: Statement[]): aws.iam.RolePolicy {
    const name = `${this.name}-${suffix}`;
    return new aws.iam.RolePolicy(
      name,
      { role: role.id, policy: declaredPolicy(statements, { resource: name, resourceType: ROLE_POLICY_TYPE, parent: this }) },
      { parent: this },
    );
  }

  /**
   * The one container, hardened. A plain structure with outputs as leaves (not built inside an
   * apply), declared beside the task definition so every known field is readable on a first preview.
   */
  private containerDefinitions(): pulumi.Output<string> {
    const { args, sizing: r } = this;
    const container = {
      name: args.containerName,
      image: args.image,
      essential: true,
      ...(args.privileged !== undefined ? { privileged: args.privileged } : {}),
      ...hardenedContainerFields(args.hardening),
      memory: r.memoryMb,
      ...(args.containerCpu ? { cpu: r.cpu } : {}),
      stopTimeout: r.stopTimeoutSeconds,
      environment: containerEnvironment(args.environment ?? {}),
      logConfiguration: {
        logDriver: "awslogs",
        options: { "awslogs-group": this.logGroup.name, "awslogs-region": args.region, "awslogs-stream-prefix": args.containerName },
      },
    };
    return pulumi.jsonStringify(
      declare([container], { resource: this.name, resourceType: TASK_DEFINITION_TYPE, property: "containerDefinitions", parent: this }),
    );
  }

  /** `<name>`: the task definition, registered once its roles carry their policies. */
  private declareTaskDefinition(policies: aws.iam.RolePolicy[]): aws.ecs.TaskDefinition {
    const { args, sizing: r } = this;
    const scratch = "mountPoints" in hardenedContainerFields(args.hardening);
    return new aws.ecs.TaskDefinition(
      this.name,
      {
        family: args.family,
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: String(r.cpu),
        memory: String(r.memoryMb),
        runtimePlatform: { operatingSystemFamily: "LINUX", cpuArchitecture: r.cpuArchitecture },
        // A bind-mount volume without a host path: task-scoped ephemeral storage, the read-only root's scratch.
        ...(scratch ? { volumes: [{ name: SCRATCH_VOLUME }] } : {}),
        executionRoleArn: this.executionRole.arn,
        taskRoleArn: this.taskRole.arn,
        containerDefinitions: this.containerDefinitions(),
        tags: { ...this.tags, ...(args.taskDefinitionTags ?? {}) },
      },
      { parent: this, dependsOn: policies },
    );
  }
}
