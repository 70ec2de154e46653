/**
 * The local platform's types: its options, the endpoints code under test is given, its AWS clients
 * (and their factory), the parts a start returns, what the named starts share, and the stoppers they
 * register with. Their own module, so the platform (./platform) and its named starts
 * (./platform-start) both take them without importing each other.
 */
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { EC2Client } from "@aws-sdk/client-ec2";
import { ECSClient } from "@aws-sdk/client-ecs";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SNSClient } from "@aws-sdk/client-sns";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import type { AlarmWatcher } from "./observe/alarm-watch";
import type { SimClock } from "./hosts/clock";
import type { DepthSource } from "./observe/depth-sampler";
import type { EcsTaskSimulator } from "./hosts/ecs-tasks";
import type { SqsEventSource } from "./hosts/event-source";
import type { GpuFleetSimulator } from "./hosts/gpu-fleet";
import type { GpuInstanceHost } from "./hosts/gpu-host";
import type { LambdaHost } from "./hosts/lambda-host";
import type { RunRecorder } from "./observe/report-recorder";
import type { LocalScheduler } from "./hosts/scheduler";
import type { Topology } from "./provision/topology-types";
import type { WorkerServiceRunner } from "./hosts/worker-service";
import type { GroupDistributions } from "./aws/group-stand-in";
import type { MotoServer } from "./aws/moto";
import type { EcsClientTokenProxy } from "./aws/ecs-client-token";
import type { DirectSends } from "./aws/sqs-move-tasks";

export interface PlatformOptions {
  stack: string;
  speed: number;
  /** Where bundles, logs and scratch space go (git-ignored). */
  workDir: string;
  /** Simulated time from the GPU instance entering `running` to its service answering. */
  gpuBootSimMs: number;
  /** Each GPU instance's fake model: simulated time a window takes on one of its `gpuSlots`; a warm-pool start's time. @default 0, 4, 20 s */
  gpuWindowSimMs?: number;
  gpuSlots?: number;
  gpuWarmStartSimMs?: number;
  /** Simulated run time of each ECS task started by RunTask. */
  taskSimMs: number;
  /** A line for the operator (the live view prints it above its block). */
  note: (line: string) => void;
  /**
   * Where the code under test reaches AWS: each Lambda (by logical name) and the worker service
   * (`worker-service`), given where it would. The chaos run puts its fault proxy there. The
   * runtime's own clients (pollers, scheduler, simulators, scenarios) are never asked about.
   * @default the platform's own endpoints
   */
  codeEndpoints?: (caller: string, upstream: CodeEndpoints) => Promise<CodeEndpoints>;
  /** Tasks of the worker service to run. @default the service's desired count (at least 1) */
  workerTasks?: number;
  /**
   * Applied last to each worker task's environment, given the container's own (the chaos run adds
   * its long job type to the allow-list, sized by the stack's heartbeat).
   */
  workerEnv?: (container: Record<string, string>) => Record<string, string>;
  /**
   * Processes that die on their own come back, as on AWS (the chaos run's `--crash-rate`): a worker
   * task is replaced by the service and a GPU gateway restarted on its instance, after this many real
   * ms; and each Lambda sandbox names its invocation on its AWS calls (`x-local-invocation`), so the
   * chaos run can kill the sandbox that made a call. @default undefined (dead processes stay dead)
   */
  restartKilledAfterMs?: number;
}

/** The endpoints a piece of code under test uses: moto, and a service's own where it has one (sqs, ec2, ecs). */
export interface CodeEndpoints {
  aws: string;
  /** By the SDK's service id, lower case: `AWS_ENDPOINT_URL_<ID>`. */
  byService: Record<string, string>;
}

/** The runtime's own AWS clients (never the code under test's), as `awsClients` makes them. */
export type AwsClients = ReturnType<typeof awsClients>;

