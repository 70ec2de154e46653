/**
 * fleet (docs/parts/fleet.md): jobs complete through termination messages, duplicates included; scheduled
 * and operator-sent housekeeping terminates orphaned instances (never one with an active job)
 * and deletes the runner parameters of instances that are gone.
 */
import { DescribeInstancesCommand, RunInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { GetParameterCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import { ENVIRONMENT_TAG } from "../../policy/contract";
import type { LocalPlatform } from "../platform";
import type { ScenarioSummary } from "../show/view";
import { type LogLine, readSteps } from "./logs";
import { distinctQuarantined, instanceState, keyTimings, peekAll, type Scenario, type ScenarioContext, ScenarioRun, sendAll, waitFor } from "./scenario";

const SIZES = { small: 6, default: 30 } as const;
/** The operator's one-off sweep: orphaned after 1 minute (+ the task's 10-minute grace). */
const OPERATOR_MAX_RUNTIME_MINUTES = 1;
const ORPHAN_AGE_SIM_MS = (OPERATOR_MAX_RUNTIME_MINUTES + 10) * 60_000 + 30_000;

interface Fleet {
  busy: string;
  drained: string;
  orphan: string;
  gone: string;
  launchedAtMs: number;
}

let prepared: Promise<Fleet> | undefined;

async function imageId(platform: LocalPlatform): Promise<string> {
  const gpu = platform.topology.instances[0];
  if (!gpu) throw new Error("no instance in the program to borrow an AMI from");
  const out = await platform.aws.ec2.send(new DescribeInstancesCommand({ InstanceIds: [gpu.id] }));
  const ami = out.Reservations?.[0]?.Instances?.[0]?.ImageId;
  if (!ami) throw new Error("could not read an AMI id from moto");
  return ami;
}

/**
 * The names the deployed fleet functions key on (stack config `encache:fleet.names`), read from the
 * housekeeping function's environment as the program set it, so the scenario follows the stack.
 */
function fleetNames(platform: LocalPlatform) {
  const fn = platform.topology.functions.find((f) => f.logicalName === "fleet-housekeeping-consumer");
  const env = fn?.environment ?? {};
  const need = (key: string): string => {
    const value = env[key];
    if (!value) throw new Error(`fleet-housekeeping-consumer has no ${key} in its environment`);
    return value;
  };
  return {
    managed: { Key: need("RUNS_FLEET_MANAGED_TAG_KEY"), Value: need("RUNS_FLEET_MANAGED_TAG_VALUE") },
    // The sweep looks only at the stack's own fleet: managed, and tagged with the stack's environment.
    environment: { Key: ENVIRONMENT_TAG, Value: need("RUNS_FLEET_ENVIRONMENT") },
    poolTagKey: need("RUNS_FLEET_POOL_TAG_KEY"),
    runnerPath: need("RUNS_FLEET_RUNNER_PARAMETER_PATH"),
  };
}

async function launch(platform: LocalPlatform, ami: string, name: string): Promise<string> {
  const { managed, environment, poolTagKey } = fleetNames(platform);
  const out = await platform.aws.ec2.send(
    new RunInstancesCommand({
      ImageId: ami,
      InstanceType: "c7g.large",
      MinCount: 1,
      MaxCount: 1,
      TagSpecifications: [{ ResourceType: "instance", Tags: [managed, environment, { Key: poolTagKey, Value: "default" }, { Key: "Name", Value: name }] }],
    }),
  );
  const id = out.Instances?.[0]?.InstanceId;
  if (!id) throw new Error(`RunInstances returned no instance for ${name}`);
  return id;
}

async function parameterExists(platform: LocalPlatform, name: string): Promise<boolean> {
  try {
    await platform.aws.ssm.send(new GetParameterCommand({ Name: name }));
    return true;
  } catch (err) {
    if ((err as Error).name === "ParameterNotFound") return false;
    throw err;
  }
}

/** A runner's config parameter under the stack's runner path (the termination handler's runnerConfigParameter). */
const parameterOf = (platform: LocalPlatform, id: string) => `${fleetNames(platform).runnerPath}/${id}/config`;

/** The fleet's jobs table, as the program declares it. */
export function jobsTableOf(platform: LocalPlatform): string {
  const jobs = platform.topology.tables.find((t) => t.logicalName === "fleet-jobs");
  if (!jobs) throw new Error("the program declares no fleet-jobs table");
  return jobs.name;
}

/** A job running on an instance since `startedAt`, as the jobs table records it. */
export async function seedRunningJob(platform: LocalPlatform, table: string, jobId: string, instanceId: string, startedAt: string): Promise<void> {
  const Item = { job_id: { S: jobId }, status: { S: "running" }, instance_id: { S: instanceId }, started_at: { S: startedAt } };
  await platform.aws.dynamodb.send(new PutItemCommand({ TableName: table, Item }));
}

/** A job's status in the jobs table (read consistently). */
export async function jobStatus(platform: LocalPlatform, table: string, jobId: string): Promise<string | undefined> {
  const item = await platform.aws.dynamodb.send(new GetItemCommand({ TableName: table, Key: { job_id: { S: jobId } }, ConsistentRead: true }));
  return item.Item?.status?.S;
}

/** A runner's termination message for one job: a success, or a failure with exit status 2. */
export function terminationMessage(
  job: { instanceId: string; jobId: string; durationSeconds: number; startedAt: string; completedAt: string },
  failed = false,
) {
  return JSON.stringify({
    instance_id: job.instanceId,
    job_id: job.jobId,
    status: failed ? "failure" : "success",
    exit_code: failed ? 2 : 0,
    duration_seconds: job.durationSeconds,
    started_at: job.startedAt,
    completed_at: job.completedAt,
    ...(failed ? { error: "exit status 2" } : {}),
  });
}

/**
 * What the termination consumer's `termination_processed` lines say about the scenario's messages.
 * A duplicate is a message, not a line: on a loaded machine SQS delivers a message again after
 * its first delivery reported (the delete raced the visibility timeout), and that delivery logs
 * `duplicate: true` under the message's own id. So a message counts as a recognised duplicate
 * when every delivery of it found the completion already reported; and a job whose completion two
 * deliveries reported (two lines with `duplicate: false`) is the exactly-once breach to fail on.
 */
export function judgeTerminations(lines: readonly LogLine[], sentIds: ReadonlySet<string>): { duplicateMessages: number; reportedTwice: string[] } {
  const reportedBy = new Map<string, number>();
  const reported = new Set<string>();
  const seenDuplicate = new Set<string>();
  for (const line of lines) {
    const messageId = String(line.message_id);
    if (!sentIds.has(messageId)) continue;
    if (line.duplicate === true) seenDuplicate.add(messageId);
    else {
      reported.add(messageId);
      const job = String(line.job_id);
      reportedBy.set(job, (reportedBy.get(job) ?? 0) + 1);
    }
  }
  return {
    duplicateMessages: [...seenDuplicate].filter((id) => !reported.has(id)).length,
    reportedTwice: [...reportedBy].filter(([, n]) => n > 1).map(([job]) => job),
  };
}

export const fleet: Scenario = {
  name: "fleet",
  title: "jobs complete by termination messages; housekeeping removes an orphan and stale parameters",
  requires: ["fleet-termination", "fleet-housekeeping"],

  /** Instances launched at the start of the run, so they have aged by the time this scenario runs. */
  prepare(ctx) {
    prepared ??= (async () => {
      const { platform } = ctx;
      const ami = await imageId(platform);
      const [busy, drained, orphan, gone] = await Promise.all(["busy", "drained", "orphan", "gone"].map((n) => launch(platform, ami, `fleet-local-${n}`)));
      await platform.aws.ec2.send(new TerminateInstancesCommand({ InstanceIds: [gone!] }));
      for (const id of [busy!, gone!]) {
        await platform.aws.ssm.send(
          new PutParameterCommand({ Name: parameterOf(platform, id), Value: JSON.stringify({ pool: "default" }), Type: "String", Overwrite: true }),
        );
      }
      return { busy: busy!, drained: drained!, orphan: orphan!, gone: gone!, launchedAtMs: Date.now() };
    })();
    return prepared.then(() => undefined);
  },

  async run(ctx: ScenarioContext) {
    await this.prepare?.(ctx);
    const run = new FleetRun(ctx, this.name, await (prepared as Promise<Fleet>));
    await run.seedRunningJobs();
    await run.sendTerminations();
    await run.waitForTerminationsAndHousekeeping();
    await run.checkJobStatuses();
    await run.checkDuplicatesAndInstances();
    return run.report();
  },
};

/** One play of the scenario: its queues, the messages it sent, when each expectation was met and the failures found. */
class FleetRun extends ScenarioRun {
  private readonly jobsTable = jobsTableOf(this.platform);
  private readonly termination = this.platform.queue("fleet-termination");
  private readonly terminationDlq = this.platform.queue("fleet-termination-dlq");
  private readonly housekeeping = this.platform.queue("fleet-housekeeping");
  private readonly housekeepingDlq = this.platform.queue("fleet-housekeeping-dlq");
  private readonly n = SIZES[this.ctx.size];
  private readonly duplicates = Math.max(1, Math.floor(this.n / 3));
  /** When the jobs started (simulated), as written to the jobs table and the messages. */
  private now = "";
  private bodies: string[] = [];
  private sentIds = new Set<string>();
  private terminationDone: number | null = null;
  private orphanSent: number | null = null;
  private orphanGone: number | null = null;
  private staleGone: number | null = null;
  private housekeepingId = "";
  private staleFired = false;
  private dupes = 0;

  constructor(
    ctx: ScenarioContext,
    name: string,
    private readonly f: Fleet,
  ) {
    super(ctx, name);
  }

  /** Jobs 0..n-1 ran on `drained` and end now; job n stays running on `busy` and keeps it busy. */
  async seedRunningJobs(): Promise<void> {
    this.now = new Date(this.platform.clock.now()).toISOString();
    for (let i = 0; i <= this.n; i++) await seedRunningJob(this.platform, this.jobsTable, this.jobId(i), this.onInstance(i), this.now);
  }

  async sendTerminations(): Promise<void> {
    const { n, duplicates } = this;
    this.bodies = [
      ...Array.from({ length: n }, (_, i) => this.message(i)),
      ...Array.from({ length: duplicates }, (_, i) => this.message(i)),
      JSON.stringify({ job_id: "no-instance" }),
    ];
    this.sentIds = new Set(await sendAll(this.platform, this.termination, this.bodies));
    this.ctx.note(`fleet: ${n} termination messages, ${duplicates} duplicates and 1 malformed sent`);
  }

  async waitForTerminationsAndHousekeeping(): Promise<void> {
    const ok = await waitFor(() => this.terminationDone !== null && this.orphanGone !== null && this.staleGone !== null, {
      timeoutMs: 180_000,
      tick: this.tick,
    });
    if (!ok)
      this.failures.push(
        `timed out: terminations ${this.processedIds().size}/${this.n + this.duplicates}, orphan ${this.orphanGone ? "gone" : "running"}, stale parameter ${this.staleGone ? "gone" : "present"}`,
      );
    // The operator's message is acknowledged once its task completed.
    await waitFor(
      () => readSteps(this.platform, "fleet-housekeeping-consumer", "housekeeping_task_completed").some((l) => l.message_id === this.housekeepingId),
      { timeoutMs: 30_000, tick: this.tick },
    );
  }

  /** Expectations beyond the counts: every ended job has its final status. */
  async checkJobStatuses(): Promise<void> {
    for (let i = 0; i < this.n; i++) {
      const status = await jobStatus(this.platform, this.jobsTable, this.jobId(i));
      const want = i === 1 ? "failed" : "completed";
      if (status !== want) this.failures.push(`${this.jobId(i)} is ${status}, expected ${want}`);
    }
  }

  async checkDuplicatesAndInstances(): Promise<void> {
    const { platform, f, failures } = this;
    const judged = judgeTerminations(readSteps(platform, "fleet-termination-consumer", "termination_processed"), this.sentIds);
    this.dupes = judged.duplicateMessages;
    if (this.dupes !== this.duplicates) failures.push(`${this.dupes} messages were recognised as duplicates, expected ${this.duplicates}`);
    for (const job of judged.reportedTwice) failures.push(`${job}'s completion was reported by more than one delivery`);
    const busyState = await instanceState(platform, f.busy);
    if (busyState !== "running") failures.push(`the instance with an active job is ${busyState}: housekeeping must never terminate it`);
    const drainedState = await instanceState(platform, f.drained);
    if (drainedState !== "terminated") failures.push(`the instance whose jobs all completed is ${drainedState}, expected terminated as an orphan`);
    if (!(await parameterExists(platform, parameterOf(platform, f.busy))))
      failures.push("the busy instance's runner parameter was deleted: stale_ssm must keep a live instance's");
  }

  async report(): Promise<ScenarioSummary> {
    const { platform, started, housekeepingId } = this;
    const dlqMessages = (await peekAll(platform, this.terminationDlq)).filter(
      (m) => this.sentIds.has(m.MessageId ?? "") || (m.Body ?? "").includes("no-instance"),
    );
    const quarantined = distinctQuarantined(dlqMessages).length;
    const dlqOther = dlqMessages.filter((m) => m.MessageAttributes?.["quarantine-reason"] === undefined).length;
    const hkDlq = (await peekAll(platform, this.housekeepingDlq)).filter((m) => m.MessageId === housekeepingId).length;
    const [left, hkLeft] = await Promise.all([platform.depth(this.termination), platform.depth(this.housekeeping)]);
    const housekeepingDone = readSteps(platform, "fleet-housekeeping-consumer", "housekeeping_task_completed");
    const operatorDone = housekeepingDone.some((l) => l.message_id === housekeepingId) ? 1 : 0;
    return this.summarise({
      sent: this.bodies.length + (housekeepingId ? 1 : 0),
      processed: this.processedIds().size + operatorDone,
      quarantined,
      inDlq: dlqOther + hkDlq,
      remaining: left.visible + left.inFlight + left.delayed + (operatorDone ? 0 : hkLeft.visible + hkLeft.inFlight),
      ...keyTimings(platform.clock.speed, {
        "terminations processed": [started, this.terminationDone],
        "operator sweep → orphans terminated": [this.orphanSent, this.orphanGone],
        "stale parameter deleted": [started, this.staleGone],
      }),
      details: {
        duplicatesRecognised: this.dupes,
        housekeepingRuns: housekeepingDone.length,
        scheduledFires: Object.fromEntries(
          Object.entries(platform.scheduler.stats())
            .filter(([k]) => k.startsWith("fleet-"))
            .map(([k, v]) => [k, v.fired]),
        ),
      },
    });
  }

  private jobId(i: number): string {
    return `job-${this.ctx.runId}-${i}`;
  }

  private onInstance(i: number): string {
    return i === this.n ? this.f.busy : this.f.drained;
  }

  /** Job 1 fails (exit status 2); the others succeed. */
  private message(i: number): string {
    const completedAt = new Date(this.platform.clock.now()).toISOString();
    const job = { instanceId: this.onInstance(i), jobId: this.jobId(i), durationSeconds: 60 + i, startedAt: this.now, completedAt };
    return terminationMessage(job, i === 1);
  }

  private processedIds(): Set<string> {
    return new Set(
      readSteps(this.platform, "fleet-termination-consumer", "termination_processed")
        .map((l) => String(l.message_id))
        .filter((id) => this.sentIds.has(id)),
    );
  }

  private readonly tick = async (): Promise<void> => {
    const done = this.processedIds().size;
    if (this.terminationDone === null && done >= this.n + this.duplicates) this.terminationDone = Date.now();
    const simAge = this.platform.clock.now() - this.f.launchedAtMs;
    await this.sendOperatorSweep(simAge);
    await this.fireStaleSchedule(simAge);
    await this.noteWhatIsGone();
    await this.showProgress(done, simAge);
  };

  /** The operator's sweep goes out once the instances are old enough for it, and after the terminations, so the instance whose jobs all ended is an orphan too. */
  private async sendOperatorSweep(simAge: number): Promise<void> {
    if (this.orphanSent !== null || this.terminationDone === null || simAge < ORPHAN_AGE_SIM_MS) return;
    const [id] = await sendAll(this.platform, this.housekeeping, [
      JSON.stringify({
        task_type: "orphaned_instances",
        timestamp: new Date(this.platform.clock.now()).toISOString(),
        params: { max_runtime_minutes: OPERATOR_MAX_RUNTIME_MINUTES },
      }),
    ]);
    this.housekeepingId = id ?? "";
    this.orphanSent = Date.now();
    this.ctx.note(
      `fleet: operator sweep sent (orphaned after ${OPERATOR_MAX_RUNTIME_MINUTES} min); instances are ${(simAge / 60_000).toFixed(0)} simulated minutes old`,
    );
  }

  /** stale_ssm runs from its own schedule, fired now instead of waiting 6 simulated hours. */
  private async fireStaleSchedule(simAge: number): Promise<void> {
    if (this.staleFired || simAge < 16 * 60_000) return;
    this.staleFired = true;
    await this.platform.scheduler.fire("fleet-stale-ssm");
    this.ctx.note("fleet: schedule fleet-stale-ssm fired");
  }

  private async noteWhatIsGone(): Promise<void> {
    const { platform, f } = this;
    if (
      this.orphanGone === null &&
      this.orphanSent !== null &&
      (await instanceState(platform, f.orphan)) === "terminated" &&
      (await instanceState(platform, f.drained)) === "terminated"
    )
      this.orphanGone = Date.now();
    if (this.staleGone === null && this.staleFired && !(await parameterExists(platform, parameterOf(platform, f.gone)))) this.staleGone = Date.now();
  }

  private async showProgress(done: number, simAge: number): Promise<void> {
    const { n, duplicates, f } = this;
    const queues = {
      termination: this.termination,
      "termination-dlq": this.terminationDlq,
      housekeeping: this.housekeeping,
      "housekeeping-dlq": this.housekeepingDlq,
    };
    const progress = { done: Math.min(done, n + duplicates) + (this.orphanGone ? 1 : 0) + (this.staleGone ? 1 : 0), total: n + duplicates + 2 };
    await this.show(queues, progress, { "terminations processed": done, "simulated instance age (min)": Math.floor(simAge / 60_000) }, [
      `orphans ${f.orphan}, ${f.drained}: ${this.orphanGone ? "terminated" : "running"}`,
      `stale parameter ${parameterOf(this.platform, f.gone)}: ${this.staleGone ? "deleted" : "present"}`,
    ]);
  }
}
