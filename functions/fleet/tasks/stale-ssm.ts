import { paginateDescribeInstances } from "@aws-sdk/client-ec2";
import { DeleteParametersCommand, paginateGetParametersByPath } from "@aws-sdk/client-ssm";
import { errorMessage, logStep } from "../../shared/logger";
import { chunks } from "../budget";
import { instanceIdOfParameter } from "../jobs";
import { MetricUnit } from "../telemetry";
import { instancesOf } from "../../shared/ec2";
import { readCursor, writeCursor } from "./cursor";
import type { Task, TaskDeps } from "./types";

/** GetParametersByPath returns at most 10 per page. */
export const SSM_PAGE_SIZE = 10;
/** DeleteParameters takes at most 10 names. */
export const SSM_DELETE_BATCH_SIZE = 10;
/** Instance ids per DescribeInstances call (an `instance-id` filter takes up to 200 values). */
export const DESCRIBE_BATCH_SIZE = 100;
/** Listing passes per run at most; a safety net, the budget normally ends a run first. */
export const MAX_LIST_PASSES = 10;

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
      for (const i of instancesOf(page)) {
        if (i.InstanceId && i.State?.Name !== "terminated") live.add(i.InstanceId);
      }
    }
  } catch (error) {
    logStep(deps.logger, "warn", "stale_ssm_describe_failed", { instance_ids: ids, error: errorMessage(error) });
    return new Set(ids);
  }
  return live;
}

/** Names of this page's parameters old enough to judge, by the instance id in their path. */
function judgeablePage(
  runnerParameterPath: string,
  parameters: ReadonlyArray<{ Name?: string | undefined; LastModifiedDate?: Date | undefined }>,
  youngerThan: number,
): Map<string, string[]> {
  const byInstance = new Map<string, string[]>();
  for (const p of parameters) {
    const id = p.Name ? instanceIdOfParameter(runnerParameterPath, p.Name) : null;
    if (!id || !p.Name) continue;
    if (p.LastModifiedDate && p.LastModifiedDate.getTime() > youngerThan) continue;
    byInstance.set(id, [...(byInstance.get(id) ?? []), p.Name]);
  }
  return byInstance;
}

/** Deletes `names`, 10 per call; returns how many SSM reports deleted. */
async function deleteParameters(deps: TaskDeps, names: string[]): Promise<number> {
  let deleted = 0;
  for (const batch of chunks(names, SSM_DELETE_BATCH_SIZE)) {
    const out = await deps.ssm.send(new DeleteParametersCommand({ Names: batch }));
    // InvalidParameters are names already gone: someone else deleted them, which is the goal.
    deleted += out.DeletedParameters?.length ?? 0;
    logStep(deps.logger, "info", "stale_ssm_parameters_deleted", { parameters: out.DeletedParameters ?? [], already_gone: out.InvalidParameters ?? [] });
  }
  return deleted;
}

/**
 * Parameters under the runner path (/runs-fleet/<environment>/runners/) whose instance no longer exists (or is terminated) are
 * deleted, 10 per call. Parameters younger than the minimum age are left alone: their instance
 * may not be visible to DescribeInstances yet.
 *
 * Page by page, from a cursor: each listed page is judged and its stale parameters deleted, the
 * cursor (where the next page starts) is saved, and only then is the budget checked. However slow
 * SSM and EC2 are, a run acts on at least one page and the next run starts on the page after it.
 * (Starting every run from the top made a first page of live runners' configs, slower to judge
 * than the whole budget, all that was ever judged.)
 *
 * Deleting while paging can shift later pages under the NextToken when the token is an offset
 * (moto's is; SSM's is opaque), so parameters would be skipped. A pass that deleted anything is
 * therefore followed by another pass from the top; the task is complete once a whole pass, from
 * the top, deletes nothing. Instances found live are remembered, so a further pass re-lists but
 * does not re-describe them.
 */
export const staleSsm: Task<{ min_age_minutes?: number | undefined }> = async (deps, params, budget) => {
  const minAge = params.min_age_minutes ?? deps.config.ssmMinAgeMinutes;
  const youngerThan = deps.now().getTime() - minAge * 60_000;
  const query = deps.config.runnerParameterPath;
  let token = await readCursor(deps, "stale_ssm", query);
  const resumed = token !== undefined;
  const knownLive = new Set<string>();
  let listed = 0;
  let stale = 0;
  let deleted = 0;
  let passes = 0;
  let pagesThisRun = 0;
  let restarted = false;
  let complete = false;
  passes: while (passes < MAX_LIST_PASSES) {
    passes += 1;
    // A pass that began at a saved cursor is not a whole pass: it cannot show the path is clean.
    const fromTheTop = token === undefined;
    let staleThisPass = 0;
    const pages = paginateGetParametersByPath(
      // No startingToken (undefined) is the first page: the paginator then starts from the request's own NextToken, which is unset.
      { client: deps.ssm, pageSize: SSM_PAGE_SIZE, startingToken: token },
      { Path: deps.config.runnerParameterPath, Recursive: true, WithDecryption: false, MaxResults: SSM_PAGE_SIZE },
    );
    try {
      for await (const page of pages) {
        pagesThisRun += 1;
        const parameters = page.Parameters ?? [];
        listed += parameters.length;
        const byInstance = judgeablePage(deps.config.runnerParameterPath, parameters, youngerThan);
        const pageStale: string[] = [];
        for (const batch of chunks(
          [...byInstance].filter(([id]) => !knownLive.has(id)),
          DESCRIBE_BATCH_SIZE,
        )) {
          const live = await liveInstances(
            deps,
            batch.map(([id]) => id),
          );
          for (const [id, names] of batch) {
            if (live.has(id)) knownLive.add(id);
            else pageStale.push(...names);
          }
        }
        staleThisPass += pageStale.length;
        stale += pageStale.length;
        deleted += await deleteParameters(deps, pageStale);
        token = page.NextToken || undefined;
        await writeCursor(deps, "stale_ssm", query, token);
        if (budget.exhausted() && token !== undefined) break passes;
      }
    } catch (error) {
      // The saved token failed (SSM's tokens expire; an error is how it says so): start from the
      // top, once. If SSM itself is failing, the listing from the top fails too, and the run with it.
      if (!resumed || pagesThisRun > 0 || restarted) throw error;
      logStep(deps.logger, "warn", "sweep_cursor_rejected", { task_type: "stale_ssm", error: errorMessage(error) });
      token = undefined;
      restarted = true;
      passes -= 1;
      continue;
    }
    token = undefined;
    if (staleThisPass === 0 && fromTheTop) {
      complete = true;
      break;
    }
    if (budget.exhausted()) break;
  }
  deps.metrics.addMetric("SSMParametersDeleted", MetricUnit.Count, deleted);
  return { complete, resumed, listed, stale, deleted, passes };
};