export function awsClients(region: string, endpoint: string, sqsEndpoint: string) {
  const clientConfig = { region, endpoint };
  return {
    /** Through the SQS clock proxy: the same SQS timing the Lambdas see. */
    sqs: new SQSClient({ region, endpoint: sqsEndpoint }),
    /** Straight to moto: real-time SQS, as the worker container sees it. */
    sqsDirect: new SQSClient(clientConfig),
    ec2: new EC2Client(clientConfig),
    ecs: new ECSClient(clientConfig),
    dynamodb: new DynamoDBClient(clientConfig),
    ssm: new SSMClient(clientConfig),
    sns: new SNSClient(clientConfig),
    cloudwatch: new CloudWatchClient(clientConfig),
    autoscaling: new AutoScalingClient(clientConfig),
    /** moto's EventBridge: where the ECS stand-in puts the task state changes ECS emits. */
    events: new EventBridgeClient(clientConfig),
  };
}

/** What `LocalPlatform.start` starts, each set once: the platform's own fields (`platform.clock`, `platform.aws`, …). */
export interface PlatformParts
  extends Readonly<Pick<MotoStarted, "moto" | "sqsRealtimeEndpoint" | "directSends">>,
    Readonly<Pick<ServiceProxies, "ecsCapacity" | "groupDistributions">> {
  readonly clock: SimClock;
  readonly topology: Topology;
  readonly aws: AwsClients;
  readonly lambdas: LambdaHost;
  readonly sources: Map<string, SqsEventSource>;
  readonly scheduler: LocalScheduler;
  readonly ecsTasks: EcsTaskSimulator;
  readonly gpu: GpuInstanceHost | undefined;
  /** The GPU fleet's stand-ins (fleet mode), or undefined with one GPU instance. */
  readonly fleet: GpuFleetSimulator | undefined;
  readonly worker: WorkerServiceRunner | undefined;
  /** Which alarms would have fired: `alarms.report()`, also after `stop()`. */
  readonly alarms: AlarmWatcher;
  /** What the HTML report draws: `recorder.recorded()`, also after `stop()`. */
  readonly recorder: RunRecorder;
  /** The one sampler of queue depths (alarms, report, the operator's oldest-message ages). */
  readonly depths: DepthSource;
}

/** What a start leaves running, stopped in reverse of registration (a part stops before what it uses); failures are ignored. */
export class Stoppers {
  private readonly stops: Array<() => Promise<void>> = [];

  add(stop: () => Promise<void>): void {
    this.stops.push(stop);
  }

  /** Runs every registered stop, the last registered first; afterwards none is left. */
  async stopAll(): Promise<void> {
    for (const stop of this.stops.reverse()) await stop().catch(() => undefined);
    this.stops.length = 0;
  }
}

/** moto and the SQS proxies in front of it, which the rest of the start reaches. */
export interface MotoStarted {
  moto: MotoServer;
  /** moto's own endpoint. */
  endpoint: string;
  /** The SQS clock proxy: SQS on the simulated clock, as the Lambdas see it. */
  sqsEndpoint: string;
  /** The real-time SQS proxy (receipt-handle rule, no clock): where worker tasks reach SQS. */
  sqsRealtimeEndpoint: string;
  /** Which messages reached a queue by a plain send (SQS's move tasks return only the others). */
  directSends: DirectSends;
}

/** What the steps after the deploy share. */
export interface StartContext extends MotoStarted {
  options: PlatformOptions;
  stoppers: Stoppers;
  topology: Topology;
  logDir: string;
  clock: SimClock;
  /** The runtime's own clients (never the code under test's). */
  aws: AwsClients;
}

/** The proxies in front of moto for EC2, ECS and Auto Scaling, as the Lambdas (and, for Auto Scaling, the gateways) reach them. */
export interface ServiceProxies {
  ec2Endpoint: string;
  ecsEndpoint: string;
  autoscalingEndpoint: string;
  /** ECS in front of moto (clientToken, Fargate Spot capacity, which tasks run on Spot). */
  ecsCapacity: EcsClientTokenProxy;
  /** The groups' mixed instances policies as UpdateAutoScalingGroup leaves them, with their history. */
  groupDistributions: GroupDistributions;
  /** Set by the GPU tier once the fleet's stand-ins exist; the Auto Scaling proxy asks them. */
  fleetRef: { fleet?: GpuFleetSimulator };
}
