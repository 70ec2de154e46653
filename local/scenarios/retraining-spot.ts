/**
 * retraining-spot (issue 39, docs/parts/retraining.md "Spot capacity", "Spot interruptions"): with
 * `useSpot`, Fargate Spot first has no capacity (the ECS stand-in refuses FARGATE_SPOT RunTasks as
 * ECS does): each request falls back to FARGATE at once. Then Spot has capacity, a request runs on
 * Spot and Spot takes the task back: ECS's Task State Change event (put twice, as EventBridge may
 * deliver it) goes through the program's rule to the interruptions queue, the relaunch consumer asks
 * the launcher once more, and the launcher relaunches the job once, on FARGATE, under the same job
 * id; the state table records both tasks. Checks: every request accounted for, one task per
 * fallback request, exactly one relaunch, nothing left in a queue or DLQ.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { spotInterruptionDetail, type SimTask } from "../hosts/ecs-tasks";
import type { EcsClientTokenProxy } from "../aws/ecs-client-token";
import type { LocalPlatform } from "../platform";
import type { ScenarioSummary } from "../show/view";
import { readSteps } from "./logs";
import { type Scenario, type ScenarioContext, ScenarioRun, sendAll, timing, total, waitFor } from "./scenario";

const FALLBACK_REQUESTS = { small: 2, default: 4 } as const;
const QUEUES = ["retraining", "retraining-dlq", "retraining-interruptions", "retraining-interruptions-dlq"];

export const retrainingSpot: Scenario = {
  name: "retraining-spot",
  title: "Fargate Spot without capacity falls back to FARGATE; a task Spot takes back is relaunched once",
  requires: QUEUES,
  run: (ctx) => new RetrainingSpotRun(ctx, "retraining-spot").run(),
};

class RetrainingSpotRun extends ScenarioRun {
  private readonly ecs: EcsClientTokenProxy;
  private readonly queues = QUEUES.map((q) => this.platform.queue(q));

  constructor(ctx: ScenarioContext, name: string) {
    super(ctx, name);
    if (!this.platform.ecsCapacity) throw new Error("the local ECS stand-in is not running");
    this.ecs = this.platform.ecsCapacity;
  }

  async run(): Promise<ScenarioSummary> {
    // What the queues held before: the retraining scenario leaves its malformed request in retraining-dlq.
    const before = await this.depths();
    const fallback = await this.fallBackWithoutSpot();
    const spot = await this.interruptOnSpot();
    // Settle: the queues drain back to what they held before; a second relaunch would show by now.
    await waitFor(async () => (await this.depths()).every((n, i) => n <= (before[i] ?? 0)), { timeoutMs: 60_000, tick: this.tick("draining", 1, 1) });
    const relaunch = await this.checkRelaunch(spot);
    const depths = await this.depths();
    /** What this scenario added to a queue (never below 0: a queue drained of older messages added nothing). */
    const left = (i: number) => Math.max(0, (depths[i] ?? 0) - (before[i] ?? 0));
    // The interruption events are no requests: any left in their queue or DLQ is a relaunch that did not happen.
    if (left(2) + left(3) > 0) this.failures.push(`${left(2)} interruption events still queued, ${left(3)} in retraining-interruptions-dlq`);
    const speed = this.platform.clock.speed;
    return this.summarise({
      sent: fallback.models.length + 1,
      processed: [...fallback.models, spot.model].filter((m) => this.tasksOf(m).length > 0).length,
      quarantined: 0,
      inDlq: left(1),
      remaining: left(0),
      timings: {
        "Spot refused → every fallback launched": timing(fallback.at === null ? null : fallback.at - this.started, speed),
        "interruption → relaunch": timing(spot.interruptedAt === null || spot.relaunchedAt === null ? null : spot.relaunchedAt - spot.interruptedAt, speed),
      },
      details: {
        spotRefused: this.ecs.counts.spotRefused,
        fallbacksLogged: fallback.logged,
        fallbackTasks: fallback.models.flatMap((m) => this.tasksOf(m)).length,
        interrupted: spot.victim?.taskArn ?? null,
        ...relaunch,
      },
    });
  }

  /** 1. No Spot capacity: each request falls back to FARGATE at once, one task each. */
  private async fallBackWithoutSpot(): Promise<{ models: string[]; at: number | null; logged: number }> {
    const { platform, ecs, ctx } = this;
    const n = FALLBACK_REQUESTS[ctx.size];
    const models = Array.from({ length: n }, (_, i) => `SpotFallback-${ctx.runId}-${i}`);
    const launched = () => models.filter((m) => this.tasksOf(m).length > 0).length;
    ecs.refuseSpot(true);
    ctx.note(`retraining-spot: Fargate Spot has no capacity; sending ${n} requests`);
    const requests = models.map((model_name) => JSON.stringify({ model_name, trigger: "manual" }));
    await sendAll(platform, platform.queue("retraining"), requests);
    const fellBack = await waitFor(() => launched() === n, {
      timeoutMs: 120_000,
      tick: this.tick("Spot refused: waiting for the FARGATE fallbacks", launched(), n),
    });
    const at = fellBack ? Date.now() : null;
    ecs.refuseSpot(false);
    if (!fellBack) this.failures.push(`only ${launched()} of ${n} requests launched while Spot was refused`);
    const onSpot = models.flatMap((m) => this.tasksOf(m)).filter((t) => ecs.spotTasks.has(t.taskArn));
    if (onSpot.length > 0) this.failures.push(`${onSpot.length} fallback tasks ran on Spot while it had no capacity`);
    const logged = readSteps(platform, "retraining-launcher", "spot_capacity_fallback").filter((l) => models.includes(String(l.model_name))).length;
    return { models, at, logged };
  }

  /** 2. Spot has capacity: one request runs on Spot, which then takes its task back; the launcher relaunches it. */
  private async interruptOnSpot(): Promise<{ model: string; victim?: SimTask; interruptedAt: number | null; relaunchedAt: number | null }> {
    const { platform, ecs } = this;
    const model = `SpotInterrupted-${this.ctx.runId}`;
    await sendAll(platform, platform.queue("retraining"), [JSON.stringify({ model_name: model, trigger: "manual" })]);
    let victim: SimTask | undefined;
    const onSpot = () => {
      victim = this.tasksOf(model).find((t) => t.outcome === "running" && ecs.spotTasks.has(t.taskArn));
      return victim !== undefined;
    };
    const running = await waitFor(onSpot, { timeoutMs: 120_000, tick: this.tick("waiting for a task on Spot", 0, 1) });
    let interruptedAt: number | null = null;
    if (!running || !victim) this.failures.push(`${model} did not start on FARGATE_SPOT`);
    else {
      await this.takeBack(victim);
      interruptedAt = Date.now();
      this.ctx.note(`retraining-spot: Spot took back ${victim.taskArn} (event put twice)`);
    }
    const relaunchedAt = await this.until(() => this.relaunchOf(model, victim) !== undefined, {
      timeoutMs: interruptedAt ? 120_000 : 0,
      tick: this.tick("waiting for the relaunch", 0, 1),
      failure: interruptedAt ? `${model} was not relaunched after its interruption` : undefined,
    });
    return { model, victim, interruptedAt, relaunchedAt };
  }

  /** Spot takes the task back; EventBridge delivers at least once: the same event again must not start a second relaunch. */
  private async takeBack(victim: SimTask): Promise<void> {
    await this.platform.interruptSpotTask(victim.taskArn);
    await this.platform.aws.events.send(
      new PutEventsCommand({
        Entries: [
          { Source: "aws.ecs", DetailType: "ECS Task State Change", Resources: [victim.taskArn], Detail: JSON.stringify(spotInterruptionDetail(victim)) },
        ],
      }),
    );
  }

  /** One relaunch, on FARGATE, under the interrupted task's job id, and the state record naming both tasks; its details. */
  private async checkRelaunch({ model, victim, interruptedAt }: { model: string; victim?: SimTask; interruptedAt: number | null }) {
    const modelTasks = this.tasksOf(model);
    if (interruptedAt && modelTasks.length !== 2) this.failures.push(`${model} has ${modelTasks.length} tasks; expected the interrupted one and one relaunch`);
    const relaunch = this.relaunchOf(model, victim);
    if (relaunch && this.ecs.spotTasks.has(relaunch.taskArn)) this.failures.push("the relaunch ran on Spot; it must run on FARGATE");
    if (relaunch && victim && relaunch.environment.JOB_ID !== victim.environment.JOB_ID)
      this.failures.push("the relaunch has another job id than the interrupted task");
    const record = await stateRecord(this.platform, model);
    if (relaunch && victim && (record?.task_arn !== relaunch.taskArn || record?.relaunched_from !== victim.taskArn))
      this.failures.push(`the state record of ${model} does not name both tasks: ${JSON.stringify(record)}`);
    return {
      relaunched: relaunch?.taskArn ?? null,
      relaunchRequests: readSteps(this.platform, "retraining-relaunch", "relaunch_requested").filter((l) => l.model_name === model).length,
      interruptedModelTasks: modelTasks.length,
      stateRecord: record ?? null,
    };
  }

  private tasksOf(model: string): SimTask[] {
    return this.platform.ecsTasks.tasks().filter((t) => t.environment.MODEL_NAME === model);
  }

  private relaunchOf(model: string, victim: SimTask | undefined): SimTask | undefined {
    return this.tasksOf(model).find((t) => victim !== undefined && t.environment.RELAUNCH_OF === victim.taskArn);
  }

  /** Every queue's messages, visible, in flight or delayed. */
  private depths(): Promise<number[]> {
    return Promise.all(this.queues.map(async (q) => total(await this.platform.depth(q))));
  }

  private tick(phase: string, done: number, of: number): () => Promise<void> {
    const queues = Object.fromEntries(this.queues.map((q) => [q.logicalName, q]));
    return async () => {
      await this.show(queues, { done, total: of }, { "spot refused": this.ecs.counts.spotRefused, "on spot": this.ecs.spotTasks.size }, [phase]);
    };
  }
}

/** The launcher's state record of one model (its latest launch), read straight from the table. */
async function stateRecord(platform: LocalPlatform, model: string): Promise<Record<string, string> | undefined> {
  const table = platform.fn("retraining-launcher").environment.RETRAINING_STATE_TABLE;
  if (!table) return undefined;
  const out = await platform.aws.dynamodb.send(new GetItemCommand({ TableName: table, Key: { model_name: { S: model } }, ConsistentRead: true }));
  if (!out.Item) return undefined;
  return Object.fromEntries(Object.entries(out.Item).flatMap(([k, v]) => (v.S !== undefined ? [[k, v.S]] : v.N !== undefined ? [[k, v.N]] : [])));
}
