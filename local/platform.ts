/**
 * The whole platform, running locally: moto as AWS, the Pulumi program deployed into it, and
 * the runtime that plays what moto can't (Lambda's SQS pollers, Scheduler, the ECS agent and
 * task lifecycle, the GPU instances' hosts, CloudWatch's alarm evaluation). Scenarios drive it; the CLI shows
 * it; one sampler of queue depths feeds the alarms and the HTML report's recorder.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { EC2Client } from "@aws-sdk/client-ec2";
import { ECSClient } from "@aws-sdk/client-ecs";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SNSClient } from "@aws-sdk/client-sns";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { MOCK_ACCOUNT_ID } from "../plan/mocks";
import { AlarmWatcher, sampleEveryRealMs } from "./observe/alarm-watch";
import { SimClock } from "./hosts/clock";
import { DepthSampler, type DepthSource, type QueueDepth, readDepth, roundEveryRealMs } from "./observe/depth-sampler";
import { EcsTaskSimulator, type SimTask } from "./hosts/ecs-tasks";
import { SqsEventSource } from "./hosts/event-source";
import { GpuFleetSimulator } from "./hosts/gpu-fleet";
import { GpuHost, GpuInstanceHost, gatewayEnvFromUserData, writeGatewayBundle } from "./hosts/gpu-host";
import type { ProcessedWindow } from "./hosts/fake-model";
import { LifecycleActionProxy } from "./aws/lifecycle-actions";
import { GATEWAY_ENV_FILE } from "../functions/gpu/env";
import { LambdaHost } from "./hosts/lambda-host";
import { MotoServer, motoClientEnv } from "./aws/moto";
import { RunRecorder } from "./observe/report-recorder";
import { LocalScheduler } from "./hosts/scheduler";
import { SqsClockProxy } from "./aws/sqs-clock";
import { Ec2ClockProxy } from "./aws/ec2-clock";
import { EcsClientTokenProxy } from "./aws/ecs-client-token";
import { DirectSends } from "./aws/sqs-move-tasks";
import { deployLocally } from "./provision/topology";
import type { LocalFunction, LocalQueue, Topology } from "./provision/topology-types";
import { containerEnvironment, localTaskEnvironment, pickContainer, WorkerServiceRunner } from "./hosts/worker-service";

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

/**
 * How often the report's recorder wants the queues' depths, in real ms: fine enough for a
 * scenario of twenty seconds to draw as a curve, coarse enough for moto (every queue each round).
 */
export const RECORD_EVERY_REAL_MS = 500;

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

export class LocalPlatform {
  private readonly stoppers: Array<() => Promise<void>> = [];
  /** Which RunTask tasks end failed (non-zero exit) rather than succeeded; scenarios set it. */
  failTask: (t: SimTask) => boolean = () => false;
  /** Which messages reached a queue by a plain send (SQS's move tasks return only the others): set at start. */
  directSends: DirectSends = new DirectSends();
  /** The one sampler of queue depths (alarms, report, the operator's oldest-message ages): set at start. */
  depths: DepthSource | undefined;
  /** ECS in front of moto (clientToken, Fargate Spot capacity, which tasks run on Spot): set at start. */
  ecsCapacity: EcsClientTokenProxy | undefined;

  private constructor(
    readonly options: PlatformOptions,
    readonly clock: SimClock,
    readonly moto: MotoServer,
    readonly topology: Topology,
    readonly aws: AwsClients,
    readonly lambdas: LambdaHost,
    readonly sources: Map<string, SqsEventSource>,
    readonly scheduler: LocalScheduler,
    readonly ecsTasks: EcsTaskSimulator,
    readonly gpu: GpuInstanceHost | undefined,
    /** The GPU fleet's stand-ins (fleet mode), or undefined with one GPU instance. */
    readonly fleet: GpuFleetSimulator | undefined,
    readonly worker: WorkerServiceRunner | undefined,
    /** Which alarms would have fired: `alarms.report()`, also after `stop()`. */
    readonly alarms: AlarmWatcher,
    /** What the HTML report draws: `recorder.recorded()`, also after `stop()`. */
    readonly recorder: RunRecorder,
    /** The real-time SQS proxy (receipt-handle rule, no clock): where worker tasks reach SQS. */
    readonly sqsRealtimeEndpoint: string,
  ) {}

