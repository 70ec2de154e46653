import { type Instance, paginateDescribeInstances } from "@aws-sdk/client-ec2";
import { logStep } from "../../shared/logger";
import { emitWithDimension, MetricUnit } from "../telemetry";
import { hasActiveJob } from "./active-jobs";
import { instancesOf } from "../../shared/ec2";
import { readCursor, writeCursor } from "./cursor";
import type { Task, TaskDeps } from "./types";

export interface PoolReport {
  pool: string;
  running: number;
  stopped: number;
  idle: number;
  /** USD per hour of the running instances. */
  compute_cost_usd_per_hour: number;
  /** USD per hour of the running instances that have no queued/running job. */
  idle_cost_usd_per_hour: number;
  /** Busy share of the running instances, 0–100 (0 when none run). */
  utilization_percent: number;
}

const RUNNING_STATES = ["pending", "running"] as const;
const STOPPED_STATES = ["stopping", "stopped"] as const;
/** Looked up by an instance's `State?.Name`: an instance without a State is in neither. */
const RUNNING: ReadonlySet<string | undefined> = new Set(RUNNING_STATES);
const STOPPED: ReadonlySet<string | undefined> = new Set(STOPPED_STATES);

/** Pure arithmetic of the report, from counted instances and the price table. */
export function poolReport(
  pool: string,
  instances: ReadonlyArray<{ type: string; state: string | undefined; idle: boolean }>,
  prices: Readonly<Record<string, number>>,
): PoolReport {
  const running = instances.filter((i) => RUNNING.has(i.state));
  const idle = running.filter((i) => i.idle);
  const cost = (list: typeof instances) => Math.round(list.reduce((sum, i) => sum + (prices[i.type] ?? 0), 0) * 10_000) / 10_000;
  return {
    pool,
    running: running.length,
    stopped: instances.filter((i) => STOPPED.has(i.state)).length,
    idle: idle.length,
    compute_cost_usd_per_hour: cost(running),
    idle_cost_usd_per_hour: cost(idle),
    utilization_percent: running.length === 0 ? 0 : Math.round(((running.length - idle.length) / running.length) * 10_000) / 100,
  };
}

/** The stack's managed instances of one pool, live or stopped, as EC2's filters select them. */
async function poolInstances(deps: TaskDeps, pool: string): Promise<Instance[]> {
  const pages = paginateDescribeInstances(
    { client: deps.ec2 },
    {
      Filters: [
        { Name: `tag:${deps.config.managedTag.key}`, Values: [deps.config.managedTag.value] },
        { Name: `tag:${deps.config.environmentTag.key}`, Values: [deps.config.environmentTag.value] },
        { Name: `tag:${deps.config.poolTagKey}`, Values: [pool] },
        { Name: "instance-state-name", Values: [...RUNNING_STATES, ...STOPPED_STATES] },
      ],
    },
  );
  const instances: Instance[] = [];
  for await (const page of pages) instances.push(...instancesOf(page));
  return instances;
}

/** One pool's report, from its instances and their active jobs: logged, and its three metrics emitted. */
async function reportPool(deps: TaskDeps, pool: string): Promise<PoolReport> {
  const counted = [];
  // The filter selected instances that carry this pool's tag; the check keeps that true whatever EC2 answers.
  for (const i of (await poolInstances(deps, pool)).filter((x) => x.Tags?.some((t) => t.Key === deps.config.poolTagKey && t.Value === pool))) {
    const state = i.State?.Name;
    const type = i.InstanceType ?? "unknown";
    if (RUNNING.has(state) && deps.config.instancePrices[type] === undefined) {
      logStep(deps.logger, "warn", "pool_audit_price_missing", { pool, instance_type: type });
    }
    const idle = RUNNING.has(state) && !(await hasActiveJob(deps.dynamodb, deps.config.jobsTable, i.InstanceId ?? ""));
    counted.push({ type, state, idle });
  }
  const report = poolReport(pool, counted, deps.config.instancePrices);
  logStep(deps.logger, "info", "pool_audit_report", { ...report });
  const dim = { name: "PoolName", value: pool };
  emitWithDimension(deps.metrics, "PoolIdleCost", MetricUnit.NoUnit, report.idle_cost_usd_per_hour, dim);
  emitWithDimension(deps.metrics, "PoolComputeCost", MetricUnit.NoUnit, report.compute_cost_usd_per_hour, dim);
  emitWithDimension(deps.metrics, "PoolUtilization", MetricUnit.Percent, report.utilization_percent, dim);
  return report;
}

/**
 * For each configured pool: running, stopped and idle (running with no queued/running job)
 * instances, their hourly compute and idle cost from the configured price table, a logged
 * report, and PoolIdleCost / PoolComputeCost / PoolUtilization with the PoolName dimension.
 *
 * Pool by pool, from a cursor: each pool is listed (DescribeInstances filtered to that pool),
 * judged and reported, the next pool is saved as the cursor, and only then is the budget checked.
 * However slow EC2 and the jobs table are, a run reports at least one pool and the next run starts
 * with the pool after it, so N pools are all reported within N runs. (Listing every pool first and
 * checking the budget before the first report made a run whose listing took the budget report
 * nothing, and the next start over with the first pool.) `complete` means this run reached the
 * last pool.
 */
export const poolAudit: Task<Record<string, never>> = async (deps, _params, budget) => {
  // A pool named twice in config is one pool, reported once.
  const pools = [...new Set(deps.config.pools)];
  if (pools.length === 0) {
    logStep(deps.logger, "info", "pool_audit_no_pools");
    return { complete: true, resumed: false, pools: 0 };
  }
  const query = JSON.stringify(pools);
  const saved = await readCursor(deps, "pool_audit", query);
  // The saved pool's place in this list, or the first pool (no cursor: -1).
  const first = Math.max(
    pools.findIndex((p) => p === saved),
    0,
  );
  let reported = 0;
  let complete = false;
  // Ends at the last pool (its `next` is undefined) or when the budget is spent.
  for (let i = first; ; i++) {
    await reportPool(deps, pools[i]!);
    reported += 1;
    const next = pools[i + 1];
    await writeCursor(deps, "pool_audit", query, next);
    if (next === undefined) {
      complete = true;
      break;
    }
    if (budget.exhausted()) break;
  }
  return { complete, resumed: first > 0, pools: reported };
};
