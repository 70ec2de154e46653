import { paginateDescribeInstances } from "@aws-sdk/client-ec2";
import { DeleteParametersCommand, paginateGetParametersByPath } from "@aws-sdk/client-ssm";
import { errorMessage, logStep } from "../../shared/logger";
import { chunks } from "../budget";
import { instanceIdOfParameter, RUNNER_PARAMETER_PATH } from "../jobs";
import { MetricUnit } from "../telemetry";
import type { Task, TaskDeps } from "./types";

/** GetParametersByPath returns at most 10 per page. */
export const SSM_PAGE_SIZE = 10;
/** DeleteParameters takes at most 10 names. */
export const SSM_DELETE_BATCH_SIZE = 10;
/** Instance ids per DescribeInstances call (an `instance-id` filter takes up to 200 values). */
export const DESCRIBE_BATCH_SIZE = 100;

/**
 * The ids among `ids` that EC2 still knows in a live state. An `instance-id` filter, unlike
 * `InstanceIds`, never fails with InvalidInstanceID.NotFound for a vanished id; and a batch that
 * fails for any other reason is logged and its ids kept (counted as existing), so one bad batch
 * neither aborts the task nor deletes a live runner's config.
 */
async function liveInstances(deps: TaskDeps, ids: string[]): Promise<Set<string>> {
  const live = new Set<string>();
  try {
    const pages = paginateDescribeInstances({ client: deps.ec2 }, { Filters: [{ Name: "instance-id", Values: ids }] });
    for await (const page of pages) {
      for (const i of page.Reservations?.flatMap((r) => r.Instances ?? []) ?? []) {
        if (i.InstanceId && i.State?.Name !== "terminated") live.add(i.InstanceId);
      }
    }
  } catch (error) {
    logStep(deps.logger, "warn", "stale_ssm_describe_failed", { instance_ids: ids, error: errorMessage(error) });
    return new Set(ids);
  }
  return live;
}

/**
 * Parameters under /runs-fleet/runners/ whose instance no longer exists (or is terminated) are
 * deleted, 10 per call. Parameters younger than the minimum age are left alone: their instance
 * may not be visible to DescribeInstances yet.
 */
export const staleSsm: Task<{ min_age_minutes?: number | undefined }> = async (deps, params, budget) => {
  const minAge = params.min_age_minutes ?? deps.config.ssmMinAgeMinutes;
  const youngerThan = deps.now().getTime() - minAge * 60_000;
  const byInstance = new Map<string, string[]>();
  let listed = 0;
  let complete = true;
  // List first, act after: deleting while paging could shift the pages under the NextToken.
  const pages = paginateGetParametersByPath(
    { client: deps.ssm, pageSize: SSM_PAGE_SIZE },
    { Path: RUNNER_PARAMETER_PATH, Recursive: true, WithDecryption: false, MaxResults: SSM_PAGE_SIZE },
  );
  for await (const page of pages) {
    for (const p of page.Parameters ?? []) {
      listed += 1;
      const id = p.Name ? instanceIdOfParameter(p.Name) : null;
      if (!id || !p.Name) continue;
      if (p.LastModifiedDate && p.LastModifiedDate.getTime() > youngerThan) continue;
      byInstance.set(id, [...(byInstance.get(id) ?? []), p.Name]);
    }
    if (budget.exhausted()) {
      complete = false;
      break;
    }
  }

  const stale: string[] = [];
  for (const ids of chunks([...byInstance.keys()], DESCRIBE_BATCH_SIZE)) {
    if (budget.exhausted()) {
      complete = false;
      break;
    }
    const live = await liveInstances(deps, ids);
    for (const id of ids) if (!live.has(id)) stale.push(...(byInstance.get(id) ?? []));
  }

  let deleted = 0;
  for (const names of chunks(stale, SSM_DELETE_BATCH_SIZE)) {
    if (budget.exhausted()) {
      complete = false;
      break;
    }
    const out = await deps.ssm.send(new DeleteParametersCommand({ Names: names }));
    // InvalidParameters are names already gone: someone else deleted them, which is the goal.
    deleted += out.DeletedParameters?.length ?? 0;
    logStep(deps.logger, "info", "stale_ssm_parameters_deleted", { parameters: out.DeletedParameters ?? [], already_gone: out.InvalidParameters ?? [] });
  }
  deps.metrics.addMetric("SSMParametersDeleted", MetricUnit.Count, deleted);
  return { complete, listed, stale: stale.length, deleted };
};
