/**
 * fleet (docs/parts/fleet.md): jobs complete through termination messages, duplicates included; scheduled
 * and operator-sent housekeeping terminates orphaned instances (never one with an active job)
 * and deletes the runner parameters of instances that are gone.
 */
import { DescribeInstancesCommand, type EC2Client, RunInstancesCommand, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { GetParameterCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import type { LocalPlatform } from "../platform";
import { readSteps } from "./logs";
import { distinctQuarantined, gauges, peekAll, type Scenario, type ScenarioContext, sendAll, since, summary, waitFor } from "./scenario";

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
function fleetNames(platform: LocalPlatform): { managed: { Key: string; Value: string }; poolTagKey: string; runnerPath: string } {
  const fn = platform.topology.functions.find((f) => f.logicalName === "fleet-housekeeping-consumer");
  const env = fn?.environment ?? {};
  const need = (key: string): string => {
    const value = env[key];
    if (!value) throw new Error(`fleet-housekeeping-consumer has no ${key} in its environment`);
    return value;
  };
  return {
    managed: { Key: need("RUNS_FLEET_MANAGED_TAG_KEY"), Value: need("RUNS_FLEET_MANAGED_TAG_VALUE") },
    poolTagKey: need("RUNS_FLEET_POOL_TAG_KEY"),
    runnerPath: need("RUNS_FLEET_RUNNER_PARAMETER_PATH"),
  };
}

async function launch(platform: LocalPlatform, ami: string, name: string): Promise<string> {
  const { managed, poolTagKey } = fleetNames(platform);
  const ec2: EC2Client = platform.aws.ec2;
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: ami,
      InstanceType: "c7g.large",
      MinCount: 1,
      MaxCount: 1,
      TagSpecifications: [{ ResourceType: "instance", Tags: [managed, { Key: poolTagKey, Value: "default" }, { Key: "Name", Value: name }] }],
    }),
  );
  const id = out.Instances?.[0]?.InstanceId;
  if (!id) throw new Error(`RunInstances returned no instance for ${name}`);
  return id;
}

