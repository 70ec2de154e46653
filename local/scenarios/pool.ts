/**
 * pool (docs/parts/pool.md): workflows claim warm instances, the pool runs out and refill tops it up.
 *
 * The refill Lambda runs from its own schedule (pool-refill-<class> → the pool-refill queue);
 * the workflows are played here with the claim library itself (`claimInstance`), with the
 * refill function's environment (POOL_CLASSES, CLAIM_TABLE_NAME, POOL_TAG) and the stack's
 * `encache:pool` settings (lock TTL, re-queue delay, tolerance), exactly as a claim worker
 * would be configured. More workflows than the pool's size ask at once: the first ones claim,
 * the rest are told `exhausted`, ask again after each refill, and all get an instance in the end.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { type ClaimDeps, type ClaimRequest, type ClaimResult, claimInstance, releaseClaim } from "../../functions/pool/claim";
import { parseRefillConfig, type PoolClassConfig } from "../../functions/pool/config";
import type { LogFields, StepLogger } from "../../functions/shared/logger";
import type { LocalPlatform } from "../platform";
import type { Topology } from "../provision/topology-types";
import type { ScenarioSummary } from "../show/view";
import { type LogLine, readSteps } from "./logs";
import { keyTimings, type Scenario, ScenarioRun, total, waitFor, waitForEmpty } from "./scenario";

/** Workflows per size; each size is more than the class's pool size (see `workflowsFor`). */
const SIZES = { small: 3, default: 6 } as const;
const REFILL_FUNCTION = "pool-refill";
/** How long one claim may keep asking the pool, in simulated time (the library's deadline). */
const CLAIM_DEADLINE_SIM_MS = 60_000;

/** The settings a claim worker passes the claim library, as the program publishes them (`poolClaimSettings`). */
export interface ClaimSettings {
  lockTtlSeconds: number;
  requeueDelaySeconds: number;
  tolerance: number;
}

/** Pure: the claim settings from the recorded stack outputs, never the stack file. */
export function claimSettings(topology: Pick<Topology, "stackOutputs">): ClaimSettings {
  const published = topology.stackOutputs?.poolClaimSettings as Partial<Record<keyof ClaimSettings, unknown>> | undefined;
  const value = (key: keyof ClaimSettings): number => {
    const v = published?.[key];
    if (typeof v !== "number" || !Number.isInteger(v)) throw new Error(`the recorded stack outputs have no poolClaimSettings.${key} (an integer)`);
    return v;
  };
  return { lockTtlSeconds: value("lockTtlSeconds"), requeueDelaySeconds: value("requeueDelaySeconds"), tolerance: value("tolerance") };
}

/** The claim library's log steps, kept in memory: the scenario counts adverts through them. */
export class StepRecorder implements StepLogger {
  readonly lines: Array<LogFields & { step?: unknown }> = [];
  debug = (_m: string, ...f: LogFields[]) => this.push(f);
  info = (_m: string, ...f: LogFields[]) => this.push(f);
  warn = (_m: string, ...f: LogFields[]) => this.push(f);
  error = (_m: string, ...f: LogFields[]) => this.push(f);
  count(step: string): number {
    return this.lines.filter((l) => l.step === step).length;
  }
  private push(fields: LogFields[]): void {
    this.lines.push(Object.assign({}, ...fields) as LogFields);
  }
}

/** The first class with a non-zero size; its queue is the one the workflows drain. */
function drainedClass(classes: PoolClassConfig[]): PoolClassConfig {
  const cls = classes.find((c) => c.size > 0);
  if (!cls) throw new Error("no pool class has a size above 0");
  return cls;
}

const forClass = (lines: LogLine[], cls: string) => lines.filter((l) => l.resource_class === cls);
const sumOf = (lines: LogLine[], field: string) => lines.reduce((n, l) => n + (typeof l[field] === "number" ? (l[field] as number) : 0), 0);

function firstOf(times: Array<number | null>): number | null {
  const known = times.filter((t): t is number => t !== null);
  return known.length > 0 ? Math.min(...known) : null;
}

interface Workflow {
  id: string;
  result: ClaimResult | undefined;
  exhaustedTimes: number;
  claimedAt: number | null;
}

/** The id of the instance a claimed workflow holds ("" if it holds none). */
const claimedInstance = (w: Workflow): string => (w.result?.outcome === "claimed" ? w.result.instanceId : "");

