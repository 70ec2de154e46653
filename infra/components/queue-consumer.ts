import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { bundleArchive, bundleFunction, type FunctionBundle, NODE_RUNTIME } from "../bundle";
import { ENVIRONMENT_TAG, requiredVisibilityTimeoutSeconds } from "../../policy/contract";
import { assumedBy, logsStatement, sqsEventSourceStatement, trustScope, vpcAccessStatements, type Statement } from "../iam/document";
import { declaredPolicy, ROLE_POLICY_TYPE } from "../iam/declared";

export interface QueueConsumerArgs {
  /** ARN of the queue this function consumes. */
  queueArn: pulumi.Input<string>;
  /**
   * The queue's visibility timeout in seconds, as a plain number so the sizing rule is
   * checked when the program runs, not after deployment.
   */
  queueVisibilityTimeoutSeconds: number;
  /** Handler entry, relative to the repository root; it must export `handler`. */
  entry: string;
  /**
   * What the function's own code calls, as plain IAM statements (see `infra/iam/`). The
   * poller's SQS actions and the log-group writes are added here.
   */
  statements: Statement[];
  /**
   * Managed policies to attach besides the inline one.
   * @default []
   */
  managedPolicyArns?: pulumi.Input<string>[];
  /**
   * Environment variables of the function. POWERTOOLS_SERVICE_NAME, unless set here, is
   * `<component name>-<environment>` (the environment from the `encache:environment` tag).
   * @default {}
   */
  environment?: Record<string, pulumi.Input<string>>;
  /**
   * Function timeout in seconds (1–900).
   * @default 30
   */
  timeoutSeconds?: number;
  /**
   * Function memory in MB (128–10240).
   * @default 256
   */
  memoryMb?: number;
  /**
   * Messages per invocation (1–10000; above 10 needs a batching window).
   * @default 10
   */
  batchSize?: number;
  /**
   * Seconds the poller may wait to fill a batch (0–300).
   * @default 0
   */
  batchingWindowSeconds?: number;
  /**
   * Most concurrent invocations this mapping may drive (2–1000).
   * @default 2
   */
  maxConcurrency?: number;
  /**
   * Log retention in days.
   * @default 14
   */
  logRetentionDays?: number;
  /**
   * Attach the function to these subnets and security groups.
   * @default undefined (no VPC)
   */
  vpc?: { subnetIds: pulumi.Input<pulumi.Input<string>[]>; securityGroupIds: pulumi.Input<string>[] };
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const queueConsumerDefaults = {
  timeoutSeconds: 30,
  memoryMb: 256,
  batchSize: 10,
  batchingWindowSeconds: 0,
  maxConcurrency: 2,
  logRetentionDays: 14,
} as const;

export type QueueConsumerSizing = { -readonly [K in keyof typeof queueConsumerDefaults]: number } & {
  queueVisibilityTimeoutSeconds: number;
};

/**
 * Fills defaults and enforces Lambda's and SQS's sizing rules. Pure. Above all it refuses a
 * queue visibility timeout shorter than 6 × the function timeout + the batching window: a
 * shorter one lets SQS hand a message to a second invocation while the first still works on it.
 */
export function resolveQueueConsumerSizing(args: Partial<QueueConsumerSizing> & { queueVisibilityTimeoutSeconds: number }): QueueConsumerSizing {
  const s: QueueConsumerSizing = {
    ...queueConsumerDefaults,
    ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
  } as QueueConsumerSizing;
  const errors: string[] = [];
  const range = (key: keyof QueueConsumerSizing, min: number, max: number) => {
    const v = s[key];
    if (!Number.isInteger(v) || v < min || v > max) errors.push(`${key} must be an integer in ${min}..${max} (got ${v})`);
  };
  range("timeoutSeconds", 1, 900);
  range("memoryMb", 128, 10_240);
  range("batchSize", 1, 10_000);
  range("batchingWindowSeconds", 0, 300);
  range("maxConcurrency", 2, 1000);
  range("queueVisibilityTimeoutSeconds", 0, 43_200);
  if (s.batchSize > 10 && s.batchingWindowSeconds === 0) errors.push("batchSize above 10 needs a batchingWindowSeconds above 0");
  const needed = requiredVisibilityTimeoutSeconds(s.timeoutSeconds, s.batchingWindowSeconds);
  if (s.queueVisibilityTimeoutSeconds < needed) {
    errors.push(
      `queue visibility timeout ${s.queueVisibilityTimeoutSeconds}s is shorter than 6 × timeout (${s.timeoutSeconds}s) + batching window (${s.batchingWindowSeconds}s) = ${needed}s`,
    );
  }
  if (errors.length > 0) throw new Error(`QueueConsumer: ${errors.join("; ")}`);
  return s;
}

/**
 * Powertools' service name of a function or container: `<name>-<environment>`, or `<name>` when no
 * environment is known. Powertools puts it on every EMF metric as the `service` dimension and on
 * every log line, so it is what tells dev's metrics from prod's in one account. Pure.
 */
export function powertoolsServiceName(name: string, environment: string | undefined): string {
  return environment ? `${name}-${environment}` : name;
}

/**
 * A Lambda consumer of one SQS queue: an esbuild bundle, a role of its own built from the
 * actions its code calls, a log group with retention, and an event source mapping that
 * reports batch item failures. This, not `CallbackFunction`/`queue.onEvent`, is how each
 * queue gets its Lambda: those can't request partial batch responses and attach
 * full-access managed policies (see docs/architecture.md).
 */
export class QueueConsumer extends pulumi.ComponentResource {
  readonly function: aws.lambda.Function;
  readonly role: aws.iam.Role;
  readonly logGroup: aws.cloudwatch.LogGroup;
  readonly mapping: aws.lambda.EventSourceMapping;
  readonly sizing: QueueConsumerSizing;
  /** Size of the deployed bundle in bytes (reported by the plan and the benchmark). */
  readonly bundleBytes: number;
  /** The function's POWERTOOLS_SERVICE_NAME: the `service` dimension of its EMF metrics. */
  readonly powertoolsServiceName: pulumi.Input<string>;
  /** The component's name, which the function takes: how the inventory and the local run call it. */
  readonly label: string;