async function stateOf(ec2: EC2Client, id: string): Promise<string | undefined> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
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
        await platform.aws.ssm.send(new PutParameterCommand({ Name: parameterOf(platform, id), Value: JSON.stringify({ pool: "default" }), Type: "String", Overwrite: true }));
      }
      return { busy: busy!, drained: drained!, orphan: orphan!, gone: gone!, launchedAtMs: Date.now() };
    })();
    return prepared.then(() => undefined);
  },

  async run(ctx: ScenarioContext) {
    const { platform } = ctx;
    await this.prepare?.(ctx);
    const f = await (prepared as Promise<Fleet>);
    const jobs = platform.topology.tables.find((t) => t.logicalName === "fleet-jobs");
    if (!jobs) throw new Error("the program declares no fleet-jobs table");
    const termination = platform.queue("fleet-termination");
    const terminationDlq = platform.queue("fleet-termination-dlq");
    const housekeeping = platform.queue("fleet-housekeeping");
    const housekeepingDlq = platform.queue("fleet-housekeeping-dlq");
    const failures: string[] = [];
    const started = Date.now();
    const n = SIZES[ctx.size];
    const duplicates = Math.max(1, Math.floor(n / 3));

    // Jobs 0..n-1 ran on `drained` and end now; job n stays running on `busy` and keeps it busy.
    const jobId = (i: number) => `job-${ctx.runId}-${i}`;
    const onInstance = (i: number) => (i === n ? f.busy : f.drained);
    const now = new Date(platform.clock.now()).toISOString();
    for (let i = 0; i <= n; i++) {
      await platform.aws.dynamodb.send(
        new PutItemCommand({
          TableName: jobs.name,
          Item: { job_id: { S: jobId(i) }, status: { S: "running" }, instance_id: { S: onInstance(i) }, started_at: { S: now } },
        }),
      );
    }
    const message = (i: number) =>
      JSON.stringify({
        instance_id: onInstance(i),
        job_id: jobId(i),
        status: i === 1 ? "failure" : "success",
        exit_code: i === 1 ? 2 : 0,
        duration_seconds: 60 + i,
        started_at: now,
        completed_at: new Date(platform.clock.now()).toISOString(),
        ...(i === 1 ? { error: "exit status 2" } : {}),
      });
    const bodies = [...Array.from({ length: n }, (_, i) => message(i)), ...Array.from({ length: duplicates }, (_, i) => message(i)), JSON.stringify({ job_id: "no-instance" })];
    const sentIds = new Set(await sendAll(platform, termination, bodies));
    ctx.note(`fleet: ${n} termination messages, ${duplicates} duplicates and 1 malformed sent`);

    const processedIds = () => new Set(readSteps(platform, "fleet-termination-consumer", "termination_processed").map((l) => String(l.message_id)).filter((id) => sentIds.has(id)));
    let terminationDone: number | null = null;
    let orphanSent: number | null = null;
    let orphanGone: number | null = null;
    let staleGone: number | null = null;
    let housekeepingId = "";
    let staleFired = false;
    const tick = async () => {
      const qs = await gauges(platform, [
        ["termination", termination],
        ["termination-dlq", terminationDlq],
        ["housekeeping", housekeeping],
        ["housekeeping-dlq", housekeepingDlq],
      ]);
      const done = processedIds().size;
      if (terminationDone === null && done >= n + duplicates) terminationDone = Date.now();
      const simAge = platform.clock.now() - f.launchedAtMs;
      // The operator's sweep goes out once the instances are old enough for it.
      // …and after the terminations, so the instance whose jobs all ended is an orphan too.
      if (orphanSent === null && terminationDone !== null && simAge >= ORPHAN_AGE_SIM_MS) {
        const [id] = await sendAll(platform, housekeeping, [
          JSON.stringify({ task_type: "orphaned_instances", timestamp: new Date(platform.clock.now()).toISOString(), params: { max_runtime_minutes: OPERATOR_MAX_RUNTIME_MINUTES } }),
        ]);
        housekeepingId = id ?? "";
        orphanSent = Date.now();
        ctx.note(`fleet: operator sweep sent (orphaned after ${OPERATOR_MAX_RUNTIME_MINUTES} min); instances are ${(simAge / 60_000).toFixed(0)} simulated minutes old`);
      }
      // stale_ssm runs from its own schedule, fired now instead of waiting 6 simulated hours.
      if (!staleFired && simAge >= 16 * 60_000) {
        staleFired = true;
        await platform.scheduler.fire("fleet-stale-ssm");
        ctx.note("fleet: schedule fleet-stale-ssm fired");
      }
      if (orphanGone === null && orphanSent !== null && (await stateOf(platform.aws.ec2, f.orphan)) === "terminated" && (await stateOf(platform.aws.ec2, f.drained)) === "terminated") orphanGone = Date.now();
      if (staleGone === null && staleFired && !(await parameterExists(platform, parameterOf(platform, f.gone)))) staleGone = Date.now();
      ctx.view({
        scenario: this.name,
        elapsedMs: Date.now() - started,
        progress: { done: Math.min(done, n + duplicates) + (orphanGone ? 1 : 0) + (staleGone ? 1 : 0), total: n + duplicates + 2 },
        queues: qs,
        counters: { "terminations processed": done, "simulated instance age (min)": Math.floor(simAge / 60_000) },
        status: [`orphans ${f.orphan}, ${f.drained}: ${orphanGone ? "terminated" : "running"}`, `stale parameter ${parameterOf(platform, f.gone)}: ${staleGone ? "deleted" : "present"}`],
      });
    };
    const ok = await waitFor(() => terminationDone !== null && orphanGone !== null && staleGone !== null, { timeoutMs: 180_000, tick });
    if (!ok) failures.push(`timed out: terminations ${processedIds().size}/${n + duplicates}, orphan ${orphanGone ? "gone" : "running"}, stale parameter ${staleGone ? "gone" : "present"}`);
    // The operator's message is acknowledged once its task completed.
    await waitFor(() => readSteps(platform, "fleet-housekeeping-consumer", "housekeeping_task_completed").some((l) => l.message_id === housekeepingId), { timeoutMs: 30_000, tick });

    // Expectations beyond the counts.
    for (let i = 0; i < n; i++) {
      const item = await platform.aws.dynamodb.send(new GetItemCommand({ TableName: jobs.name, Key: { job_id: { S: jobId(i) } }, ConsistentRead: true }));
      const status = item.Item?.status?.S;
      const want = i === 1 ? "failed" : "completed";
      if (status !== want) failures.push(`${jobId(i)} is ${status}, expected ${want}`);
    }
    const dupes = readSteps(platform, "fleet-termination-consumer", "termination_processed").filter((l) => sentIds.has(String(l.message_id)) && l.duplicate === true).length;
    if (dupes !== duplicates) failures.push(`${dupes} deliveries were recognised as duplicates, expected ${duplicates}`);
    const busyState = await stateOf(platform.aws.ec2, f.busy);
    if (busyState !== "running") failures.push(`the instance with an active job is ${busyState}: housekeeping must never terminate it`);
    const drainedState = await stateOf(platform.aws.ec2, f.drained);
    if (drainedState !== "terminated") failures.push(`the instance whose jobs all completed is ${drainedState}, expected terminated as an orphan`);
    if (!(await parameterExists(platform, parameterOf(platform, f.busy)))) failures.push("the busy instance's runner parameter was deleted: stale_ssm must keep a live instance's");

    const dlqMessages = (await peekAll(platform, terminationDlq)).filter((m) => sentIds.has(m.MessageId ?? "") || (m.Body ?? "").includes("no-instance"));
    const quarantined = distinctQuarantined(dlqMessages).length;
    const dlqOther = dlqMessages.filter((m) => m.MessageAttributes?.["quarantine-reason"] === undefined).length;
    const hkDlq = (await peekAll(platform, housekeepingDlq)).filter((m) => m.MessageId === housekeepingId).length;
    const [left, hkLeft] = await Promise.all([platform.depth(termination), platform.depth(housekeeping)]);
    const housekeepingDone = readSteps(platform, "fleet-housekeeping-consumer", "housekeeping_task_completed");
    const operatorDone = housekeepingDone.some((l) => l.message_id === housekeepingId) ? 1 : 0;
    return summary({
      scenario: this.name,
      wallMs: Date.now() - started,
      sent: bodies.length + (housekeepingId ? 1 : 0),
      processed: processedIds().size + operatorDone,
      quarantined,
      inDlq: dlqOther + hkDlq,
      remaining: left.visible + left.inFlight + left.delayed + (operatorDone ? 0 : hkLeft.visible + hkLeft.inFlight),
      timings: {
        "terminations processed": since(started, terminationDone),
        "operator sweep → orphans terminated": orphanSent !== null && orphanGone !== null ? orphanGone - orphanSent : null,
        "stale parameter deleted": since(started, staleGone),
      },
      details: {
        duplicatesRecognised: dupes,
        housekeepingRuns: housekeepingDone.length,
        scheduledFires: Object.fromEntries(Object.entries(platform.scheduler.stats()).filter(([k]) => k.startsWith("fleet-")).map(([k, v]) => [k, v.fired])),
      },
      failures,
    });
  },
};
