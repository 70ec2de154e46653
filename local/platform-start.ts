/**
 * The steps of `LocalPlatform.start` (./platform.ts), in the order it takes them: moto and its SQS
 * proxies, the deploy, the proxies in front of moto for EC2, ECS and Auto Scaling, the Lambdas, the
 * GPU tier, the runtime (event sources and scheduler), the ECS tasks, the worker service and the
 * observers. Each step registers its stops with `Stoppers` as it starts a part.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { MOCK_ACCOUNT_ID } from "../plan/mocks";
import { AlarmWatcher, sampleEveryRealMs } from "./observe/alarm-watch";
import { DepthSampler, roundEveryRealMs } from "./observe/depth-sampler";
import { EcsTaskSimulator, type SimTask } from "./hosts/ecs-tasks";
import { SqsEventSource } from "./hosts/event-source";
import { GpuFleetSimulator } from "./hosts/gpu-fleet";
import { GpuHost, GpuInstanceHost, gatewayEnvFromUserData, writeGatewayBundle } from "./hosts/gpu-host";
import type { ProcessedWindow } from "./hosts/fake-model";
import { AutoScalingProxy } from "./aws/autoscaling-proxy";
import { GroupDistributions } from "./aws/group-stand-in";
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
import type { LocalFunction, Topology } from "./provision/topology-types";
import { containerEnvironment, localTaskEnvironment, pickContainer, WorkerServiceRunner } from "./hosts/worker-service";
import {
  type CodeEndpoints,
  type MotoStarted,
  type PlatformOptions,
  type PlatformParts,
  type ServiceProxies,
  type StartContext,
  Stoppers,
} from "./platform-types";

/**
 * How often the report's recorder wants the queues' depths, in real ms: fine enough for a
 * scenario of twenty seconds to draw as a curve, coarse enough for moto (every queue each round).
 */
export const RECORD_EVERY_REAL_MS = 500;

/** Starts moto and the SQS proxies in front of it. */
export async function startMoto(options: PlatformOptions, stoppers: Stoppers): Promise<MotoStarted> {
  const moto = new MotoServer();
  const endpoint = await moto.start();
  stoppers.add(() => moto.stop());
  options.note(`moto listening on ${endpoint}`);
  return { moto, endpoint, ...(await startSqsProxies(options, endpoint, stoppers)) };
}

/** The SQS clock proxy (the Lambdas' SQS) and the real-time one (the worker service's), sharing their memory of receipt handles. */
async function startSqsProxies(options: PlatformOptions, endpoint: string, stoppers: Stoppers): Promise<Omit<MotoStarted, "moto" | "endpoint">> {
  const directSends = new DirectSends();
  const proxy = new SqsClockProxy({ target: endpoint, speed: options.speed, onSent: directSends.sent });
  const sqsEndpoint = await proxy.start();
  stoppers.add(() => proxy.stop());
  // The worker service keeps real time (see localTaskEnvironment), but not moto's lax receipt
  // handles: its own proxy at speed 1 keeps only the receipt-handle rule, with the same memory of handles.
  const realtimeProxy = new SqsClockProxy({ target: endpoint, speed: 1, onSent: directSends.sent });
  const sqsRealtimeEndpoint = await realtimeProxy.start();
  stoppers.add(() => realtimeProxy.stop());
  return { sqsEndpoint, sqsRealtimeEndpoint, directSends };
}

/**
 * This process talks to moto too (the program's mocks, the scenarios). What it replaces is put
 * back on stop: a platform started inside a test run (the chaos test) must not leave the rest
 * of the run pointed at a moto and proxies that are gone.
 */
export function pointThisProcessAtMoto(moto: MotoStarted, stoppers: Stoppers): void {
  const env = { ...motoClientEnv(moto.endpoint, "us-east-1"), AWS_ENDPOINT_URL_SQS: moto.sqsEndpoint, AWS_PROFILE: undefined, AWS_SESSION_TOKEN: undefined };
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  stoppers.add(async () => setEnv(before));
  setEnv(env);
}

