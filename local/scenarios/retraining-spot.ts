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
import type { LocalPlatform } from "../platform";
import type { ScenarioSummary } from "../show/view";
import { readSteps } from "./logs";
import { gauges, type Scenario, type ScenarioContext, sendAll, summary, timing, waitFor } from "./scenario";

const FALLBACK_REQUESTS = { small: 2, default: 4 } as const;

export const retrainingSpot: Scenario = {
  name: "retraining-spot",
  title: "Fargate Spot without capacity falls back to FARGATE; a task Spot takes back is relaunched once",
  requires: ["retraining", "retraining-dlq", "retraining-interruptions", "retraining-interruptions-dlq"],
  async run(ctx: ScenarioContext): Promise<ScenarioSummary> {
    const { platform } = ctx;
    const ecs = platform.ecsCapacity;
    if (!ecs) throw new Error("the local ECS stand-in is not running");
    const started = Date.now();
    const failures: string[] = [];
    const queues = (["retraining", "retraining-dlq", "retraining-interruptions", "retraining-interruptions-dlq"] as const).map((q) => platform.queue(q));
    const tick = (phase: string, done: number, total: number) => async () => {
      ctx.view({
        scenario: "retraining-spot",
        elapsedMs: Date.now() - started,
        progress: { done, total },
        queues: await gauges(
          platform,
          queues.map((q) => [q.logicalName, q] as [string, typeof q]),
        ),
        counters: { "spot refused": ecs.counts.spotRefused, "on spot": ecs.spotTasks.size },
        status: [phase],
      });
    };
    const total = async (q: (typeof queues)[number]) => {
      const d = await platform.depth(q);
      return d.visible + d.inFlight + d.delayed;
    };
    // What the queues held before: the retraining scenario leaves its malformed request in retraining-dlq.
    const before = await Promise.all(queues.map(total));
    const tasksOf = (model: string): SimTask[] => platform.ecsTasks.tasks().filter((t) => t.environment.MODEL_NAME === model);

    // 1. No Spot capacity: each request falls back to FARGATE at once, one task each.
    const n = FALLBACK_REQUESTS[ctx.size];
    const fallbackModels = Array.from({ length: n }, (_, i) => `SpotFallback-${ctx.runId}-${i}`);
    ecs.refuseSpot(true);
    ctx.note(`retraining-spot: Fargate Spot has no capacity; sending ${n} requests`);
    await sendAll(
      platform,
      platform.queue("retraining"),
      fallbackModels.map((model_name) => JSON.stringify({ model_name, trigger: "manual" })),
    );
    const fellBack = await waitFor(() => fallbackModels.every((m) => tasksOf(m).length > 0), {
      timeoutMs: 120_000,
      tick: tick("Spot refused: waiting for the FARGATE fallbacks", fallbackModels.filter((m) => tasksOf(m).length > 0).length, n),
    });
    const fallbackAt = fellBack ? Date.now() : null;
    ecs.refuseSpot(false);
    if (!fellBack) failures.push(`only ${fallbackModels.filter((m) => tasksOf(m).length > 0).length} of ${n} requests launched while Spot was refused`);
    const onSpot = fallbackModels.flatMap(tasksOf).filter((t) => ecs.spotTasks.has(t.taskArn));
    if (onSpot.length > 0) failures.push(`${onSpot.length} fallback tasks ran on Spot while it had no capacity`);
    const fallbackLogs = readSteps(platform, "retraining-launcher", "spot_capacity_fallback").filter((l) => fallbackModels.includes(String(l.model_name)));

    // 2. Spot has capacity: one request runs on Spot, which then takes its task back.
    const model = `SpotInterrupted-${ctx.runId}`;
    await sendAll(platform, platform.queue("retraining"), [JSON.stringify({ model_name: model, trigger: "manual" })]);
    let victim: SimTask | undefined;
    const running = await waitFor(
      () => {
        victim = tasksOf(model).find((t) => t.outcome === "running" && ecs.spotTasks.has(t.taskArn));
        return victim !== undefined;
      },
      { timeoutMs: 120_000, tick: tick("waiting for a task on Spot", 0, 1) },
    );
    let interruptedAt: number | null = null;
    if (!running || !victim) failures.push(`${model} did not start on FARGATE_SPOT`);
    else {
      await platform.interruptSpotTask(victim.taskArn);
      // EventBridge delivers at least once: the same event again must not start a second relaunch.
      await platform.aws.events.send(
        new PutEventsCommand({
          Entries: [
            { Source: "aws.ecs", DetailType: "ECS Task State Change", Resources: [victim.taskArn], Detail: JSON.stringify(spotInterruptionDetail(victim)) },
          ],
        }),
      );
      interruptedAt = Date.now();
      ctx.note(`retraining-spot: Spot took back ${victim.taskArn} (event put twice)`);
    }
    const relaunched = (): SimTask | undefined => tasksOf(model).find((t) => victim !== undefined && t.environment.RELAUNCH_OF === victim.taskArn);
    const back = await waitFor(() => relaunched() !== undefined, { timeoutMs: interruptedAt ? 120_000 : 0, tick: tick("waiting for the relaunch", 0, 1) });
    const relaunchedAt = back ? Date.now() : null;
    if (interruptedAt && !back) failures.push(`${model} was not relaunched after its interruption`);

    // Settle: the queues drain back to what they held before; a second relaunch would show by now.
    await waitFor(async () => (await Promise.all(queues.map(total))).every((n, i) => n <= (before[i] ?? 0)), {
      timeoutMs: 60_000,
      tick: tick("draining", 1, 1),
    });
    const modelTasks = tasksOf(model);
    if (interruptedAt && modelTasks.length !== 2) failures.push(`${model} has ${modelTasks.length} tasks; expected the interrupted one and one relaunch`);
    const relaunch = relaunched();
    if (relaunch && ecs.spotTasks.has(relaunch.taskArn)) failures.push("the relaunch ran on Spot; it must run on FARGATE");
    if (relaunch && victim && relaunch.environment.JOB_ID !== victim.environment.JOB_ID)
      failures.push("the relaunch has another job id than the interrupted task");
    const record = await stateRecord(platform, model);
    if (relaunch && victim && (record?.task_arn !== relaunch.taskArn || record?.relaunched_from !== victim.taskArn))
      failures.push(`the state record of ${model} does not name both tasks: ${JSON.stringify(record)}`);
    const requested = readSteps(platform, "retraining-relaunch", "relaunch_requested").filter((l) => l.model_name === model).length;
    const depths = await Promise.all(queues.map(total));
    /** What this scenario added to a queue (never below 0: a queue drained of older messages added nothing). */
    const left = (i: number) => Math.max(0, (depths[i] ?? 0) - (before[i] ?? 0));

    // The interruption events are no requests: any left in their queue or DLQ is a relaunch that did not happen.
    if (left(2) + left(3) > 0) failures.push(`${left(2)} interruption events still queued, ${left(3)} in retraining-interruptions-dlq`);
    const launchedModels = [...fallbackModels, model].filter((m) => tasksOf(m).length > 0).length;
    return summary({
      scenario: "retraining-spot",
      wallMs: Date.now() - started,
      sent: n + 1,
      processed: launchedModels,
      quarantined: 0,
      inDlq: left(1),
      remaining: left(0),
      timings: {
        "Spot refused → every fallback launched": timing(fallbackAt === null ? null : fallbackAt - started, platform.clock.speed),
        "interruption → relaunch": timing(interruptedAt === null || relaunchedAt === null ? null : relaunchedAt - interruptedAt, platform.clock.speed),
      },
      details: {
        spotRefused: ecs.counts.spotRefused,
        fallbacksLogged: fallbackLogs.length,
        fallbackTasks: fallbackModels.flatMap(tasksOf).length,
        interrupted: victim?.taskArn ?? null,
        relaunched: relaunch?.taskArn ?? null,
        relaunchRequests: requested,
        interruptedModelTasks: modelTasks.length,
        stateRecord: record ?? null,
      },
      failures,
    });
  },
};

/** The launcher's state record of one model (its latest launch), read straight from the table. */
async function stateRecord(platform: LocalPlatform, model: string): Promise<Record<string, string> | undefined> {
  const table = platform.fn("retraining-launcher").environment.RETRAINING_STATE_TABLE;
  if (!table) return undefined;
  const out = await platform.aws.dynamodb.send(new GetItemCommand({ TableName: table, Key: { model_name: { S: model } }, ConsistentRead: true }));
  if (!out.Item) return undefined;
  return Object.fromEntries(Object.entries(out.Item).flatMap(([k, v]) => (v.S !== undefined ? [[k, v.S]] : v.N !== undefined ? [[k, v.N]] : [])));
}