  /** Starts moto, deploys the program into it and starts every local stand-in. */
  static async start(options: PlatformOptions): Promise<LocalPlatform> {
    const stoppers: Array<() => Promise<void>> = [];
    const stopAll = async () => {
      for (const stop of stoppers.reverse()) await stop().catch(() => undefined);
    };
    try {
      const moto = new MotoServer();
      const endpoint = await moto.start();
      stoppers.push(() => moto.stop());
      options.note(`moto listening on ${endpoint}`);

      const directSends = new DirectSends();
      const proxy = new SqsClockProxy({ target: endpoint, speed: options.speed, onSent: directSends.sent });
      const sqsEndpoint = await proxy.start();
      stoppers.push(() => proxy.stop());
      // The worker service keeps real time (see localTaskEnvironment), but not moto's lax receipt
      // handles: its own proxy at speed 1 keeps only the receipt-handle rule, with the same memory of handles.
      const realtimeProxy = new SqsClockProxy({ target: endpoint, speed: 1, receipts: proxy.receipts, onSent: directSends.sent });
      const sqsRealtimeEndpoint = await realtimeProxy.start();
      stoppers.push(() => realtimeProxy.stop());

      // This process talks to moto too (the program's mocks, the scenarios). What it replaces is put
      // back on stop: a platform started inside a test run (the chaos test) must not leave the rest
      // of the run pointed at a moto and proxies that are gone.
      const env = { ...motoClientEnv(endpoint, "us-east-1"), AWS_ENDPOINT_URL_SQS: sqsEndpoint, AWS_PROFILE: undefined, AWS_SESSION_TOKEN: undefined };
      const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
      stoppers.push(async () => setEnv(before));
      setEnv(env);

      const { topology, logDir } = await deploy(options, endpoint, sqsEndpoint);

      // Simulated time starts with the runtime, not with moto or the deploy.
      const clock = new SimClock(options.speed);
      const aws = awsClients(topology.region, endpoint, sqsEndpoint);

      // The Lambdas' EC2 calls see launch times on their own (simulated) clock.
      const ec2Proxy = new Ec2ClockProxy({
        target: endpoint,
        clock: { t0Ms: clock.t0, speed: clock.speed },
        stopDelayRealMs: clock.real(options.gpuStopSimMs ?? 60_000),
      });
      const ec2Endpoint = await ec2Proxy.start();
      stoppers.push(() => ec2Proxy.stop());
      // The Lambdas' RunTask honours clientToken as ECS does (moto ignores it), on the simulated clock.
      const ecsProxy = new EcsClientTokenProxy({ target: endpoint, now: () => clock.now() });
      const ecsEndpoint = await ecsProxy.start();
      stoppers.push(() => ecsProxy.stop());
      const lambdaEnv = {
        ...motoClientEnv(endpoint, topology.region),
        AWS_ENDPOINT_URL_SQS: sqsEndpoint,
        AWS_ENDPOINT_URL_EC2: ec2Endpoint,
        AWS_ENDPOINT_URL_ECS: ecsEndpoint,
      };
      const hosted = await hostedFunctions(topology, lambdaEnv, options.codeEndpoints);
      const lambdas = new LambdaHost(hosted.functions, {
        awsEnv: hosted.awsEnv,
        logDir,
        clock: { t0Ms: clock.t0, speed: clock.speed },
        ...(options.restartKilledAfterMs !== undefined ? { crashable: true } : {}),
      });
      stoppers.push(() => lambdas.close());

      const { gpu, fleet, stop: stopGpu } = await startGpuTier(topology, endpoint, aws, clock, options, lambdas, logDir);
      if (stopGpu) stoppers.push(stopGpu);

      const sources = startEventSources(topology, aws, lambdas);
      stoppers.push(() => Promise.all([...sources.values()].map((s) => s.stop())).then(() => undefined));

      const scheduler = startScheduler(topology, aws, options);
      stoppers.push(() => scheduler.stop());

      // Set once the platform exists; tasks end only after start-up, so it is there by then.
      const built: { platform?: LocalPlatform } = {};
      const ecsTasks = await startEcsTasks(topology, aws, endpoint, clock, options, (t) => built.platform?.failTask(t) ?? false);
      stoppers.push(() => ecsTasks.stop());

      // Under the chaos run both the worker's AWS and SQS calls go to its fault proxy's port, which routes SQS on to the real-time proxy.
      const workerEndpoint = options.codeEndpoints
        ? (await options.codeEndpoints("worker-service", { aws: endpoint, byService: { sqs: sqsRealtimeEndpoint } })).aws
        : undefined;
      const worker = await startWorker(
        topology,
        { aws: workerEndpoint ?? endpoint, sqs: workerEndpoint ?? sqsRealtimeEndpoint },
        topology.region,
        options,
        logDir,
      );
      if (worker) stoppers.push(() => worker.stop());

      // One poller of queue depths for the alarms and the report; its rounds fall on the alarms' simulated minutes.
      const depths = new DepthSampler({
        queues: topology.queues,
        clock,
        sqs: aws.sqsDirect,
        everyRealMs: roundEveryRealMs(sampleEveryRealMs(clock.speed), RECORD_EVERY_REAL_MS),
        note: options.note,
      });
      stoppers.push(() => depths.stop());
      // Stopped before the sampler (stoppers run in reverse): the round under way still publishes its state changes.
      const alarms = startAlarmWatcher(topology, aws, clock, options, depths, fleet);
      stoppers.push(() => alarms.stop());
      const recorder = new RunRecorder({ queues: topology.queues, depths, gpu, fleet, tasks: () => ecsTasks.tasks() });
      recorder.start();
      depths.start();

      const platform = new LocalPlatform(
        options,
        clock,
        moto,
        topology,
        aws,
        lambdas,
        sources,
        scheduler,
        ecsTasks,
        gpu,
        fleet,
        worker,
        alarms,
        recorder,
        sqsRealtimeEndpoint,
      );
      built.platform = platform;
      platform.directSends = directSends;
      platform.depths = depths;
      platform.ecsCapacity = ecsProxy;
      platform.stoppers.push(...stoppers);
      return platform;
    } catch (err) {
      await stopAll();
      throw err;
    }
  }