/** Each instance handed to one workflow only, and its claim lock naming that workflow. */
async function claimFailures(platform: LocalPlatform, claimTableName: string, claimed: Workflow[]): Promise<string[]> {
  const failures: string[] = [];
  const byInstance = new Map<string, string[]>();
  for (const w of claimed) byInstance.set(claimedInstance(w), [...(byInstance.get(claimedInstance(w)) ?? []), w.id]);
  for (const [id, owners] of byInstance) if (owners.length > 1) failures.push(`instance ${id} was handed to ${owners.join(", ")}`);
  for (const w of claimed) {
    const id = claimedInstance(w);
    const item = await platform.aws.dynamodb.send(new GetItemCommand({ TableName: claimTableName, Key: { instance_id: { S: id } }, ConsistentRead: true }));
    const owner = item.Item?.owner?.S;
    if (owner !== w.id) failures.push(`the claim lock of ${id} names ${owner ?? "nobody"}, expected ${w.id}`);
  }
  return failures;
}

/** Releases each workflow's claim (its own lock only), one after another; how many were released. */
async function releaseAll(deps: ClaimDeps, claimTableName: string, claimed: Workflow[]): Promise<number> {
  let released = 0;
  for (const w of claimed) {
    if (w.result?.outcome === "claimed" && (await releaseClaim(deps, claimTableName, w.result.instanceId, w.id))) released += 1;
  }
  return released;
}

/**
 * How many refill triggers (messages) ended in a run, a lease-held skip or a shared run, across
 * every class: the refill queue is shared. Counted by message id, not by line: a trigger that SQS
 * delivered again after its run completed (its delete raced the visibility timeout on a loaded
 * machine) logs a second line but is still one message. A line without its id counts on its own,
 * so a function that stopped logging ids shows up as an over-count, not as a loss.
 */
export function triggersHandled(steps: readonly LogLine[]): number {
  // A Map, not an object literal: a step named like an Object.prototype member ("constructor")
  // must not find a field.
  const idField = new Map([
    ["refill_completed", "run_id"],
    ["refill_lease_held", "run_id"],
    ["refill_shared_run", "message_id"],
  ]);
  const ids = new Set<string>();
  let anonymous = 0;
  for (const line of steps) {
    const field = line.step === undefined ? undefined : idField.get(line.step);
    if (field === undefined) continue;
    const id = line[field];
    if (typeof id === "string") ids.add(id);
    else anonymous++;
  }
  return ids.size + anonymous;
}

/**
 * The accounting, taken at a moment when no refill was half-way: a run advertises between its
 * `pool_counted` and `refill_completed` lines, and a trigger is on the queue (in flight) while
 * its run logs; either would be counted twice or not at all. So the log counts and scheduler
 * stats are read on both sides of the depth reads, and the snapshot is kept only when nothing
 * moved and no trigger was in flight.
 */