/** Deploys the program into moto from a clean work directory: the bundles go to `functions/`, the logs to `logs/`. */
export async function deployInto(options: PlatformOptions, moto: MotoStarted): Promise<{ topology: Topology; logDir: string }> {
  const codeDir = path.join(options.workDir, "functions");
  const logDir = path.join(options.workDir, "logs");
  fs.rmSync(options.workDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });

  const started = Date.now();
  const topology = await deployLocally({ stack: options.stack, endpoint: moto.endpoint, sqsEndpoint: moto.sqsEndpoint, codeDir });
  options.note(
    `deployed stack ${topology.stack} into moto: ${topology.created.length} resources created, ` +
      `${topology.uncreated.length} recorded only (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  options.note(`recorded, not created (moto can't act on them; the runtime plays mappings and schedules): ${describeUncreated(topology)}`);
  return { topology, logDir };
}

/** The EC2 clock, ECS clientToken and Auto Scaling proxies in front of moto. */
export async function startServiceProxies(ctx: StartContext): Promise<ServiceProxies> {
  const { endpoint, clock, stoppers } = ctx;
  // The Lambdas' EC2 calls see launch times on their own (simulated) clock.
  const ec2Proxy = new Ec2ClockProxy({
    target: endpoint,
    clock: { t0Ms: clock.t0, speed: clock.speed },
    // An instance stays `stopping` a simulated minute after a StopInstances (moto stops at once; EC2 takes a while, and refuses a start meanwhile).
    stopDelayRealMs: clock.real(60_000),
  });
  const ec2Endpoint = await ec2Proxy.start();
  stoppers.add(() => ec2Proxy.stop());
  // The Lambdas' RunTask honours clientToken as ECS does (moto ignores it), on the simulated clock.
  const ecsProxy = new EcsClientTokenProxy({ target: endpoint, now: () => clock.now() });
  const ecsEndpoint = await ecsProxy.start();
  stoppers.add(() => ecsProxy.stop());
  // Auto Scaling for the Lambdas and the gateways: moto, with what it lacks (CompleteLifecycleAction,
  // the mixed instances policy's distribution, leaving instances) answered by the fleet's stand-ins.
  const fleetRef: { fleet?: GpuFleetSimulator } = {};
  const distributions = new GroupDistributions(ctx.topology.fleets);
  const autoscalingProxy = new AutoScalingProxy(endpoint, (c) => fleetRef.fleet?.complete(c) ?? false, {
    distributions,
    terminating: (group) => (fleetRef.fleet?.groupName === group ? fleetRef.fleet.terminating() : []),
  });
  const autoscalingEndpoint = await autoscalingProxy.start();
  stoppers.add(() => autoscalingProxy.stop());
  return { ec2Endpoint, ecsEndpoint, autoscalingEndpoint, ecsCapacity: ecsProxy, groupDistributions: distributions, fleetRef };
}

/** The Lambda host, running each function with moto and the proxies (or the chaos run's fronts) as its endpoints. */
export async function startLambdas(ctx: StartContext, proxies: ServiceProxies): Promise<LambdaHost> {
  const upstream: CodeEndpoints = {
    aws: ctx.endpoint,
    byService: { sqs: ctx.sqsEndpoint, ec2: proxies.ec2Endpoint, ecs: proxies.ecsEndpoint, autoscaling: proxies.autoscalingEndpoint },
  };
  const { AWS_ENDPOINT_URL: _moto, ...shared } = motoClientEnv(ctx.endpoint, ctx.topology.region);
  const codeEndpoints = ctx.options.codeEndpoints;
  const lambdas = new LambdaHost(codeEndpoints ? await hostedFunctions(ctx.topology, upstream, codeEndpoints) : ctx.topology.functions, {
    // With the chaos run's fronts each function carries its own endpoints, and the shared env none.
    awsEnv: codeEndpoints ? shared : { ...shared, ...endpointEnv(upstream) },
    logDir: ctx.logDir,
    clock: { t0Ms: ctx.clock.t0, speed: ctx.clock.speed },
    ...(ctx.options.restartKilledAfterMs !== undefined ? { crashable: true } : {}),
  });
  ctx.stoppers.add(() => lambdas.close());
  return lambdas;
}

/**
 * The SDK's `AWS_ENDPOINT_URL_<SERVICE ID>` names a service by its id (`AUTO_SCALING`); `byService`
 * by its signing name (`autoscaling`), which is how the chaos run's proxy routes a call. Pure.
 */
export function endpointVarOf(service: string): string {
  return `AWS_ENDPOINT_URL_${service === "autoscaling" ? "AUTO_SCALING" : service.toUpperCase()}`;
}

/** The environment that points the SDK at `endpoints`. Pure. */
function endpointEnv(endpoints: CodeEndpoints): Record<string, string> {
  const byService = Object.entries(endpoints.byService).map(([service, url]) => [endpointVarOf(service), url]);
  return { AWS_ENDPOINT_URL: endpoints.aws, ...Object.fromEntries(byService) };
}

/**
 * The functions as the Lambda host runs them in front of `codeEndpoints`: each function gets its own
 * endpoints in its environment, and its queue URLs move to its SQS endpoint's origin: SDK v3 sends an
 * SQS call to its QueueUrl's origin, not to the configured endpoint, so an unmoved URL would bypass
 * whatever sits in front.
 */
async function hostedFunctions(
  topology: Topology,
  upstream: CodeEndpoints,
  codeEndpoints: NonNullable<PlatformOptions["codeEndpoints"]>,
): Promise<LocalFunction[]> {
  const sqsOrigin = new URL(upstream.byService.sqs ?? upstream.aws).origin;
  return Promise.all(
    topology.functions.map(async (fn) => {
      const front = await codeEndpoints(fn.logicalName, upstream);
      const frontSqs = new URL(front.byService.sqs ?? front.aws).origin;
      const environment = Object.fromEntries(
        Object.entries(fn.environment).map(([k, v]) => [k, v.startsWith(`${sqsOrigin}/`) ? `${frontSqs}${v.slice(sqsOrigin.length)}` : v]),
      );
      return { ...fn, environment: { ...environment, ...endpointEnv(front) } };
    }),
  );
}

/**
 * The GPU tier (./hosts/gpu-host.ts): each instance runs the gateway bundle, with the environment the
 * program's user data writes, in front of a fake model. Dev's one instance runs while moto shows it
 * running; a fleet's instances come and go with the group (./hosts/gpu-fleet.ts). The Lambdas' calls
 * to the instances' private IPs (and the load balancer's DNS name) are routed there.
 */
export async function startGpuTier(ctx: StartContext, lambdas: LambdaHost, proxies: ServiceProxies): Promise<Pick<PlatformParts, "gpu" | "fleet">> {
  const { topology, options } = ctx;
  const window = topology.functions.find((f) => f.environment.GPU_SERVICE_PATH !== undefined);
  const instance = topology.instances.find((i) => window?.environment.GPU_NAME_TAG !== undefined && i.tags.Name === window.environment.GPU_NAME_TAG);
  const fleet = topology.fleets[0];
  if (!window || (!instance && !fleet)) return { gpu: undefined, fleet: undefined };
  const programEnv = gatewayEnvFromUserData(fleet?.userData ?? instance?.userData);
  if (!programEnv)
    throw new Error(`the GPU's user data has no write_files entry at ${GATEWAY_ENV_FILE}: the local run starts the gateway with that environment`);
  const bundlePath = writeGatewayBundle(path.join(options.workDir, "functions"));
  // The gateways complete their lifecycle actions through the Auto Scaling proxy (moto has no CompleteLifecycleAction), answered by the fleet.
  const { AWS_EC2_METADATA_DISABLED: _imdsOff, ...moto } = motoClientEnv(ctx.endpoint, topology.region);
  // Under the chaos run the gateways' own AWS calls (their key claims) go through its proxy too, as `gpu-gateway`.
  const upstream = { aws: ctx.endpoint, byService: { autoscaling: proxies.autoscalingEndpoint } };
  const awsEnv = { ...moto, ...endpointEnv(options.codeEndpoints ? await options.codeEndpoints("gpu-gateway", upstream) : upstream) };
  const ledger: ProcessedWindow[] = [];
  const model = { windowRealMs: (options.gpuWindowSimMs ?? 0) / options.speed, slots: options.gpuSlots ?? 4, ledger };
  const restart = options.restartKilledAfterMs !== undefined ? { restartAfterMs: options.restartKilledAfterMs } : {};
  const host = (instanceId: string) =>
    GpuHost.create({ instanceId, bundlePath, logDir: ctx.logDir, programEnv, awsEnv, speed: options.speed, model, ...restart });
  if (fleet) {
    const simulator = new GpuFleetSimulator({
      autoscaling: ctx.aws.autoscaling,
      ec2: ctx.aws.ec2,
      fleet,
      clock: ctx.clock,
      bootSimMs: options.gpuBootSimMs,
      warmStartSimMs: options.gpuWarmStartSimMs ?? 20_000,
      host,
      ledger,
      setRoutes: (routes) => lambdas.setRoutes(routes),
      note: options.note,
      // Launches follow the distribution as the scaler last set it; interruptions put EC2's events.
      distribution: () => proxies.groupDistributions.of(fleet.groupName),
      signals: { events: ctx.aws.events, account: MOCK_ACCOUNT_ID, region: topology.region },
    });
    proxies.fleetRef.fleet = simulator;
    await simulator.start();
    ctx.stoppers.add(() => simulator.stop());
    return { gpu: undefined, fleet: simulator };
  }
  if (!instance) return { gpu: undefined, fleet: undefined };
  const gpu = new GpuInstanceHost({ ec2: ctx.aws.ec2, bootDelayMs: ctx.clock.real(options.gpuBootSimMs) }, await host(instance.id), ledger);
  await gpu.start();
  if (!gpu.privateIp) throw new Error(`GPU instance ${instance.id} has no private IP in moto`);
  lambdas.setRoutes({ [`${gpu.privateIp}:${window.environment.GPU_SERVICE_PORT}`]: `127.0.0.1:${gpu.host.lambdaPort}` });
  ctx.stoppers.add(() => gpu.stop());
  return { gpu, fleet: undefined };
}

/**
 * What Lambda and EventBridge Scheduler do beyond moto: Lambda's SQS pollers, one per event source
 * mapping (by the mapping's logical name), and the scheduler's stand-in, which shows the operator
 * anything but a delivery.
 */
export function startRuntime(ctx: StartContext, lambdas: LambdaHost): Pick<PlatformParts, "sources" | "scheduler"> {
  const { topology, aws, options } = ctx;
  const sources = new Map<string, SqsEventSource>();
  for (const mapping of topology.mappings) {
    const source = new SqsEventSource(mapping, (event) => lambdas.invoke(mapping.functionName, event), { sqs: aws.sqs, pollWaitSeconds: 1 });
    source.start();
    sources.set(mapping.logicalName, source);
  }
  ctx.stoppers.add(() => Promise.all([...sources.values()].map((s) => s.stop())).then(() => undefined));

  const scheduler = new LocalScheduler(topology.schedules, {
    sqs: aws.sqs,
    speed: options.speed,
    queueUrlForArn: (arn) => topology.queues.find((q) => q.arn === arn)?.url,
    onEvent: (e) => {
      if (e.kind !== "delivered") options.note(`schedule ${e.schedule}: ${e.kind}${e.detail ? ` (${e.detail})` : ""}`);
    },
  });
  scheduler.start();
  ctx.stoppers.add(() => scheduler.stop());
  return { sources, scheduler };
}

/** RunTask's tasks end after the simulated task time; `fails` is read at each task's end, so a scenario can decide. */
export async function startEcsTasks(ctx: StartContext, fails: (t: SimTask) => boolean): Promise<EcsTaskSimulator> {
  const ecsTasks = new EcsTaskSimulator({
    ecs: ctx.aws.ecs,
    motoEndpoint: ctx.endpoint,
    clusters: ctx.topology.clusters.map((c) => c.arn),
    durationMs: () => ctx.clock.real(ctx.options.taskSimMs),
    outcome: (t) => (fails(t) ? "failed" : "succeeded"),
  });
  await ecsTasks.start();
  ctx.stoppers.add(() => ecsTasks.stop());
  return ecsTasks;
}

/**
 * The queue worker service (if the program has one): its tasks run as local processes, talking to
 * moto in real time, and to SQS through the real-time SQS proxy. Under the chaos run both their AWS
 * and SQS calls go to its fault proxy's port, which routes SQS on to the real-time proxy.
 */
export async function startWorkerService(ctx: StartContext): Promise<WorkerServiceRunner | undefined> {
  const { topology, options } = ctx;
  const front = options.codeEndpoints
    ? (await options.codeEndpoints("worker-service", { aws: ctx.endpoint, byService: { sqs: ctx.sqsRealtimeEndpoint } })).aws
    : undefined;
  const endpoints = { aws: front ?? ctx.endpoint, sqs: front ?? ctx.sqsRealtimeEndpoint };
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
    awsEnv: { ...motoClientEnv(endpoints.aws, topology.region), AWS_ENDPOINT_URL_SQS: endpoints.sqs },
    extraEnv,
    logDir: ctx.logDir,
    scratchRoot: path.join(options.workDir, "scratch"),
    ...(options.restartKilledAfterMs !== undefined
      ? {
          replaceAfterMs: options.restartKilledAfterMs,
          onReplaced: (index: number) => options.note(`worker service: task ${index} died; a replacement started`),
        }
      : {}),
  });
  await runner.start();
  ctx.stoppers.add(() => runner.stop());
  options.note(`worker service ${service.name}: ${count} task(s) running as local processes`);
  return runner;
}

