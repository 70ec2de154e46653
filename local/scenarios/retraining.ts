/**
 * retraining (docs/parts/retraining.md): a scheduled trigger and manual triggers become ECS tasks, never more
 * than MAX_CONCURRENT_TASKS at once; the rest are deferred and launched as tasks finish.
 */
import type { SimTask } from "../hosts/ecs-tasks";
import type { ScenarioSummary } from "../show/view";
import { readSteps } from "./logs";
import { distinctQuarantined, keyTimings, peekAll, type Scenario, ScenarioRun, sendAll, total, waitFor, waitForEmpty } from "./scenario";

const SIZES = { small: 5, default: 12 } as const;
const SCHEDULED_MODEL = "PascalStrategy";

export const retraining: Scenario = {
  name: "retraining",
  title: "scheduled and manual triggers launch tasks up to the cap; the rest wait for capacity",
  requires: ["retraining", "retraining-dlq"],
  async run(ctx) {
    const run = new RetrainingRun(ctx, this.name);
    await run.sendTriggers();
    await run.waitForEveryLaunch();
    run.checkLaunches();
    await run.checkFailingTask();
    return run.report();
  },
};

/** One play of the scenario: the launcher's cap and queues, the triggers sent, what launched and the failures found. */
class RetrainingRun extends ScenarioRun {
  private readonly queue = this.platform.queue("retraining");
  private readonly dlq = this.platform.queue("retraining-dlq");
  private readonly launcher = this.platform.fn("retraining-launcher");
  private readonly cap = Number(this.launcher.environment.MAX_CONCURRENT_TASKS ?? "5");
  private readonly quarantine = this.platform.topology.queues.find((q) => q.url === this.launcher.environment.QUARANTINE_QUEUE_URL) ?? this.dlq;
  private readonly schedule = this.platform.topology.schedules.find((s) => (s.target.input ?? "").includes(SCHEDULED_MODEL));
  private readonly n = SIZES[this.ctx.size];
  private readonly models = Array.from({ length: this.n }, (_, i) => `Local-${this.ctx.runId}-${i}`);
  private readonly bodies = [...this.models, ""].map((model_name) => JSON.stringify({ model_name, trigger: "manual" }));
  private readonly expected = new Set([...this.models, ...(this.schedule ? [SCHEDULED_MODEL] : [])]);
  /** One training run fails (its container exits non-zero); see sendTriggers. */
  private readonly failingModel = this.models[this.models.length - 1];
  private peak = 0;
  private allLaunched: number | null = null;
  private firstLaunch: number | null = null;
  /** Taken once every trigger launched: models and their task counts, and the deferrals logged. */
  private launched = new Map<string, number>();
  private deferred = 0;
  /** Taken once the failing model's task ended: the run's tasks, and how many failed. */
  private tasksAtEnd: SimTask[] = [];
  private tasksFailed = 0;

  async sendTriggers(): Promise<void> {
    const { platform, schedule } = this;
    if (schedule) await platform.scheduler.fire(schedule.logicalName);
    else this.failures.push(`no schedule for ${SCHEDULED_MODEL} in the program`);
    await sendAll(platform, this.queue, this.bodies);
    this.ctx.note(`retraining: fired ${schedule?.logicalName ?? "no schedule"}, sent ${this.n} manual triggers and 1 malformed; cap ${this.cap}`);
    // One training run fails (its container exits non-zero): the launcher's job ends at the
    // launch, so a failure is the task's outcome, shown here, not a message to retry.
    const failingModel = this.failingModel;
    platform.failTask = (t) => t.tags.model_name === failingModel;
  }

  async waitForEveryLaunch(): Promise<void> {
    const ok = await waitFor(() => this.launchedModels().size >= this.expected.size, { timeoutMs: 240_000, tick: this.tick });
    if (!ok) this.failures.push(`only ${this.launchedModels().size} of ${this.expected.size} triggers launched a task`);
    await waitForEmpty(this.platform, [this.queue], { timeoutMs: 30_000, tick: this.tick });
  }