  private readonly tags: Record<string, string>;

  constructor(name: string, args: QueueConsumerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:compute:QueueConsumer", name, {}, opts);
    this.label = name;
    const sizing = resolveQueueConsumerSizing({
      queueVisibilityTimeoutSeconds: args.queueVisibilityTimeoutSeconds,
      timeoutSeconds: args.timeoutSeconds,
      memoryMb: args.memoryMb,
      batchSize: args.batchSize,
      batchingWindowSeconds: args.batchingWindowSeconds,
      maxConcurrency: args.maxConcurrency,
      logRetentionDays: args.logRetentionDays,
    });
    this.sizing = sizing;
    this.tags = args.tags ?? {};
    this.powertoolsServiceName = args.environment?.POWERTOOLS_SERVICE_NAME ?? powertoolsServiceName(name, this.tags[ENVIRONMENT_TAG]);

    this.role = this.declareRole();
    this.logGroup = this.declareLogGroup();
    const policies = [this.declareInlinePolicy(args), ...this.declareManagedPolicyAttachments(args.managedPolicyArns ?? [])];
    const bundle = bundleFunction(args.entry);
    this.bundleBytes = bundle.bytes;
    // The role must carry its policies before the mapping starts polling with it.
    this.function = this.declareFunction(args, bundle, policies);
    this.mapping = this.declareMapping(args.queueArn);

    this.registerOutputs({ functionName: this.function.name, functionArn: this.function.arn, roleArn: this.role.arn });
  }

  /** `<name>-role`: assumed by Lambda only. */
  private declareRole(): aws.iam.Role {
    return new aws.iam.Role(`${this.label}-role`, { assumeRolePolicy: assumedBy("lambda.amazonaws.com"), tags: this.tags }, { parent: this });
  }

  /** `<name>-logs`: the function's log group, with retention. */
  private declareLogGroup(): aws.cloudwatch.LogGroup {
    return new aws.cloudwatch.LogGroup(`${this.label}-logs`, { retentionInDays: this.sizing.logRetentionDays, tags: this.tags }, { parent: this });
  }

  /** `<name>-policy`: what the code calls, the poller's SQS actions, the log writes, and the VPC's ENIs when in one. */
  private declareInlinePolicy(args: QueueConsumerArgs): aws.iam.RolePolicy {
    const name = `${this.label}-policy`;
    const statements: Statement[] = [
      ...args.statements,
      sqsEventSourceStatement(args.queueArn),
      logsStatement(this.logGroup.arn),
      ...(args.vpc ? vpcAccessStatements(trustScope(this)) : []),
    ];
    return new aws.iam.RolePolicy(
      name,
      { role: this.role.id, policy: declaredPolicy(statements, { resource: name, resourceType: ROLE_POLICY_TYPE, parent: this }) },
      { parent: this },
    );
  }

  /** `<name>-attach-<i>`: each managed policy the caller names. */
  private declareManagedPolicyAttachments(policyArns: pulumi.Input<string>[]): aws.iam.RolePolicyAttachment[] {
    return policyArns.map(
      (policyArn, i) => new aws.iam.RolePolicyAttachment(`${this.label}-attach-${i}`, { role: this.role.name, policyArn }, { parent: this }),
    );
  }

  /** `<name>`: the bundled function, on arm64, logging JSON to its own group. */
  private declareFunction(args: QueueConsumerArgs, bundle: FunctionBundle, policies: pulumi.Resource[]): aws.lambda.Function {
    const { sizing, tags } = this;
    return new aws.lambda.Function(
      this.label,
      {
        runtime: NODE_RUNTIME,
        architectures: ["arm64"],
        handler: "index.handler",
        code: bundleArchive(bundle),
        sourceCodeHash: bundle.sha256,
        role: this.role.arn,
        timeout: sizing.timeoutSeconds,
        memorySize: sizing.memoryMb,
        environment: { variables: { ...(args.environment ?? {}), POWERTOOLS_SERVICE_NAME: this.powertoolsServiceName } },
        loggingConfig: { logFormat: "JSON", logGroup: this.logGroup.name },
        vpcConfig: args.vpc ? { subnetIds: args.vpc.subnetIds, securityGroupIds: args.vpc.securityGroupIds } : undefined,
        tags,
      },
      { parent: this, dependsOn: policies },
    );
  }

  /** `<name>-mapping`: the queue's event source, reporting batch item failures, under the concurrency cap. */
  private declareMapping(queueArn: pulumi.Input<string>): aws.lambda.EventSourceMapping {
    const { sizing } = this;
    return new aws.lambda.EventSourceMapping(
      `${this.label}-mapping`,
      {
        eventSourceArn: queueArn,
        functionName: this.function.arn,
        batchSize: sizing.batchSize,
        maximumBatchingWindowInSeconds: sizing.batchingWindowSeconds,
        functionResponseTypes: ["ReportBatchItemFailures"],
        scalingConfig: { maximumConcurrency: sizing.maxConcurrency },
      },
      { parent: this },
    );
  }
}
