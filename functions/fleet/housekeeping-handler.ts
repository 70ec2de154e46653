import type { SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import type { SQSRecord } from "aws-lambda";
import { logStep } from "../shared/logger";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { budgetFrom, type TimeBudget } from "./budget";
import { HousekeepingMessageSchema, parseBody, TASK_TYPES, type HousekeepingMessage, type TaskType } from "./messages";
import { oldJobs } from "./tasks/old-jobs";
import { orphanedInstances } from "./tasks/orphaned-instances";
import { poolAudit } from "./tasks/pool-audit";
import { staleSsm } from "./tasks/stale-ssm";
import type { TaskDeps, TaskResult } from "./tasks/types";

export interface HousekeepingHandlerDeps extends TaskDeps {
  sqs: SQSClient;
}

function runTask(deps: TaskDeps, message: HousekeepingMessage, budget: TimeBudget): Promise<TaskResult> {
  switch (message.task_type) {
    case "orphaned_instances":
      return orphanedInstances(deps, message.params, budget);
    case "stale_ssm":
      return staleSsm(deps, message.params, budget);
    case "old_jobs":
      return oldJobs(deps, message.params, budget);
    case "pool_audit":
      return poolAudit(deps, message.params, budget);
  }
}

/** Only the task type of a message, to tell an unknown type from other schema failures. */
const TaskTypeOnly = z.object({ task_type: z.string() });

/** A clearer reason than the union's for the commonest mistake: a task type nobody implements. */
function unknownTaskType(body: string): string | null {
  const parsed = parseBody(TaskTypeOnly, body);
  if (!parsed.ok || (TASK_TYPES as readonly string[]).includes(parsed.value.task_type)) return null;
  return `unknown task_type ${JSON.stringify(parsed.value.task_type)} (known: ${TASK_TYPES.join(", ")})`;
}

/**
 * Dispatches each scheduled message on `task_type`. A task that runs out of time returns
 * `complete: false` and the message is still acknowledged: the work it left (instances,
 * parameters, items) stays where it is and the next scheduled run picks it up.
 */
export function createHousekeepingHandler(deps: HousekeepingHandlerDeps): SqsBatchHandler {
  return async (event, context) => {
    const budget = budgetFrom(context, deps.config.timeMarginMs);
    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseBody(HousekeepingMessageSchema, record.body);
      if (!parsed.ok) {
        // An unknown task type fails the union too; its own reason names the known ones.
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, unknownTaskType(record.body) ?? parsed.reason, deps);
        return;
      }
      const message = parsed.value;
      const task: TaskType = message.task_type;
      const started = Date.now();
      logStep(deps.logger, "info", "housekeeping_task_started", { task_type: task, scheduled_at: message.timestamp, message_id: record.messageId });
      const result = await runTask(deps, message, budget);
      logStep(deps.logger, "info", result.complete ? "housekeeping_task_completed" : "housekeeping_task_incomplete", {
        task_type: task,
        message_id: record.messageId,
        duration_ms: Date.now() - started,
        ...result,
      });
    };
    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
