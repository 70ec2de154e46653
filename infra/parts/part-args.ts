import * as pulumi from "@pulumi/pulumi";
import { byteOrder, type EnvCodec, type EnvFields, type EnvValues } from "../../functions/shared/env";
import { PART_TAG } from "../../policy/contract";
import type { FargateCluster } from "../components/fargate-cluster";

/** The stack-wide settings every part applies the same way. */
export interface PlatformSettings {
  /** Short environment name (`dev`, `prod`), in names and tags. */
  environment: string;
  /** CloudWatch log retention of every function and task, in days. */
  logRetentionDays: number;
  /** Termination/deletion protection of stateful resources. */
  deletionProtection: boolean;
  /** SNS topics every alarm notifies: the stack's alert topic, then the config's `alarmActions`. */
  alarmActions: pulumi.Input<string>[];
  /** Receives before a message moves to its DLQ. */
  maxReceiveCount: number;
}

/** One egress rule beyond HTTPS that an operator opens for a group (`network.extraEgress.<group>`). */
export interface EgressRule {
  protocol: "tcp" | "udp";
  fromPort: number;
  toPort: number;
  cidrBlocks: string[];
  description: string;
}

/** The groups whose egress the stack config may widen, each with its extra rules. */
export type ExtraEgress = Record<"ingestConsumers" | "ingestGpu" | "retrainingTasks" | "worker" | "poolInstances", EgressRule[]>;

/** What the composition root hands every part, besides the part's own config slice. */
export interface PartArgs {
  /** AWS region the stack deploys to (ARN patterns, the awslogs driver). */
  region: string;
  /**
   * The platform VPC: functions and tasks run in its private subnets. Its CIDR scopes traffic
   * between the platform's own groups; `extraEgress` is what the stack config opens beyond HTTPS.
   */
  network: { vpcId: pulumi.Input<string>; privateSubnetIds: pulumi.Input<string[]>; cidrBlock: string; extraEgress: ExtraEgress };
  /** The platform's one ECS cluster (retraining tasks, the queue worker). */
  cluster: FargateCluster;
  platform: PlatformSettings;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * One source queue's retention and visibility, with the config keys behind them: a queue must keep
 * a message through all its receives (config.ts, queueRetentionProblems). Each part's config
 * module lists its own queues' budgets, under the queues' logical names.
 */
export interface QueueBudget {
  /** The queue's logical name, as its part declares it (its ManagedQueue's name). */
  queue: string;
  retentionSeconds: number;
  /** The keys the retention is set or derived from. */
  retentionFrom: string;
  visibilitySeconds: number;
  visibilityFrom: string;
  /** Where the error is reported: the key a user would change. */
  path: Array<string | number>;
}

/** The first private subnet, for a single instance (the GPU). */
export function firstSubnet(privateSubnetIds: pulumi.Input<string[]>): pulumi.Output<string> {
  return pulumi.output(privateSubnetIds).apply((ids) => {
    const first = ids[0];
    if (!first) throw new Error("the network has no private subnet for the instance");
    return first;
  });
}

/** What every step of a part's recipe needs: its name (the prefix of child names), args, tags and parent. */
export interface PartScope<A extends PartArgs> {
  name: string;
  args: A;
  /** The part's tags: the stack's, plus `encache:part=<part>`. */
  tags: Record<string, string>;
  parent: pulumi.Resource;
}

export function partScope<A extends PartArgs>(parent: pulumi.Resource, name: string, args: A, part: string): PartScope<A> {
  return { name, args, tags: { ...(args.tags ?? {}), [PART_TAG]: part }, parent };
}

/** Powertools' own variables, and the SDK's region, which the program sets beside a function's own. */
export type PowertoolsEnvironment = Partial<
  Record<"POWERTOOLS_SERVICE_NAME" | "POWERTOOLS_METRICS_NAMESPACE" | "POWERTOOLS_LOG_LEVEL" | "AWS_REGION", pulumi.Input<string>>
>;

/** A function's env values as the program has them: each may still be an output (a queue's url). */
export type EnvInputs<F extends EnvFields> = { [K in keyof EnvValues<F>]: pulumi.Input<EnvValues<F>[K]> };

/**
 * A function's environment, built from its own env codec (`functions/<part>/env.ts`): every field
 * the code reads, written by the codec's formatter (an output through `apply`), plus Powertools'
 * variables; in byte order of the names, as the AWS provider stores a container's environment.
 */
export function functionEnvironment<F extends EnvFields>(
  codec: EnvCodec<F>,
  values: EnvInputs<F>,
  powertools: PowertoolsEnvironment = {},
): Record<string, pulumi.Input<string>> {
  const entries: Array<[string, pulumi.Input<string>]> = Object.entries(powertools).filter((e): e is [string, pulumi.Input<string>] => e[1] !== undefined);
  for (const key of codec.order) {
    const value = (values as Record<string, pulumi.Input<unknown> | undefined>)[key];
    if (value === undefined) continue;
    const { name, format } = codec.fields[key]!;
    entries.push([name, pulumi.Output.isInstance(value) || value instanceof Promise ? pulumi.output(value).apply((v) => format(v)) : format(value)]);
  }
  return Object.fromEntries(entries.sort(([a], [b]) => byteOrder(a, b)));
}