/** The sampler of queue depths, the alarms' stand-in it feeds and the report's recorder; sampling starts last. */
export function startObservers(
  ctx: StartContext,
  gpuTier: Pick<PlatformParts, "gpu" | "fleet">,
  ecsTasks: EcsTaskSimulator,
): Pick<PlatformParts, "depths" | "alarms" | "recorder"> {
  const { topology, clock } = ctx;
  // One poller of queue depths for the alarms and the report; its rounds fall on the alarms' simulated minutes.
  const depths = new DepthSampler({
    queues: topology.queues,
    clock,
    sqs: ctx.aws.sqsDirect,
    everyRealMs: roundEveryRealMs(sampleEveryRealMs(clock.speed), RECORD_EVERY_REAL_MS),
    note: ctx.options.note,
  });
  ctx.stoppers.add(() => depths.stop());
  // Stopped before the sampler (stoppers run in reverse): the round under way still publishes its state changes.
  const alarms = startAlarmWatcher(ctx, depths, gpuTier.fleet);
  ctx.stoppers.add(() => alarms.stop());
  const recorder = new RunRecorder({ queues: topology.queues, depths, gpu: gpuTier.gpu, fleet: gpuTier.fleet, tasks: () => ecsTasks.tasks() });
  recorder.start();
  depths.start();
  return { depths, alarms, recorder };
}

/** CloudWatch's stand-in for the program's alarms: queue-depth samples in, state changes published to the alert topic. */
function startAlarmWatcher(ctx: StartContext, depths: DepthSampler, fleet: GpuFleetSimulator | undefined): AlarmWatcher {
  const { topology } = ctx;
  const watcher = new AlarmWatcher({
    ...(fleet ? { group: () => ({ groupName: fleet.groupName, ...fleet.snapshot() }) } : {}),
    alarms: topology.alarms,
    queues: topology.queues,
    topics: topology.topics,
    created: topology.created,
    clock: ctx.clock,
    depths,
    sns: ctx.aws.sns,
    cloudwatch: ctx.aws.cloudwatch,
    account: MOCK_ACCOUNT_ID,
    region: topology.region,
    note: ctx.options.note,
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
