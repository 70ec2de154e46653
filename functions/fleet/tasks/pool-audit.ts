import { type Instance, paginateDescribeInstances } from "@aws-sdk/client-ec2";
import { logStep } from "../../shared/logger";
import { emitWithDimension, MetricUnit } from "../telemetry";
import { hasActiveJob } from "./active-jobs";
import { instancesOf } from "../../shared/ec2";
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

const RUNNING = new Set(["pending", "running"]);
const STOPPED = new Set(["stopping", "stopped"]);

/** Pure arithmetic of the report, from counted instances and the price table. */
export function poolReport(
  pool: string,
  instances: ReadonlyArray<{ type: string; state: string; idle: boolean }>,
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

/** The stack's managed instances of the configured pools, live or stopped, as EC2's filters select them. */
async function poolInstances(deps: TaskDeps): Promise<Instance[]> {
  const pages = paginateDescribeInstances(
    { client: deps.ec2 },
    {
      Filters: [
        { Name: `tag:${deps.config.managedTag.key}`, Values: [deps.config.managedTag.value] },
        { Name: `tag:${deps.config.environmentTag.key}`, Values: [deps.config.environmentTag.value] },
        { Name: `tag:${deps.config.poolTagKey}`, Values: deps.config.pools },
        { Name: "instance-state-name", Values: [...RUNNING, ...STOPPED] },
      ],
    },
  );
  const instances: Instance[] = [];
  for await (const page of pages) instances.push(...instancesOf(page));
  return instances;
}

/**
 * For each configured pool: running, stopped and idle (running with no queued/running job)
 * instances, their hourly compute and idle cost from the configured price table, a logged
 * report, and PoolIdleCost / PoolComputeCost / PoolUtilization with the PoolName dimension.
 */
export const poolAudit: Task<Record<string, never>> = async (deps, _params, budget) => {
  if (deps.config.pools.length === 0) {
    logStep(deps.logger, "info", "pool_audit_no_pools");
    return { complete: true, pools: 0 };
  }
  const all = await poolInstances(deps);
  const reports: PoolReport[] = [];
  let complete = true;
  // A pool named twice in config is one pool, reported once.
  for (const pool of new Set(deps.config.pools)) {
    if (budget.exhausted()) {
      complete = false;
      break;
    }
    const counted = [];
    // The filter selected instances that carry the pool tag, so every one has Tags.
    for (const i of all.filter((x) => x.Tags?.some((t) => t.Key === deps.config.poolTagKey && t.Value === pool))) {
      const state = i.State?.Name ?? "unknown";
      const type = i.InstanceType ?? "unknown";
      if (RUNNING.has(state) && deps.config.instancePrices[type] === undefined) {
        logStep(deps.logger, "warn", "pool_audit_price_missing", { pool, instance_type: type });
      }
      const idle = RUNNING.has(state) && !(await hasActiveJob(deps.dynamodb, deps.config.jobsTable, i.InstanceId ?? ""));
      counted.push({ type, state, idle });
    }
    const report = poolReport(pool, counted, deps.config.instancePrices);
    reports.push(report);
    logStep(deps.logger, "info", "pool_audit_report", { ...report });
    const dim = { name: "PoolName", value: pool };
    emitWithDimension(deps.metrics, "PoolIdleCost", MetricUnit.NoUnit, report.idle_cost_usd_per_hour, dim);
    emitWithDimension(deps.metrics, "PoolComputeCost", MetricUnit.NoUnit, report.compute_cost_usd_per_hour, dim);
    emitWithDimension(deps.metrics, "PoolUtilization", MetricUnit.Percent, report.utilization_percent, dim);
  }
  return { complete, pools: reports.length };
};
