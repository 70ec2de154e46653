/**
 * The whole platform, running locally: moto as AWS, the Pulumi program deployed into it, and
 * the runtime that plays what moto can't (Lambda's SQS pollers, Scheduler, the ECS agent and
 * task lifecycle, the GPU instances' hosts, CloudWatch's alarm evaluation). Scenarios drive it; the CLI shows
 * it; one sampler of queue depths feeds the alarms and the HTML report's recorder.
 */
import { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { SimClock } from "./hosts/clock";
import { type QueueDepth, readDepth } from "./observe/depth-sampler";
import type { SimTask } from "./hosts/ecs-tasks";
import type { LocalFunction, LocalQueue } from "./provision/topology-types";
import {
  deployInto,
  pointThisProcessAtMoto,
  startEcsTasks,
  startGpuTier,
  startLambdas,
  startMoto,
  startObservers,
  startRuntime,
  startServiceProxies,
  startWorkerService,
} from "./platform-start";
import { awsClients, type PlatformOptions, type PlatformParts, type StartContext, Stoppers } from "./platform-types";

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