async function snapshot(platform: LocalPlatform, cls: PoolClassConfig) {
  const queues = [`pool-${cls.name}`, `pool-${cls.name}-dlq`, "pool-refill", "pool-refill-dlq"].map((name) => platform.queue(name));
  const counts = () => {
    const steps = readSteps(platform, REFILL_FUNCTION);
    const of = (step: string) => steps.filter((l) => l.step === step);
    const completed = forClass(of("refill_completed"), cls.name);
    const delivered = Object.entries(platform.scheduler.stats())
      .filter(([name]) => name.startsWith("pool-refill-"))
      .reduce((n, [, st]) => n + st.delivered, 0);
    return {
      key: `${steps.length}/${delivered}`,
      counted: forClass(of("pool_counted"), cls.name).length,
      completed,
      // Every class's runs: the refill queue and its DLQ are shared by the classes.
      handled: triggersHandled(steps),
      quarantined: of("message_quarantined").length,
      delivered,
    };
  };
  for (let attempt = 0; ; attempt++) {
    const before = counts();
    const [q, d, rq, rd] = await Promise.all(queues.map((queue) => platform.depth(queue)));
    const after = counts();
    const settled = before.key === after.key && after.counted === after.completed.length && rq.inFlight === 0;
    if (settled || attempt >= 60) {
      return {
        /** Adverts of the class the refill sent (its `advertised` counts, every run since start-up). */
        adverts: sumOf(after.completed, "advertised"),
        advertsOnQueue: total(q),
        advertsInDlq: total(d),
        refillRuns: after.completed.length,
        /** Trigger messages the scheduler delivered to pool-refill (every class's schedule). */
        triggers: after.delivered,
        /** Triggers whose run ended: refilled, lease held, shared a batch's run, or quarantined. */
        triggersHandled: after.handled,
        triggersQuarantined: after.quarantined,
        triggersOnQueue: total(rq),
        triggersInDlq: total(rd) - after.quarantined,
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const pool: Scenario = {
  name: "pool",
  title: "workflows claim warm instances, the pool runs out and refill tops it up",
  requires: ["pool-refill"],
  async run(ctx) {
    const run = new PoolRun(ctx, this.name);
    await run.waitForFullPool();
    await run.claimAllAtOnce();
    await run.claimAfterEachRefill();
    await run.checkClaims();
    await run.releaseClaims();
    return run.report();
  },
};

/** One play of the scenario: the class it drains, its workflows, what each round found and the failures. */
class PoolRun extends ScenarioRun {
  private readonly config = parseRefillConfig(this.platform.fn(REFILL_FUNCTION).environment);
  private readonly settings = claimSettings(this.platform.topology);
  private readonly cls = drainedClass(this.config.classes);
  private readonly queue = this.platform.queue(`pool-${this.cls.name}`);
  private readonly refillQueue = this.platform.queue("pool-refill");
  /** How many workflows ask at once: more than the class's pool size. */
  private readonly k = Math.max(SIZES[this.ctx.size], this.cls.size + 2);
  private readonly recorder = new StepRecorder();
  private readonly deps: ClaimDeps = {
    sqs: this.platform.aws.sqs,
    dynamodb: this.platform.aws.dynamodb,
    ec2: this.platform.aws.ec2,
    clock: () => this.platform.clock.now(),
    logger: this.recorder,
    metrics: { addMetric: () => undefined, publishStoredMetrics: () => undefined },
  };
  private readonly workflows: Workflow[] = Array.from({ length: this.k }, (_, i) => ({
    id: `wf-${this.ctx.runId}-${i}`,
    result: undefined,
    exhaustedTimes: 0,
    claimedAt: null,
  }));
  private poolFull: number | null = null;
  private firstRound = 0;
  private refillsDuringRound = 0;
  private allClaimed: number | null = null;
  private released = 0;

  /** 1. The first scheduled refill fills the pool (it may have run before this scenario). */
  async waitForFullPool(): Promise<void> {
    const { cls } = this;
    const full = await waitFor(() => this.refills().some((r) => typeof r.advertised === "number" && r.advertised >= cls.size), {
      timeoutMs: 60_000,
      tick: this.tick,
    });
    if (full) this.poolFull = Date.now();
    else this.failures.push(`no refill run advertised ${cls.size} ${cls.name} instance(s)`);
    this.ctx.note(`pool: ${cls.name} filled (size ${cls.size}); ${this.k} workflows claim at once`);
  }

  /** 2. K workflows at once: the pool has `size` instances, so some are told `exhausted`. */
  async claimAllAtOnce(): Promise<void> {
    const { cls, k } = this;
    const runsBeforeRound = this.refills().length;
    await Promise.all(this.workflows.map((w) => this.attempt(w)));
    const firstRound = this.claimed().length;
    this.firstRound = firstRound;
    // Let a refill run that overlapped the round finish (its trigger leaves the queue only then).
    await waitForEmpty(this.platform, [this.refillQueue], { timeoutMs: 15_000, delayed: false });
    // A scheduled refill (every 5 simulated minutes) may top the pool up while the round runs;
    // each run adds at most `size` instances, so that is all the round may claim beyond the first fill.
    const refillsDuringRound = this.refills().length - runsBeforeRound;
    this.refillsDuringRound = refillsDuringRound;
    const claimable = cls.size * (1 + refillsDuringRound);
    if (firstRound < 1) this.failures.push("no workflow claimed an instance from the filled pool");
    if (firstRound > claimable)
      this.failures.push(`${firstRound} workflows claimed from a pool of ${cls.size} topped up by ${refillsDuringRound} refill run(s)`);
    if (this.workflows.every((w) => w.exhaustedTimes === 0)) this.failures.push(`${k} workflows on a pool of ${cls.size}, yet none was told exhausted`);
    this.ctx.note(`pool: first round: ${firstRound} claimed, ${k - firstRound} exhausted; they wait for the next refill`);
  }

  /** 3. The waiting workflows ask again after each refill run, until all have an instance. */
  async claimAfterEachRefill(): Promise<void> {
    let lastRuns = this.refills().length;
    const ok = await waitFor(
      async () => {
        const runs = this.refills().length;
        if (runs > lastRuns) {
          lastRuns = runs;
          await Promise.all(this.workflows.filter((w) => w.result?.outcome !== "claimed").map((w) => this.attempt(w)));
        }
        return this.claimed().length === this.k;
      },
      { timeoutMs: 120_000, tick: this.tick },
    );
    if (ok) this.allClaimed = Date.now();
    else this.failures.push(`only ${this.claimed().length} of ${this.k} workflows got an instance`);
  }

  /** 4. Never one instance for two workflows: distinct ids, and each lock names its claimant. */
  async checkClaims(): Promise<void> {
    this.failures.push(...(await claimFailures(this.platform, this.config.claimTableName, this.claimed())));
  }

  /** 5. Release every claim (own lock only); the instances become idle pool members again. */
  async releaseClaims(): Promise<void> {
    this.released = await releaseAll(this.deps, this.config.claimTableName, this.claimed());
    if (this.released !== this.claimed().length) this.failures.push(`released ${this.released} of ${this.claimed().length} claims`);
  }

  /**
   * Two kinds of message are counted. Adverts: every one the refill sent either was consumed
   * by a pickup (picked as suitable, including picks that then lost the lock race, or
   * discarded as malformed/contradicting its class), or is still on the class's queue
   * (visible, in flight or delayed: a re-queued unsuitable advert is deleted and sent again,
   * so it stays there), or sits in its DLQ. Refill triggers: every message the scheduler
   * delivered to pool-refill ended in a refill run, a lease-held skip, a shared run or
   * quarantine, or is still on that queue or in its DLQ. An advert that expired by retention,
   * or any message that vanished otherwise, shows up as lost.
   */
  async report(): Promise<ScenarioSummary> {
    const { platform, cls, started, workflows } = this;
    const snap = await snapshot(platform, cls);
    const picked = this.recorder.count("advert_suitable");
    const discarded = this.recorder.count("advert_discarded");
    const lostRaces = this.recorder.count("claim_lost_race");
    if (snap.triggersInDlq > 0) this.failures.push(`${snap.triggersInDlq} refill trigger(s) in pool-refill-dlq`);

    return this.summarise({
      sent: snap.adverts + snap.triggers,
      processed: picked + discarded + snap.triggersHandled,
      quarantined: snap.triggersQuarantined,
      inDlq: snap.advertsInDlq + snap.triggersInDlq,
      remaining: snap.advertsOnQueue + snap.triggersOnQueue,
      ...keyTimings(platform.clock.speed, {
        "pool filled": [started, this.poolFull],
        "first claim": [started, firstOf(workflows.map((w) => w.claimedAt))],
        "every workflow claimed": [started, this.allClaimed],
      }),
      details: {
        resourceClass: cls.name,
        poolSize: cls.size,
        workflows: this.k,
        claimedFirstRound: this.firstRound,
        refillsDuringFirstRound: this.refillsDuringRound,
        exhaustedAnswers: workflows.reduce((n, w) => n + w.exhaustedTimes, 0),
        lostRaces,
        advertsDiscarded: discarded,
        advertsSent: snap.adverts,
        advertsPickedUp: picked,
        triggersDelivered: snap.triggers,
        refillRuns: snap.refillRuns,
        refillLeaseHeld: forClass(readSteps(platform, REFILL_FUNCTION, "refill_lease_held"), cls.name).length,
        instancesLaunched: forClass(readSteps(platform, REFILL_FUNCTION, "pool_instances_launched"), cls.name).reduce(
          (n, l) => n + (Array.isArray(l.instance_ids) ? l.instance_ids.length : 0),
          0,
        ),
        released: this.released,
      },
    });
  }

  private claimRequest(w: Workflow): ClaimRequest {
    const { cls, config, settings } = this;
    return {
      workflowId: w.id,
      queueUrl: cls.queueUrl,
      resourceClass: { name: cls.name, instanceTypes: cls.instanceTypes, cpu: cls.cpu, memoryMib: cls.memoryMib, usageClass: cls.usageClass },
      requirements: { minCpu: cls.cpu, minMemoryMib: cls.memoryMib },
      claimTableName: config.claimTableName,
      poolTag: config.poolTag,
      lockTtlSeconds: settings.lockTtlSeconds,
      requeueDelaySeconds: settings.requeueDelaySeconds,
      tolerance: settings.tolerance,
      deadline: this.platform.clock.now() + CLAIM_DEADLINE_SIM_MS,
    };
  }

  private async attempt(w: Workflow): Promise<void> {
    const result = await claimInstance(this.deps, this.claimRequest(w));
    w.result = result;
    if (result.outcome === "claimed") w.claimedAt = Date.now();
    else w.exhaustedTimes += 1;
  }

  private refills(): LogLine[] {
    return forClass(readSteps(this.platform, REFILL_FUNCTION, "refill_completed"), this.cls.name);
  }

  private claimed(): Workflow[] {
    return this.workflows.filter((w) => w.result?.outcome === "claimed");
  }

  private readonly tick = async (): Promise<void> => {
    const { cls } = this;
    const claimed = this.claimed().length;
    const exhausted = this.workflows.reduce((n, w) => n + w.exhaustedTimes, 0);
    const counters = { claimed, "exhausted answers": exhausted, "refill runs": this.refills().length };
    const queues = { [`pool-${cls.name}`]: this.queue, "pool-refill": this.refillQueue };
    await this.show(queues, { done: claimed, total: this.k }, counters, [`class ${cls.name}: size ${cls.size}, ${this.k} workflows`]);
  };
}
