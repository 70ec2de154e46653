/**
 * retraining (docs/parts/retraining.md): a scheduled trigger and manual triggers become ECS tasks, never more
 * than MAX_CONCURRENT_TASKS at once; the rest are deferred and launched as tasks finish.
 */
import { readSteps } from "./logs";
import { distinctQuarantined, gauges, peekAll, type Scenario, type ScenarioContext, sendAll, since, summary, waitFor } from "./scenario";

const SIZES = { small: 5, default: 12 } as const;
const SCHEDULED_MODEL = "PascalStrategy";

export const retraining: Scenario = {
  name: "retraining",
  title: "scheduled and manual triggers launch tasks up to the cap; the rest wait for capacity",
  requires: ["retraining", "retraining-dlq"],
  async run(ctx: ScenarioContext) {
    const { platform } = ctx;
    const queue = platform.queue("retraining");
    const dlq = platform.queue("retraining-dlq");
    const launcher = platform.fn("retraining-launcher");
    const cap = Number(launcher.environment.MAX_CONCURRENT_TASKS ?? "5");
    const quarantine = platform.topology.queues.find((q) => q.url === launcher.environment.QUARANTINE_QUEUE_URL) ?? dlq;
    const schedule = platform.topology.schedules.find((s) => (s.target.input ?? "").includes(SCHEDULED_MODEL));
    const failures: string[] = [];
    const n = SIZES[ctx.size];
    const started = Date.now();

    const models = Array.from({ length: n }, (_, i) => `Local-${ctx.runId}-${i}`);
    const bodies = models.map((model_name) => JSON.stringify({ model_name, trigger: "manual" }));
    bodies.push(JSON.stringify({ model_name: "", trigger: "manual" }));
    if (schedule) await platform.scheduler.fire(schedule.logicalName);
    else failures.push(`no schedule for ${SCHEDULED_MODEL} in the program`);
    await sendAll(platform, queue, bodies);
    ctx.note(`retraining: fired ${schedule?.logicalName ?? "no schedule"}, sent ${n} manual triggers and 1 malformed; cap ${cap}`);
    const expected = new Set([...models, ...(schedule ? [SCHEDULED_MODEL] : [])]);
    // One training run fails (its container exits non-zero): the launcher's job ends at the
    // launch, so a failure is the task's outcome, shown here, not a message to retry.
    const failingModel = models[models.length - 1];
    platform.failTask = (t) => t.tags.model_name === failingModel;

    let peak = 0;
    const launchedModels = () => {
      const seen = new Map<string, number>();
      for (const t of platform.ecsTasks.tasks()) {
        const model = t.tags.model_name;
        if (model === undefined || !expected.has(model)) continue;
        seen.set(model, (seen.get(model) ?? 0) + 1);
      }
      return seen;
    };
    let allLaunched: number | null = null;
    let firstLaunch: number | null = null;
    const tick = async () => {
      const running = platform.ecsTasks.tasks().filter((t) => t.outcome === "running" && t.tags.model_name !== undefined && expected.has(t.tags.model_name)).length;
      peak = Math.max(peak, running);
      const launched = launchedModels().size;
      if (firstLaunch === null && launched > 0) firstLaunch = Date.now();
      if (allLaunched === null && launched >= expected.size) allLaunched = Date.now();
      ctx.view({
        scenario: this.name,
        elapsedMs: Date.now() - started,
        progress: { done: launched, total: expected.size },
        queues: await gauges(platform, [
          ["retraining", queue],
          ["retraining-dlq", dlq],
        ]),
        counters: { "tasks running": running, "tasks launched": launched, deferred: readSteps(platform, "retraining-launcher", "capacity_deferred").length },
        status: [
          `cap ${cap} concurrent tasks; each task runs ${(platform.options.taskSimMs / 1000).toFixed(0)} simulated seconds`,
          // RunTask's tasks, as the runtime sees them in moto.
          ...platform.ecsTasks
            .tasks()
            .filter((t) => t.tags.model_name !== undefined && expected.has(t.tags.model_name))
            .slice(-6)
            .map((t) => `task ${t.taskArn.split("/").at(-1)?.slice(0, 8)} ${t.tags.model_name} (${t.tags.trigger}): ${t.outcome}`),
        ],
      });
    };
    const ok = await waitFor(() => launchedModels().size >= expected.size, { timeoutMs: 240_000, tick });
    if (!ok) failures.push(`only ${launchedModels().size} of ${expected.size} triggers launched a task`);
    await waitFor(async () => {
      const d = await platform.depth(queue);
      return d.visible + d.inFlight + d.delayed === 0;
    }, { timeoutMs: 30_000, tick });

    const launched = launchedModels();
    const twice = [...launched].filter(([, count]) => count > 1).map(([m]) => m);
    if (twice.length > 0) failures.push(`models launched more than once: ${twice.join(", ")}`);
    if (peak > cap) failures.push(`${peak} tasks ran at once, over the cap of ${cap}`);
    const deferred = readSteps(platform, "retraining-launcher", "capacity_deferred").length;
    // Wait for the failing model's task to end, to show the runtime failing it.
    await waitFor(() => platform.ecsTasks.tasks().some((t) => t.tags.model_name === failingModel && t.outcome !== "running"), { timeoutMs: 60_000, tick });
    const ours = platform.ecsTasks.tasks().filter((t) => t.tags.model_name !== undefined && expected.has(t.tags.model_name));
    const failedTasks = ours.filter((t) => t.outcome === "failed").map((t) => t.tags.model_name);
    if (failedTasks.length !== 1 || failedTasks[0] !== failingModel) failures.push(`expected only ${failingModel}'s task to fail, got ${failedTasks.join(", ") || "none"}`);
    platform.failTask = () => false;
    if (expected.size > cap && deferred === 0) failures.push("nothing was deferred although the triggers exceeded the cap");
    const quarantined = distinctQuarantined((await peekAll(platform, quarantine)).filter((m) => (m.Body ?? "").includes('"model_name":""'))).length;
    if (quarantined !== 1) failures.push(`expected the malformed trigger in quarantine, found ${quarantined}`);
    const [left, inDlq] = await Promise.all([platform.depth(queue), platform.depth(dlq)]);
    return summary({
      scenario: this.name,
      wallMs: Date.now() - started,
      sent: bodies.length + (schedule ? 1 : 0),
      processed: launched.size,
      quarantined,
      inDlq: quarantine === dlq ? inDlq.visible + inDlq.inFlight - quarantined : inDlq.visible + inDlq.inFlight,
      remaining: left.visible + left.inFlight + left.delayed,
      timings: { "first task launched": since(started, firstLaunch), "all triggers launched": since(started, allLaunched) },
      details: {
        cap,
        peakRunning: peak,
        deferrals: deferred,
        tasksSucceeded: ours.filter((t) => t.outcome === "succeeded").length,
        tasksFailed: failedTasks.length,
        tasksStillRunning: ours.filter((t) => t.outcome === "running").length,
      },
      failures,
    });
  },
};
