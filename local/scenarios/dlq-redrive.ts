/**
 * dlq-redrive (docs/operations.md, "Redrive: when, and when not"): a bad deploy of the termination
 * consumer (simulated: its event source invokes a stand-in that fails every record) lets job
 * terminations fail their three receives and fill fleet-termination-dlq, whose alarm fires; the
 * consumer is fixed (the real function polls again), then the operator redrives with
 * `ops dlq redrive fleet-termination-dlq`, through the operator endpoint and its policy. Every job
 * must end completed (0 lost), the DLQ empty, and the alarm back to OK.
 *
 * A redriven message is a new message (SQS's move task sends a copy), so "processed" is judged by
 * the effect, not the message id: each job's row in the jobs table is completed.
 */
import type { SQSEvent } from "aws-lambda";
import { runOps } from "../../ops/cli";
import { SqsEventSource } from "../hosts/event-source";
import { startOpsEndpoint } from "../ops-endpoint";
import type { ScenarioSummary } from "../show/view";
import { jobStatus, jobsTableOf, seedRunningJob, terminationMessage } from "./fleet";
import { keyTimings, type Scenario, ScenarioRun, sendAll, type TimingSpan, total } from "./scenario";

const QUEUE = "fleet-termination";
const DLQ = `${QUEUE}-dlq`;
const ALARM = `${DLQ}-depth`;
const GONE_INSTANCE = "i-0dead0ffe0000001";

export const dlqRedrive: Scenario = {
  name: "dlq-redrive",
  title: "a bad deploy fills a DLQ and fires its alarm; after the fix, ops dlq redrive brings every message back (0 lost, alarm OK)",
  requires: [QUEUE],
  optIn: true,
  run: (ctx) => new DlqRedriveRun(ctx, "dlq-redrive").run(),
};