  /** The queue a ManagedQueue/TerminalQueue declared under this logical name (e.g. `ingest-dlq`). */
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

  async stop(): Promise<void> {
    for (const stop of this.stoppers.reverse()) await stop().catch(() => undefined);
    this.stoppers.length = 0;
  }
}

/** Deploys the program into moto from a clean work directory: the bundles go to `functions/`, the logs to `logs/`. */
async function deploy(options: PlatformOptions, endpoint: string, sqsEndpoint: string): Promise<{ topology: Topology; logDir: string }> {
  const codeDir = path.join(options.workDir, "functions");
  const logDir = path.join(options.workDir, "logs");
  fs.rmSync(options.workDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });

  const started = Date.now();
  const topology = await deployLocally({ stack: options.stack, endpoint, sqsEndpoint, codeDir });
  options.note(
    `deployed stack ${topology.stack} into moto: ${topology.created.length} resources created, ` +
      `${topology.uncreated.length} recorded only (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  options.note(`recorded, not created (moto can't act on them; the runtime plays mappings and schedules): ${describeUncreated(topology)}`);
  return { topology, logDir };
}

function awsClients(region: string, endpoint: string, sqsEndpoint: string): AwsClients {
  const clientConfig = { region, endpoint };
  return {
    sqs: new SQSClient({ region, endpoint: sqsEndpoint }),
    sqsDirect: new SQSClient(clientConfig),
    ec2: new EC2Client(clientConfig),
    ecs: new ECSClient(clientConfig),
    dynamodb: new DynamoDBClient(clientConfig),
    ssm: new SSMClient(clientConfig),
    sns: new SNSClient(clientConfig),
    cloudwatch: new CloudWatchClient(clientConfig),
    autoscaling: new AutoScalingClient(clientConfig),
    events: new EventBridgeClient(clientConfig),
  };
}

/**
 * The functions as the Lambda host runs them. With `codeEndpoints`, each function gets its own
 * endpoints in its environment (the host's shared env then carries none), and its queue URLs move
 * to its SQS endpoint's origin: SDK v3 sends an SQS call to its QueueUrl's origin, not to the
 * configured endpoint, so an unmoved URL would bypass whatever sits in front.
 */
async function hostedFunctions(
  topology: Topology,
  awsEnv: Record<string, string>,
  codeEndpoints: PlatformOptions["codeEndpoints"],
): Promise<{ functions: LocalFunction[]; awsEnv: Record<string, string> }> {
  if (!codeEndpoints) return { functions: topology.functions, awsEnv };
  const isEndpoint = (k: string) => k === "AWS_ENDPOINT_URL" || k.startsWith("AWS_ENDPOINT_URL_");
  const shared = Object.fromEntries(Object.entries(awsEnv).filter(([k]) => !isEndpoint(k)));
  const upstream: CodeEndpoints = {
    aws: awsEnv.AWS_ENDPOINT_URL ?? "",
    byService: Object.fromEntries(
      Object.entries(awsEnv)
        .filter(([k]) => k.startsWith("AWS_ENDPOINT_URL_"))
        .map(([k, v]) => [k.slice("AWS_ENDPOINT_URL_".length).toLowerCase(), v]),
    ),
  };
  const sqsOrigin = new URL(upstream.byService.sqs ?? upstream.aws).origin;
  const functions = await Promise.all(
    topology.functions.map(async (fn) => {
      const front = await codeEndpoints(fn.logicalName, upstream);
      const frontSqs = new URL(front.byService.sqs ?? front.aws).origin;
      const environment = Object.fromEntries(
        Object.entries(fn.environment).map(([k, v]) => [k, v.startsWith(`${sqsOrigin}/`) ? `${frontSqs}${v.slice(sqsOrigin.length)}` : v]),
      );
      const endpoints = Object.fromEntries(Object.entries(front.byService).map(([service, url]) => [`AWS_ENDPOINT_URL_${service.toUpperCase()}`, url]));
      return { ...fn, environment: { ...environment, AWS_ENDPOINT_URL: front.aws, ...endpoints } };
    }),
  );
  return { functions, awsEnv: shared };
}

/** Lambda's SQS pollers: one per event source mapping, by the mapping's logical name. */
function startEventSources(topology: Topology, aws: AwsClients, lambdas: LambdaHost): Map<string, SqsEventSource> {
  const sources = new Map<string, SqsEventSource>();
  for (const mapping of topology.mappings) {
    const source = new SqsEventSource(mapping, (event) => lambdas.invoke(mapping.functionName, event), { sqs: aws.sqs, pollWaitSeconds: 1 });
    source.start();
    sources.set(mapping.logicalName, source);
  }
  return sources;
}

/** EventBridge Scheduler's stand-in; anything but a delivery is shown to the operator. */
function startScheduler(topology: Topology, aws: AwsClients, options: PlatformOptions): LocalScheduler {
  const scheduler = new LocalScheduler(topology.schedules, {
    sqs: aws.sqs,
    speed: options.speed,
    queueUrlForArn: (arn) => topology.queues.find((q) => q.arn === arn)?.url,
    onEvent: (e) => {
      if (e.kind !== "delivered") options.note(`schedule ${e.schedule}: ${e.kind}${e.detail ? ` (${e.detail})` : ""}`);
    },
  });
  scheduler.start();
  return scheduler;
}

/** RunTask's tasks end after the simulated task time; `fails` is read at each task's end, so a scenario can decide. */
async function startEcsTasks(
  topology: Topology,
  aws: AwsClients,
  endpoint: string,
  clock: SimClock,
  options: PlatformOptions,
  fails: (t: SimTask) => boolean,
): Promise<EcsTaskSimulator> {
  const ecsTasks = new EcsTaskSimulator({
    ecs: aws.ecs,
    motoEndpoint: endpoint,
    clusters: topology.clusters.map((c) => c.arn),
    durationMs: () => clock.real(options.taskSimMs),
    outcome: (t) => (fails(t) ? "failed" : "succeeded"),
  });
  await ecsTasks.start();
  return ecsTasks;
}

/**
 * The GPU tier (./hosts/gpu-host.ts): each instance runs the gateway bundle, with the environment the
 * program's user data writes, in front of a fake model. Dev's one instance runs while moto shows it
 * running; a fleet's instances come and go with the group (./hosts/gpu-fleet.ts). The Lambdas' calls
 * to the instances' private IPs (and the load balancer's DNS name) are routed there.
 */
async function startGpuTier(
  topology: Topology,
  endpoint: string,
  aws: AwsClients,
  clock: SimClock,
  options: PlatformOptions,
  lambdas: LambdaHost,
  logDir: string,
) {
  const window = topology.functions.find((f) => f.environment.GPU_SERVICE_PATH !== undefined);
  const instance = topology.instances.find((i) => window?.environment.GPU_NAME_TAG !== undefined && i.tags.Name === window.environment.GPU_NAME_TAG);
  const fleet = topology.fleets[0];
  if (!window || (!instance && !fleet)) return {};
  const programEnv = gatewayEnvFromUserData(fleet?.userData ?? instance?.userData);
  if (!programEnv)
    throw new Error(`the GPU's user data has no write_files entry at ${GATEWAY_ENV_FILE}: the local run starts the gateway with that environment`);
  const bundlePath = writeGatewayBundle(path.join(options.workDir, "functions"));
  // The gateways complete their lifecycle actions through a proxy (moto has no CompleteLifecycleAction), answered by the fleet.
  const completions: { fleet?: GpuFleetSimulator } = {};
  const lifecycle = new LifecycleActionProxy(endpoint, (c) => completions.fleet?.complete(c) ?? false);
  const { AWS_EC2_METADATA_DISABLED: _imdsOff, ...moto } = motoClientEnv(endpoint, topology.region);
  const lifecycleEndpoint = await lifecycle.start();
  // Under the chaos run the gateways' own AWS calls (their key claims) go through its proxy too, as `gpu-gateway`.
  const front = options.codeEndpoints
    ? await options.codeEndpoints("gpu-gateway", { aws: endpoint, byService: { autoscaling: lifecycleEndpoint } })
    : undefined;
  const awsEnv = {
    ...moto,
    ...(front ? { AWS_ENDPOINT_URL: front.aws } : {}),
    AWS_ENDPOINT_URL_AUTO_SCALING: front?.byService.autoscaling ?? lifecycleEndpoint,
  };
  const ledger: ProcessedWindow[] = [];
  const model = { windowRealMs: (options.gpuWindowSimMs ?? 0) / options.speed, slots: options.gpuSlots ?? 4, ledger };
  const restart = options.restartKilledAfterMs !== undefined ? { restartAfterMs: options.restartKilledAfterMs } : {};
  const host = (instanceId: string) => GpuHost.create({ instanceId, bundlePath, logDir, programEnv, awsEnv, speed: options.speed, model, ...restart });
  if (fleet) {
    const simulator = new GpuFleetSimulator({
      autoscaling: aws.autoscaling,
      ec2: aws.ec2,
      fleet,
      clock,
      bootSimMs: options.gpuBootSimMs,
      warmStartSimMs: options.gpuWarmStartSimMs ?? 20_000,
      host,
      ledger,
      setRoutes: (routes) => lambdas.setRoutes(routes),
      note: options.note,
    });
    completions.fleet = simulator;
    await simulator.start();
    return { fleet: simulator, stop: () => simulator.stop().then(() => lifecycle.stop()) };
  }
  if (!instance) return {};
  const gpu = new GpuInstanceHost({ ec2: aws.ec2, bootDelayMs: clock.real(options.gpuBootSimMs) }, await host(instance.id), ledger);
  await gpu.start();
  if (!gpu.privateIp) throw new Error(`GPU instance ${instance.id} has no private IP in moto`);
  lambdas.setRoutes({ [`${gpu.privateIp}:${window.environment.GPU_SERVICE_PORT}`]: `127.0.0.1:${gpu.host.lambdaPort}` });
  return { gpu, stop: () => gpu.stop().then(() => lifecycle.stop()) };
}

/**
 * The queue worker service's tasks run as local processes, talking to moto in real time: `aws` for
 * every service, `sqs` (the real-time SQS proxy, or the chaos run's port in front of it) for the queues.
 */
async function startWorker(
  topology: Topology,
  endpoints: { aws: string; sqs: string },
  region: string,
  options: PlatformOptions,
  logDir: string,
): Promise<WorkerServiceRunner | undefined> {
  const service = topology.services[0];
  if (!service) return undefined;
  const taskDefinition = topology.taskDefinitions.find((t) => t.arn === service.taskDefinitionArn);
  if (!taskDefinition) throw new Error(`service ${service.logicalName}: task definition ${service.taskDefinitionArn} not found`);
  const container = containerEnvironment(pickContainer(taskDefinition));
  const extraEnv = { ...localTaskEnvironment(container, endpoints.sqs, options.speed), ...(options.workerEnv?.(container) ?? {}) };
  const count = options.workerTasks ?? Math.max(1, service.desiredCount);
  const runner = new WorkerServiceRunner({
    taskDefinition,
    count,
    awsEnv: { ...motoClientEnv(endpoints.aws, region), AWS_ENDPOINT_URL_SQS: endpoints.sqs },
    extraEnv,
    logDir,
    scratchRoot: path.join(options.workDir, "scratch"),
    ...(options.restartKilledAfterMs !== undefined
      ? {
          replaceAfterMs: options.restartKilledAfterMs,
          onReplaced: (index: number) => options.note(`worker service: task ${index} died; a replacement started`),
        }
      : {}),
  });
  await runner.start();
  options.note(`worker service ${service.name}: ${count} task(s) running as local processes`);
  return runner;
}

/** CloudWatch's stand-in for the program's alarms: queue-depth samples in, state changes published to the alert topic. */
function startAlarmWatcher(
  topology: Topology,
  aws: AwsClients,
  clock: SimClock,
  options: PlatformOptions,
  depths: DepthSampler,
  fleet: GpuFleetSimulator | undefined,
): AlarmWatcher {
  const watcher = new AlarmWatcher({
    ...(fleet ? { group: () => ({ groupName: fleet.groupName, ...fleet.snapshot() }) } : {}),
    alarms: topology.alarms,
    queues: topology.queues,
    topics: topology.topics,
    created: topology.created,
    clock,
    depths,
    sns: aws.sns,
    cloudwatch: aws.cloudwatch,
    account: MOCK_ACCOUNT_ID,
    region: topology.region,
    note: options.note,
  });
  watcher.start();
  return watcher;
}

/** `8 LogGroup, 8 RedriveAllowPolicy, …`: what the deploy recorded but left uncreated, by type. */
export function describeUncreated(topology: Pick<Topology, "uncreated">): string {
  const counts = new Map<string, number>();
  for (const r of topology.uncreated) {
    const short = r.type.split(":").at(-1) ?? r.type;
    counts.set(short, (counts.get(short) ?? 0) + 1);
  }
  return (
    [...counts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([t, n]) => `${n} ${t}`)
      .join(", ") || "nothing"
  );
}

/** Sets each variable, deleting those given as undefined. */
function setEnv(values: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}
