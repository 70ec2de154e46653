import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { JOBS_TABLE } from "../../shared/tables";
import { errorMessage, logStep } from "../../shared/logger";
import type { TaskDeps } from "./types";

/**
 * Where a budgeted sweep resumes. A run that is out of time stops after the page it acted on; when
 * it starts again from the top, a first page that never changes (instances that are busy or too
 * young, parameters of live runners, pools) is all it ever judges when one page costs the whole
 * budget, and the rest of the fleet is never swept. Each sweep therefore saves, after each page it
 * acted on, where the next page starts, and the next run starts there.
 *
 * The cursors are items of the jobs table (`housekeeping-cursor#<task>`), outside every index, with a
 * TTL: the housekeeping role may read and put these keys only (`dynamodb:LeadingKeys`, bound in
 * infra/parts/fleet.ts).
 */
export const SWEEP_CURSORS = ["orphaned_instances", "stale_ssm", "pool_audit"] as const;
export type SweepCursor = (typeof SWEEP_CURSORS)[number];

/** The jobs-table key of a sweep's cursor item. */
export function cursorKey(task: SweepCursor): string {
  return `${JOBS_TABLE.sweepCursorKeyPrefix}${task}`;
}

/**
 * A cursor older than this is not used: EC2's and SSM's pagination tokens are short-lived, and a
 * sweep that has not run for this long starts from the top anyway. Also the item's TTL.
 */
export const CURSOR_TTL_SECONDS = 6 * 3600;

/**
 * The saved position (a NextToken, a pool index) for `query` (what the position is a position in:
 * the request's filters), or undefined (start from the top) when there is none, it was saved
 * for another query, it is older than its TTL, or it cannot be read: a sweep must still run when its
 * cursor is unreadable, and starting from the top is what it did before there were cursors.
 */
export async function readCursor(deps: TaskDeps, task: SweepCursor, query: string): Promise<string | undefined> {
  try {
    const out = await deps.dynamodb.send(
      new GetItemCommand({ TableName: deps.config.jobsTable, Key: { [JOBS_TABLE.hashKey]: { S: cursorKey(task) } }, ConsistentRead: true }),
    );
    const item = out.Item;
    const expires = Number(item?.[JOBS_TABLE.ttlAttribute]?.N ?? 0);
    if (item === undefined || item["query"]?.S !== query || expires <= deps.now().getTime() / 1000) return undefined;
    return item["position"]?.S;
  } catch (error) {
    logStep(deps.logger, "warn", "sweep_cursor_read_failed", { task_type: task, error: errorMessage(error), fallback: "from_the_top" });
    return undefined;
  }
}

/**
 * Saves where the next page starts (undefined: the pass ended, the next run starts from the top).
 * A plain put, last writer wins: a lost answer re-sent writes the same item, and an overlapping run
 * that moves the cursor back only makes a page be judged twice. A put that fails is logged and the
 * run goes on: the work of the page is done, and the next run at worst judges a page again.
 */
export async function writeCursor(deps: TaskDeps, task: SweepCursor, query: string, position: string | undefined): Promise<void> {
  const now = deps.now();
  try {
    await deps.dynamodb.send(
      new PutItemCommand({
        TableName: deps.config.jobsTable,
        Item: {
          [JOBS_TABLE.hashKey]: { S: cursorKey(task) },
          query: { S: query },
          ...(position === undefined ? {} : { position: { S: position } }),
          updated_at: { S: now.toISOString() },
          [JOBS_TABLE.ttlAttribute]: { N: String(Math.floor(now.getTime() / 1000) + CURSOR_TTL_SECONDS) },
        },
      }),
    );
  } catch (error) {
    logStep(deps.logger, "warn", "sweep_cursor_write_failed", { task_type: task, error: errorMessage(error) });
  }
}
