import { DescribeInstancesCommand, type DescribeInstancesCommandOutput, type Instance, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { errorMessage, logStep } from "../../shared/logger";
import { chunks } from "../budget";
import { MetricUnit } from "../telemetry";
import { hasActiveJob, instancesWithActiveJobs } from "./active-jobs";
import { instancesOf } from "../../shared/ec2";
import { readCursor, writeCursor } from "./cursor";
import type { Task, TaskDeps } from "./types";

/** The original system's grace on top of the max runtime. */
export const ORPHAN_GRACE_MINUTES = 10;
/** TerminateInstances takes up to 1000 ids; smaller batches keep one bad id from holding back many. */
export const TERMINATE_BATCH_SIZE = 50;

/** Instances launched before this are candidates. */
export function orphanCutoff(now: Date, maxRuntimeMinutes: number): Date {
  return new Date(now.getTime() - (maxRuntimeMinutes + ORPHAN_GRACE_MINUTES) * 60_000);
}

/** Instances per DescribeInstances page (5–1000): the unit of work judged and acted on before the budget is checked. */
export const ORPHAN_PAGE_SIZE = 100;

/**
 * Managed instances, running or pending, launched more than max runtime + 10 minutes ago, with
 * no queued/running job in the jobs table: terminated in batches. The launch-time condition is
 * applied here, not as an EC2 filter (`launch-time` only matches exact values or wildcards).
 *
 * Page by page, from a cursor: each page of DescribeInstances is judged (its candidates' active
 * jobs read after the page, so a job started meanwhile is seen) and its orphans terminated, the
 * cursor is saved, and only then is the budget checked. However slow EC2 and the jobs table are,
 * a run acts on at least one page and the next run starts on the page after it, so a fleet of
 * N pages is swept within N runs. (Listing everything first and judging after made a run that
 * spent its budget listing end having terminated nothing, and the next start over from the top.)
 * `complete` means the pass reached the last page in this run with every candidate judged.
 */
export const orphanedInstances: Task<{ max_runtime_minutes?: number | undefined }> = async (deps, params, budget) => {
  const maxRuntime = params.max_runtime_minutes ?? deps.config.maxRuntimeMinutes;
  const cutoff = orphanCutoff(deps.now(), maxRuntime);
  const filters = [
    { Name: `tag:${deps.config.managedTag.key}`, Values: [deps.config.managedTag.value] },
    { Name: `tag:${deps.config.environmentTag.key}`, Values: [deps.config.environmentTag.value] },
    { Name: "instance-state-name", Values: ["running", "pending"] },
  ];
  const query = JSON.stringify(filters);
  let token = await readCursor(deps, "orphaned_instances", query);
  const resumed = token !== undefined;
  let candidates = 0;
  let skippedActive = 0;
  let lookupFailed = 0;
  let terminated = 0;
  let pages = 0;
  let complete = false;
  let restarted = false;
  for (;;) {
    let page: DescribeInstancesCommandOutput;
    try {
      page = await deps.ec2.send(new DescribeInstancesCommand({ Filters: filters, MaxResults: ORPHAN_PAGE_SIZE, NextToken: token }));
    } catch (error) {
      // The saved token failed (EC2's tokens expire, and an error is how it says so; one that names an
      // instance gone since makes moto's fail as a 500): start from the top, once. If EC2 itself is
      // failing, the call from the top fails too, and the run with it.
      if (!resumed || pages > 0 || restarted) throw error;
      logStep(deps.logger, "warn", "sweep_cursor_rejected", { task_type: "orphaned_instances", error: errorMessage(error) });
      token = undefined;
      restarted = true;
      continue;
    }
    pages += 1;
    const judged = await judgePage(deps, instancesOf(page), cutoff);
    candidates += judged.candidates;
    skippedActive += judged.skippedActive;
    lookupFailed += judged.lookupFailed;
    for (const batch of chunks(judged.orphans, TERMINATE_BATCH_SIZE)) {
      await deps.ec2.send(new TerminateInstancesCommand({ InstanceIds: batch }));
      terminated += batch.length;
      logStep(deps.logger, "info", "orphaned_instances_terminated", { instance_ids: batch, cutoff: cutoff.toISOString(), max_runtime_minutes: maxRuntime });
    }
    token = page.NextToken || undefined;
    await writeCursor(deps, "orphaned_instances", query, token);
    if (token === undefined) {
      complete = lookupFailed === 0;
      break;
    }
    if (budget.exhausted()) break;
  }
  deps.metrics.addMetric("OrphanedInstancesTerminated", MetricUnit.Count, terminated);
  return { complete, resumed, pages, candidates, skipped_active_job: skippedActive, lookup_failed: lookupFailed, terminated };
};

/** One page: its candidates (old enough), and which of them have no active job. */
async function judgePage(
  deps: TaskDeps,
  instances: readonly Instance[],
  cutoff: Date,
): Promise<{ candidates: number; orphans: string[]; skippedActive: number; lookupFailed: number }> {
  const candidates = instances.filter((i) => i.InstanceId && i.LaunchTime && i.LaunchTime.getTime() < cutoff.getTime()).map((i) => i.InstanceId!);
  const orphans: string[] = [];
  let skippedActive = 0;
  let lookupFailed = 0;
  if (candidates.length === 0) return { candidates: 0, orphans, skippedActive, lookupFailed };
  // The active jobs in pages; if that read fails, each candidate is asked about on its own.
  let busy: Set<string> | undefined;
  try {
    busy = await instancesWithActiveJobs(deps.dynamodb, deps.config.jobsTable);
  } catch (error) {
    logStep(deps.logger, "warn", "active_jobs_read_failed", { error: errorMessage(error), fallback: "per_candidate" });
  }
  for (const id of candidates) {
    let active: boolean;
    try {
      active = busy ? busy.has(id) : await hasActiveJob(deps.dynamodb, deps.config.jobsTable, id);
    } catch (error) {
      // A lookup that failed (after the SDK's retries) costs only its own candidate: it is kept,
      // and the orphans already confirmed on the page are still terminated. The next pass asks again.
      lookupFailed += 1;
      logStep(deps.logger, "warn", "orphan_check_failed", { instance_id: id, error: errorMessage(error) });
      continue;
    }
    if (active) {
      skippedActive += 1;
      logStep(deps.logger, "info", "orphan_skipped_active_job", { instance_id: id });
      continue;
    }
    orphans.push(id);
  }
  return { candidates: candidates.length, orphans, skippedActive, lookupFailed };
}