  /** Each model launched once, never more than the cap at once. */
  checkLaunches(): void {
    this.launched = this.launchedModels();
    const twice = [...this.launched].filter(([, count]) => count > 1).map(([m]) => m);
    if (twice.length > 0) this.failures.push(`models launched more than once: ${twice.join(", ")}`);
    if (this.peak > this.cap) this.failures.push(`${this.peak} tasks ran at once, over the cap of ${this.cap}`);
    this.deferred = readSteps(this.platform, "retraining-launcher", "capacity_deferred").length;
  }

  /** Wait for the failing model's task to end, to show the runtime failing it. */
  async checkFailingTask(): Promise<void> {
    const { platform, failingModel } = this;
    await waitFor(() => platform.ecsTasks.tasks().some((t) => t.tags.model_name === failingModel && t.outcome !== "running"), {
      timeoutMs: 60_000,
      tick: this.tick,
    });
    this.tasksAtEnd = this.ours();
    const failedTasks = this.tasksAtEnd.filter((t) => t.outcome === "failed").map((t) => t.tags.model_name);
    this.tasksFailed = failedTasks.length;
    if (failedTasks.length !== 1 || failedTasks[0] !== failingModel)
      this.failures.push(`expected only ${failingModel}'s task to fail, got ${failedTasks.join(", ") || "none"}`);
    platform.failTask = () => false;
  }

  async report(): Promise<ScenarioSummary> {
    const { platform, started, quarantine, dlq, cap, deferred } = this;
    if (this.expected.size > cap && deferred === 0) this.failures.push("nothing was deferred although the triggers exceeded the cap");
    const quarantined = distinctQuarantined((await peekAll(platform, quarantine)).filter((m) => (m.Body ?? "").includes('"model_name":""'))).length;
    if (quarantined !== 1) this.failures.push(`expected the malformed trigger in quarantine, found ${quarantined}`);
    const [left, inDlq] = await Promise.all([platform.depth(this.queue), platform.depth(dlq)]);
    const ours = this.tasksAtEnd;
    return this.summarise({
      sent: this.bodies.length + (this.schedule ? 1 : 0),
      processed: this.launched.size,
      quarantined,
      inDlq: quarantine === dlq ? inDlq.visible + inDlq.inFlight - quarantined : inDlq.visible + inDlq.inFlight,
      remaining: total(left),
      ...keyTimings(platform.clock.speed, { "first task launched": [started, this.firstLaunch], "all triggers launched": [started, this.allLaunched] }),
      details: {
        cap,
        peakRunning: this.peak,
        deferrals: deferred,
        tasksSucceeded: ours.filter((t) => t.outcome === "succeeded").length,
        tasksFailed: this.tasksFailed,
        tasksStillRunning: ours.filter((t) => t.outcome === "running").length,
      },
    });
  }

  /** The run's ECS tasks (those of the models it expects). */
  private ours(): SimTask[] {
    return this.platform.ecsTasks.tasks().filter((t) => t.tags.model_name !== undefined && this.expected.has(t.tags.model_name));
  }

  private launchedModels(): Map<string, number> {
    const seen = new Map<string, number>();
    for (const t of this.platform.ecsTasks.tasks()) {
      const model = t.tags.model_name;
      if (model === undefined || !this.expected.has(model)) continue;
      seen.set(model, (seen.get(model) ?? 0) + 1);
    }
    return seen;
  }

  private readonly tick = async (): Promise<void> => {
    const { platform } = this;
    const running = this.ours().filter((t) => t.outcome === "running").length;
    this.peak = Math.max(this.peak, running);
    const launched = this.launchedModels().size;
    if (this.firstLaunch === null && launched > 0) this.firstLaunch = Date.now();
    if (this.allLaunched === null && launched >= this.expected.size) this.allLaunched = Date.now();
    const queues = { retraining: this.queue, "retraining-dlq": this.dlq };
    const deferred = readSteps(platform, "retraining-launcher", "capacity_deferred").length;
    await this.show(queues, { done: launched, total: this.expected.size }, { "tasks running": running, "tasks launched": launched, deferred }, [
      `cap ${this.cap} concurrent tasks; each task runs ${(platform.options.taskSimMs / 1000).toFixed(0)} simulated seconds`,
      // RunTask's tasks, as the runtime sees them in moto.
      ...this.ours()
        .slice(-6)
        .map((t) => `task ${t.taskArn.split("/").at(-1)?.slice(0, 8)} ${t.tags.model_name} (${t.tags.trigger}): ${t.outcome}`),
    ]);
  };
}
