/**
 * The whole platform, running locally: moto as AWS, the Pulumi program deployed into it, and
 * the runtime that plays what moto can't (Lambda's SQS pollers, Scheduler, the ECS agent and
 * task lifecycle, the GPU instances' hosts, CloudWatch's alarm evaluation). Scenarios drive it; the CLI shows
 * it; one sampler of queue depths feeds the alarms and the HTML report's recorder.
 */
import type { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import type { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import type { EC2Client } from "@aws-sdk/client-ec2";
import type { ECSClient } from "@aws-sdk/client-ecs";
import { type EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SNSClient } from "@aws-sdk/client-sns";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SSMClient } from "@aws-sdk/client-ssm";
import type { AlarmWatcher } from "./observe/alarm-watch";
import { SimClock } from "./hosts/clock";
import { type DepthSource, type QueueDepth, readDepth } from "./observe/depth-sampler";
import type { EcsTaskSimulator, SimTask } from "./hosts/ecs-tasks";
import type { SqsEventSource } from "./hosts/event-source";
import type { GpuFleetSimulator } from "./hosts/gpu-fleet";
import type { GpuInstanceHost } from "./hosts/gpu-host";
import type { GroupDistributions } from "./aws/group-stand-in";
import type { LambdaHost } from "./hosts/lambda-host";
import type { MotoServer } from "./aws/moto";
import type { RunRecorder } from "./observe/report-recorder";
import type { LocalScheduler } from "./hosts/scheduler";
import type { EcsClientTokenProxy } from "./aws/ecs-client-token";
import type { DirectSends } from "./aws/sqs-move-tasks";
import type { LocalFunction, LocalQueue, Topology } from "./provision/topology";
import type { WorkerServiceRunner } from "./hosts/worker-service";
import {
  awsClients,
  deployInto,
  pointThisProcessAtMoto,
  type StartContext,
  startEcsTasks,
  startGpuTier,
  startLambdas,
  startMoto,
  startObservers,
  startRuntime,
  startServiceProxies,
  Stoppers,
  startWorkerService,
} from "./platform-start";

export interface PlatformOptions {
  stack: string;
  speed: number;
  /** Where bundles, logs and scratch space go (git-ignored). */
  workDir: string;
  /** Simulated time from the GPU instance entering `running` to its service answering. */
  gpuBootSimMs: number;
  /**
   * Simulated time an instance stays `stopping` after a StopInstances through the Lambdas' EC2
   * endpoint (moto stops at once; EC2 takes a while, and refuses a start meanwhile).
   * @default 60_000
   */
  gpuStopSimMs?: number;
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

export type { QueueDepth } from "./observe/depth-sampler";
export { describeUncreated, endpointVarOf, RECORD_EVERY_REAL_MS, serviceOfEndpointVar } from "./platform-start";

export interface AwsClients {
  /** Through the SQS clock proxy: the same SQS timing the Lambdas see. */
  sqs: SQSClient;
  /** Straight to moto: real-time SQS, as the worker container sees it. */
  sqsDirect: SQSClient;
  ec2: EC2Client;
  ecs: ECSClient;
  dynamodb: DynamoDBClient;
  ssm: SSMClient;
  sns: SNSClient;
  cloudwatch: CloudWatchClient;
  autoscaling: AutoScalingClient;
  /** moto's EventBridge: where the ECS stand-in puts the task state changes ECS emits. */
  events: EventBridgeClient;
}

/** What `LocalPlatform.start` starts, each set once: the platform's own fields (`platform.clock`, `platform.aws`, …). */
export interface PlatformParts {
  readonly clock: SimClock;
  readonly moto: MotoServer;
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
  /** The real-time SQS proxy (receipt-handle rule, no clock): where worker tasks reach SQS. */
  readonly sqsRealtimeEndpoint: string;
  /** Which messages reached a queue by a plain send (SQS's move tasks return only the others). */
  readonly directSends: DirectSends;
  /** The one sampler of queue depths (alarms, report, the operator's oldest-message ages). */
  readonly depths: DepthSource;
  /** ECS in front of moto (clientToken, Fargate Spot capacity, which tasks run on Spot). */
  readonly ecsCapacity: EcsClientTokenProxy;
  /** The groups' mixed instances policies as UpdateAutoScalingGroup leaves them, with their history. */
  readonly groupDistributions: GroupDistributions;
}

/**
 * The parts are the platform's own fields, without restating them in the class: this interface
 * merges with the class of the same name below (TypeScript's declaration merging), and the
 * constructor copies the parts in with `Object.assign`. Safe here because the constructor is
 * private and its one caller, `start`, passes a complete `PlatformParts`; the class declares none
 * of these fields itself, so no field initializer overwrites them.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging -- the merge above
export interface LocalPlatform extends PlatformParts {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the merge above
export class LocalPlatform {
  /** Which RunTask tasks end failed (non-zero exit) rather than succeeded; scenarios set it. */
  failTask: (t: SimTask) => boolean = () => false;

  private constructor(
    readonly options: PlatformOptions,
    parts: PlatformParts,
    private readonly stoppers: Stoppers,
  ) {
    Object.assign(this, parts);
  }

  /** Starts moto, deploys the program into it and starts every local stand-in; what fails to start stops what started. */
  static async start(options: PlatformOptions): Promise<LocalPlatform> {
    const stoppers = new Stoppers();
    try {
      const moto = await startMoto(options, stoppers);
      pointThisProcessAtMoto(moto, stoppers);
      const { topology, logDir } = await deployInto(options, moto);
      // Simulated time starts with the runtime, not with moto or the deploy.
      const clock = new SimClock(options.speed);
      const aws = awsClients(topology.region, moto.endpoint, moto.sqsEndpoint);
      const ctx: StartContext = { ...moto, options, stoppers, topology, logDir, clock, aws };
      const proxies = await startServiceProxies(ctx);
      const lambdas = await startLambdas(ctx, proxies);
      const gpuTier = await startGpuTier(ctx, lambdas, proxies);
      const runtime = startRuntime(ctx, lambdas);
      // Set once the platform exists; tasks end only after start-up, so it is there by then.
      const built: { platform?: LocalPlatform } = {};
      const ecsTasks = await startEcsTasks(ctx, (t) => built.platform?.failTask(t) ?? false);
      const worker = await startWorkerService(ctx);
      const observers = startObservers(ctx, gpuTier, ecsTasks);
      const parts: PlatformParts = {
        clock,
        topology,
        aws,
        lambdas,
        ecsTasks,
        worker,
        moto: moto.moto,
        sqsRealtimeEndpoint: moto.sqsRealtimeEndpoint,
        directSends: moto.directSends,
        ecsCapacity: proxies.ecsCapacity,
        groupDistributions: proxies.groupDistributions,
        ...gpuTier,
        ...runtime,
        ...observers,
      };
      built.platform = new LocalPlatform(options, parts, stoppers);
      return built.platform;
    } catch (err) {
      await stoppers.stopAll();
      throw err;
    }
  }

  /**
   * Fargate Spot takes a running task back: the ECS stand-in stops it and puts ECS's Task State
   * Change event on moto's default bus, whose rules (the program's) deliver it as EventBridge would.
   * Refused for a task that did not start on Spot: only Spot capacity is taken back.
   */
  async interruptSpotTask(taskArn: string): Promise<void> {
    if (!this.ecsCapacity?.spotTasks.has(taskArn)) throw new Error(`interruptSpotTask: ${taskArn} did not start on FARGATE_SPOT`);
    await this.ecsTasks.interrupt(taskArn, async (detail) => {
      const out = await this.aws.events.send(
        new PutEventsCommand({ Entries: [{ Source: "aws.ecs", DetailType: "ECS Task State Change", Resources: [taskArn], Detail: JSON.stringify(detail) }] }),
      );
      if ((out.FailedEntryCount ?? 0) > 0) throw new Error(`PutEvents refused the task state change of ${taskArn}: ${JSON.stringify(out.Entries)}`);
    });
  }

  /** The queue a ManagedQueue/TerminalQueue declared under this logical name (e.g. `ingest-dlq`). */
  queue(logicalName: string): LocalQueue {
    const q = this.topology.queues.find((x) => x.logicalName === logicalName);
    if (!q) throw new Error(`no queue named ${logicalName} in the program (have: ${this.topology.queues.map((x) => x.logicalName).join(", ")})`);
    return q;
  }

  fn(logicalName: string): LocalFunction {
    const f = this.topology.functions.find((x) => x.logicalName === logicalName);
    if (!f) throw new Error(`no function named ${logicalName} in the program`);
    return f;
  }

  depth(queue: LocalQueue): Promise<QueueDepth> {
    return readDepth(this.aws.sqsDirect, queue.url);
  }

  /** Stops every part, the last started first (see `Stoppers`); a second call does nothing. */
  async stop(): Promise<void> {
    await this.stoppers.stopAll();
  }
}