/** `+hh:mm:ss`, as the alarm block prints an alarm's times (ms since the run's simulated start). */
function sinceStart(ms: number): string {
  const s = Math.round(ms / 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `+${two(Math.floor(s / 3600))}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
}

class DlqRedriveRun extends ScenarioRun {
  private readonly n = this.ctx.size === "small" ? 6 : 20;
  private readonly jobsTable = jobsTableOf(this.platform);
  private readonly jobIds = Array.from({ length: this.n }, (_, i) => `redrive-${this.ctx.runId}-${i}`);
  private readonly queue = this.platform.queue(QUEUE);
  private readonly dlq = this.platform.queue(DLQ);
  private phase = "running";

  async run(): Promise<ScenarioSummary> {
    const { real, broken } = await this.breakConsumer();
    await this.sendTerminations();
    const sentAt = Date.now();
    const filledAt = await this.wait(async () => (await this.platform.depth(this.dlq)).visible >= this.n, 240_000, `${DLQ} never held all ${this.n} messages`);
    const firedAt = await this.wait(() => this.firing() !== undefined, 60_000, `${ALARM} never fired`);
    if (firedAt !== null) this.ctx.note(`dlq-redrive: ${ALARM} fired (ALARM published to the alert topic)`);

    // The fix: the real function polls again, then the operator redrives.
    await broken.stop();
    real.start();
    this.phase = "fixed";
    const redrive = await this.redrive();
    this.phase = "fixed, redriven";

    const doneAt = await this.wait(async () => (await this.completed()) === this.n, 120_000);
    const clearedAt = await this.wait(() => this.firing()?.okAtMs !== undefined, 90_000, `${ALARM} did not go back to OK`);
    if (clearedAt !== null) this.ctx.note(`dlq-redrive: ${ALARM} back to OK`);
    return this.report(redrive.output, {
      "sent → DLQ filled": [sentAt, filledAt],
      "DLQ filled → alarm": [filledAt, firedAt],
      redrive: [redrive.startMs, redrive.endMs],
      "redrive → every job completed": [redrive.startMs, doneAt],
      "redrive → alarm OK": [redrive.startMs, clearedAt],
    });
  }

  /** Waits for `done`, the live view fed; when it held (null on timeout, a failure when `failure` names one). */
  private wait(done: () => Promise<boolean> | boolean, timeoutMs: number, failure?: string): Promise<number | null> {
    return this.until(done, { timeoutMs, tick: () => this.progress(), failure });
  }

  /** A bad deploy: the mapping now invokes code that fails every record (reported as batch item failures). */
  private async breakConsumer(): Promise<{ real: SqsEventSource; broken: SqsEventSource }> {
    const { platform } = this;
    const mapping = platform.topology.mappings.find((m) => m.queueArn === this.queue.arn);
    const real = mapping ? platform.sources.get(mapping.logicalName) : undefined;
    if (!mapping || !real) throw new Error(`no event source mapping reads ${QUEUE}`);
    await real.stop();
    const broken = new SqsEventSource(
      mapping,
      async (event: SQSEvent) => ({
        kind: "ok" as const,
        response: { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) },
        durationMs: 1,
      }),
      { sqs: platform.aws.sqs, pollWaitSeconds: 1 },
    );
    broken.start();
    this.phase = "broken (bad deploy)";
    return { real, broken };
  }

  /** Jobs 0..n-1 end, on an instance that no longer exists (its runner parameter is gone too). */
  private async sendTerminations(): Promise<void> {
    this.ctx.note(`dlq-redrive: ${QUEUE}'s consumer is broken (a bad deploy, simulated); sending ${this.n} job terminations`);
    const now = new Date(this.platform.clock.now()).toISOString();
    for (const id of this.jobIds) await seedRunningJob(this.platform, this.jobsTable, id, GONE_INSTANCE, now);
    const job = { instanceId: GONE_INSTANCE, durationSeconds: 60, startedAt: now, completedAt: now };
    const messages = this.jobIds.map((jobId) => terminationMessage({ ...job, jobId }));
    await sendAll(this.platform, this.queue, messages);
  }

  /** `ops dlq redrive <dlq> --yes`, through the operator endpoint: what it printed, and when it ran. */
  private async redrive(): Promise<{ output: string; startMs: number; endMs: number }> {
    const { platform } = this;
    const ops = await startOpsEndpoint(platform, platform.options.workDir);
    let output = "";
    const startMs = Date.now();
    try {
      const err: string[] = [];
      const redriveCode = await runOps(
        ["dlq", "redrive", DLQ, "--stack", platform.topology.stack, "--outputs", ops.outputsFile, "--endpoint", ops.endpoint, "--yes"],
        { out: (t) => (output += t), err: (t) => err.push(t), tty: false, ask: async () => "" },
      );
      this.ctx.note(`dlq-redrive: ops dlq redrive ${DLQ} --yes → ${output.trim() || err.join("").trim()}`);
      if (redriveCode !== 0) this.failures.push(`ops dlq redrive exited ${redriveCode}: ${err.join("").trim()}`);
    } finally {
      await ops.stop();
    }
    return { output, startMs, endMs: Date.now() };
  }

  private async report(redrive: string, intervals: Record<string, TimingSpan>): Promise<ScenarioSummary> {
    const processed = await this.completed();
    const [left, parked] = await Promise.all([this.platform.depth(this.queue), this.platform.depth(this.dlq)]);
    if (processed < this.n) this.failures.push(`${this.n - processed} of ${this.n} jobs not completed`);
    const { timings, marks } = keyTimings(this.platform.clock.speed, intervals);
    const firing = this.firing();
    return this.summarise({
      sent: this.n,
      processed,
      quarantined: 0,
      inDlq: parked.visible + parked.inFlight,
      remaining: total(left),
      timings,
      marks,
      details: {
        "alarm fired (simulated, from the run's start)": firing ? sinceStart(firing.atMs) : null,
        "alarm back to OK": firing?.okAtMs !== undefined ? sinceStart(firing.okAtMs) : null,
        redrive: redrive.trim(),
      },
    });
  }

  private firing() {
    const outcome = this.platform.alarms.report().alarms.find((a) => a.logicalName === ALARM);
    return outcome?.firings.at(-1);
  }

  private async progress(): Promise<void> {
    const done = await this.completed();
    await this.show({ [QUEUE]: this.queue, [DLQ]: this.dlq }, { done, total: this.n }, { "jobs completed": done }, [`consumer: ${this.phase}`]);
  }

  private async completed(): Promise<number> {
    let n = 0;
    for (const id of this.jobIds) if ((await jobStatus(this.platform, this.jobsTable, id)) === "completed") n += 1;
    return n;
  }
}
