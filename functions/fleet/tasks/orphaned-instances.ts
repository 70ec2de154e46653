import { type Instance, paginateDescribeInstances, TerminateInstancesCommand } from "@aws-sdk/client-ec2";
import { errorMessage, logStep } from "../../shared/logger";
import { chunks } from "../budget";
import { MetricUnit } from "../telemetry";
import { hasActiveJob, instancesWithActiveJobs } from "./active-jobs";
import { instancesOf } from "../../shared/ec2";
import type { Task } from "./types";

/** The original system's grace on top of the max runtime. */
export const ORPHAN_GRACE_MINUTES = 10;
/** TerminateInstances takes up to 1000 ids; smaller batches keep one bad id from holding back many. */
export const TERMINATE_BATCH_SIZE = 50;

/** Instances launched before this are candidates. */
export function orphanCutoff(now: Date, maxRuntimeMinutes: number): Date {
  return new Date(now.getTime() - (maxRuntimeMinutes + ORPHAN_GRACE_MINUTES) * 60_000);
}

/**
 * Managed instances, running or pending, launched more than max runtime + 10 minutes ago, with
 * no queued/running job in the jobs table: terminated in batches. The launch-time condition is
 * applied here, not as an EC2 filter (`launch-time` only matches exact values or wildcards).
 */
export const orphanedInstances: Task<{ max_runtime_minutes?: number | undefined }> = async (deps, params, budget) => {
  const maxRuntime = params.max_runtime_minutes ?? deps.config.maxRuntimeMinutes;
  const cutoff = orphanCutoff(deps.now(), maxRuntime);
  const candidates: Instance[] = [];
  const pages = paginateDescribeInstances(
    { client: deps.ec2 },
    {
      Filters: [
        { Name: `tag:${deps.config.managedTag.key}`, Values: [deps.config.managedTag.value] },
        { Name: `tag:${deps.config.environmentTag.key}`, Values: [deps.config.environmentTag.value] },
        { Name: "instance-state-name", Values: ["running", "pending"] },
      ],
    },
  );
  for await (const page of pages) {
    for (const i of instancesOf(page)) {
      if (i.InstanceId && i.LaunchTime && i.LaunchTime.getTime() < cutoff.getTime()) candidates.push(i);
    }
  }

  const orphans: string[] = [];
  let skippedActive = 0;
  let lookupFailed = 0;
  let complete = true;
  // The active jobs in pages; if that read fails, each candidate is asked about on its own.
  let busy: Set<string> | undefined;
  if (candidates.length > 0) {
    try {
      busy = await instancesWithActiveJobs(deps.dynamodb, deps.config.jobsTable);
    } catch (error) {
      logStep(deps.logger, "warn", "active_jobs_read_failed", { error: errorMessage(error), fallback: "per_candidate" });
    }
  }
  for (const instance of candidates) {
    if (budget.exhausted()) {
      complete = false;
      break;
    }
    const id = instance.InstanceId!;
    let active: boolean;
    try {
      active = busy ? busy.has(id) : await hasActiveJob(deps.dynamodb, deps.config.jobsTable, id);
    } catch (error) {
      // A lookup that failed (after the SDK's retries) costs only its own candidate: it is kept,
      // and the orphans already confirmed in this run are still terminated. The next run asks again.
      lookupFailed += 1;
      complete = false;
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

  let terminated = 0;
  for (const batch of chunks(orphans, TERMINATE_BATCH_SIZE)) {
    await deps.ec2.send(new TerminateInstancesCommand({ InstanceIds: batch }));
    terminated += batch.length;
    logStep(deps.logger, "info", "orphaned_instances_terminated", { instance_ids: batch, cutoff: cutoff.toISOString(), max_runtime_minutes: maxRuntime });
  }
  deps.metrics.addMetric("OrphanedInstancesTerminated", MetricUnit.Count, terminated);
  return { complete, candidates: candidates.length, skipped_active_job: skippedActive, lookup_failed: lookupFailed, terminated };
};
