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
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { SQSEvent } from "aws-lambda";
import { runOps } from "../../ops/cli";
import { SqsEventSource } from "../hosts/event-source";
import { startOpsEndpoint } from "../ops-endpoint";
import type { LocalPlatform } from "../platform";
import type { LocalQueue } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { gauges, keyTimings, type Scenario, type ScenarioContext, sendAll, summary, type TimingSpan, waitFor } from "./scenario";

const QUEUE = "fleet-termination";
const DLQ = `${QUEUE}-dlq`;
const ALARM = `${DLQ}-depth`;

export const dlqRedrive: Scenario = {
  name: "dlq-redrive",
  title: "a bad deploy fills a DLQ and fires its alarm; after the fix, ops dlq redrive brings every message back (0 lost, alarm OK)",
  requires: [QUEUE],
  optIn: true,
  run: (ctx) => new DlqRedriveRun(ctx).run(),
};

/** `+hh:mm:ss`, as the alarm block prints an alarm's times (ms since the run's simulated start). */
function sinceStart(ms: number): string {
  const s = Math.round(ms / 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `+${two(Math.floor(s / 3600))}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
}

class DlqRedriveRun {
  private readonly platform: LocalPlatform;
  private readonly n: number;
  private readonly started = Date.now();
  private readonly jobsTable: string;
  private readonly jobIds: string[];
  private readonly queue: LocalQueue;
  private readonly dlq: LocalQueue;
  private readonly failures: string[] = [];

  constructor(private readonly ctx: ScenarioContext) {
    this.platform = ctx.platform;
    this.n = ctx.size === "small" ? 6 : 20;
    const jobs = this.platform.topology.tables.find((t) => t.logicalName === "fleet-jobs");
    if (!jobs) throw new Error("the program declares no fleet-jobs table");
    this.jobsTable = jobs.name;
    this.jobIds = Array.from({ length: this.n }, (_, i) => `redrive-${ctx.runId}-${i}`);
    this.queue = this.platform.queue(QUEUE);
    this.dlq = this.platform.queue(DLQ);
  }

  async run(): Promise<ScenarioSummary> {
    const { real, broken } = await this.breakConsumer();
    await this.sendTerminations();
    const sentAt = Date.now();
    const filledAt = await this.until(async () => (await this.platform.depth(this.dlq)).visible >= this.n, 240_000, `${DLQ} never held all ${this.n} messages`);
    const firedAt = await this.until(() => this.firing() !== undefined, 60_000, `${ALARM} never fired`);
    if (firedAt !== null) this.ctx.note(`dlq-redrive: ${ALARM} fired (ALARM published to the alert topic)`);

    // The fix: the real function polls again, then the operator redrives.
    await broken.stop();
    real.start();
    this.phase = "fixed";
    const redrive = await this.redrive();
    this.phase = "fixed, redriven";

    const doneAt = await this.until(async () => (await this.completed()) === this.n, 120_000);
    const clearedAt = await this.until(() => this.firing()?.okAtMs !== undefined, 90_000, `${ALARM} did not go back to OK`);
    if (clearedAt !== null) this.ctx.note(`dlq-redrive: ${ALARM} back to OK`);
    return this.summarise(redrive.output, {
      "sent → DLQ filled": [sentAt, filledAt],
      "DLQ filled → alarm": [filledAt, firedAt],
      redrive: [redrive.startMs, redrive.endMs],
      "redrive → every job completed": [redrive.startMs, doneAt],
      "redrive → alarm OK": [redrive.startMs, clearedAt],
    });
  }

  /** Waits for `done`, the live view fed; when it held (null on timeout, a failure when `failure` names one). */
  private async until(done: () => Promise<boolean> | boolean, timeoutMs: number, failure?: string): Promise<number | null> {
    const held = await waitFor(done, { timeoutMs, tick: () => this.show([`consumer: ${this.phase}`]) });
    if (!held && failure !== undefined) this.failures.push(failure);
    return held ? Date.now() : null;
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

  private async sendTerminations(): Promise<void> {
    this.ctx.note(`dlq-redrive: ${QUEUE}'s consumer is broken (a bad deploy, simulated); sending ${this.n} job terminations`);
    await this.seedJobs();
    await sendAll(
      this.platform,
      this.queue,
      this.jobIds.map((id) => this.message(id)),
    );
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

  private async summarise(redrive: string, intervals: Record<string, TimingSpan>): Promise<ScenarioSummary> {
    const processed = await this.completed();
    const [left, parked] = await Promise.all([this.platform.depth(this.queue), this.platform.depth(this.dlq)]);
    if (processed < this.n) this.failures.push(`${this.n - processed} of ${this.n} jobs not completed`);
    const { timings, marks } = keyTimings(this.platform.clock.speed, intervals);
    const firing = this.firing();
    return summary({
      scenario: "dlq-redrive",
      wallMs: Date.now() - this.started,
      sent: this.n,
      processed,
      quarantined: 0,
      inDlq: parked.visible + parked.inFlight,
      remaining: left.visible + left.inFlight + left.delayed,
      timings,
      marks,
      details: {
        "alarm fired (simulated, from the run's start)": firing ? sinceStart(firing.atMs) : null,
        "alarm back to OK": firing?.okAtMs !== undefined ? sinceStart(firing.okAtMs) : null,
        redrive: redrive.trim(),
      },
      failures: this.failures,
    });
  }

  private phase = "running";

  private firing() {
    const outcome = this.platform.alarms.report().alarms.find((a) => a.logicalName === ALARM);
    return outcome?.firings.at(-1);
  }

  private async show(status: string[]): Promise<void> {
    const done = await this.completed();
    this.ctx.view({
      scenario: "dlq-redrive",
      elapsedMs: Date.now() - this.started,
      progress: { done, total: this.n },
      queues: await gauges(this.platform, [
        [QUEUE, this.queue],
        [DLQ, this.dlq],
      ]),
      counters: { "jobs completed": done },
      status,
    });
  }

  /** Jobs 0..n-1, running on an instance that no longer exists (its runner parameter is gone too). */
  private async seedJobs(): Promise<void> {
    const now = new Date(this.platform.clock.now()).toISOString();
    for (const id of this.jobIds) {
      await this.platform.aws.dynamodb.send(
        new PutItemCommand({
          TableName: this.jobsTable,
          Item: { job_id: { S: id }, status: { S: "running" }, instance_id: { S: "i-0dead0ffe0000001" }, started_at: { S: now } },
        }),
      );
    }
  }

  private message(jobId: string): string {
    const now = new Date(this.platform.clock.now()).toISOString();
    return JSON.stringify({
      instance_id: "i-0dead0ffe0000001",
      job_id: jobId,
      status: "success",
      exit_code: 0,
      duration_seconds: 60,
      started_at: now,
      completed_at: now,
    });
  }

  private async completed(): Promise<number> {
    let n = 0;
    for (const id of this.jobIds) {
      const item = await this.platform.aws.dynamodb.send(new GetItemCommand({ TableName: this.jobsTable, Key: { job_id: { S: id } }, ConsistentRead: true }));
      if (item.Item?.status?.S === "completed") n += 1;
    }
    return n;
  }
}
