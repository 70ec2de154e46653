import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { DeleteParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";
import type { SQSRecord } from "aws-lambda";
import { logStep } from "../shared/logger";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { markJobComplete } from "./complete-job";
import { DEFAULT_RESEND, type ResendPolicy } from "../shared/resend";
import type { TerminationConfig } from "./config";
import { runnerConfigParameter } from "./jobs";
import { parseBody, TerminationMessageSchema, type TerminationMessage } from "./messages";
import { emitWithDimension, type FleetTelemetry, MetricUnit } from "./telemetry";

export interface TerminationHandlerDeps extends FleetTelemetry {
  dynamodb: DynamoDBClient;
  ssm: SSMClient;
  sqs: SQSClient;
  config: TerminationConfig;
  /** A fresh completion-attempt token per record processed; default a random UUID. */
  newAttemptToken?: () => string;
  /** How often the completing write is re-sent after the SDK gave up; tests pass an instant sleep. */
  completionRetry?: ResendPolicy;
}


/**
 * The `Error` dimension of `JobFailure`. Free-text errors would make every distinct message a
 * billed custom metric, so the dimension is a bounded class: `timeout`, `interrupted`, or
 * `exit_<code>` for a failure; the text itself is logged.
 */
export function errorClass(message: TerminationMessage): string {
  return message.status === "failure" ? `exit_${message.exit_code}` : message.status;
}

/** JobDuration (Status), then JobSuccess or JobFailure (Error). Called once per job, never for a duplicate. */
function publishJobMetrics(deps: FleetTelemetry, message: TerminationMessage): void {
  emitWithDimension(deps.metrics, "JobDuration", MetricUnit.Seconds, message.duration_seconds, { name: "Status", value: message.status });
  if (message.status === "success") deps.metrics.addMetric("JobSuccess", MetricUnit.Count, 1);
  else emitWithDimension(deps.metrics, "JobFailure", MetricUnit.Count, 1, { name: "Error", value: errorClass(message) });
}

/** `ParameterNotFound` is a success: the agent or an earlier delivery already removed it. */
async function deleteRunnerConfig(deps: TerminationHandlerDeps, instanceId: string, messageId: string): Promise<void> {
  const name = runnerConfigParameter(deps.config.runnerParameterPath, instanceId);
  try {
    await deps.ssm.send(new DeleteParameterCommand({ Name: name }));
    logStep(deps.logger, "info", "ssm_parameter_deleted", { message_id: messageId, instance_id: instanceId, parameter: name });
  } catch (error) {
    if (!(error instanceof Error && error.name === "ParameterNotFound")) throw error;
    logStep(deps.logger, "info", "ssm_parameter_not_found", { message_id: messageId, instance_id: instanceId, parameter: name });
  }
}

/**
 * One termination message: complete the job (conditional), emit the job metrics if this
 * delivery completed it, delete the runner's config parameter. Metrics come before the SSM
 * delete (the original system has them after): if the delete fails, the retry finds the job already
 * complete, so metrics emitted after the delete would never be emitted at all.
 *
 * "This delivery completed it" is read from the item, not from the write's response: the write
 * records the message id and a token of this attempt, and a failed condition returns the old
 * item, so a completion whose response was lost (the SDK retried and failed the condition on its
 * own write) still emits its metrics, while a redelivery of the message (another token) does not.
 */
export function createTerminationHandler(deps: TerminationHandlerDeps): SqsBatchHandler {
  const newAttemptToken = deps.newAttemptToken ?? randomUUID;
  return async (event, context) => {
    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseBody(TerminationMessageSchema, record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      const message = parsed.value;
      const ids = { message_id: record.messageId, job_id: message.job_id, instance_id: message.instance_id };
      const outcome = await markJobComplete(deps.dynamodb, deps.config.jobsTable, message, deps.config.retentionDays, {
        messageId: record.messageId,
        attempt: newAttemptToken(),
      }, deps.completionRetry ?? DEFAULT_RESEND);
      if (outcome.kind === "completed") {
        logStep(deps.logger, "info", "job_marked_complete", {
          ...ids,
          status: message.status,
          exit_code: message.exit_code,
          duration_seconds: message.duration_seconds,
          recovered: outcome.recovered,
          ...(message.error !== undefined ? { error: message.error } : {}),
        });
        publishJobMetrics(deps, message);
      } else {
        logStep(deps.logger, "info", "job_already_complete", {
          ...ids,
          status: message.status,
          found_status: outcome.foundStatus ?? null,
          completed_by: outcome.completedBy ?? null,
          // The same message completed it on an earlier delivery, which emitted the metrics then.
          redelivery: outcome.completedBy === record.messageId,
        });
      }
      await deleteRunnerConfig(deps, message.instance_id, record.messageId);
      logStep(deps.logger, "info", "termination_processed", { ...ids, duplicate: outcome.kind === "duplicate" });
    };

    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
