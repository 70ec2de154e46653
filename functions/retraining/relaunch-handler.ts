import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSEvent, SQSRecord } from "aws-lambda";
import type { EnvValuesOf } from "../shared/env";
import { logStep, type StepLogger } from "../shared/logger";
import { countOne, type MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { ORIGIN_ATTRIBUTE } from "./defer";
import type { RELAUNCH_ENV } from "./env";
import { decideRelaunch } from "./interruption";

/** The relaunch consumer's settings: exactly RELAUNCH_ENV's fields. */
export type RelaunchConfig = EnvValuesOf<typeof RELAUNCH_ENV>;

export interface RelaunchDeps {
  sqs: SQSClient;
  config: RelaunchConfig;
  logger: StepLogger;
  metrics: MetricsSink;
}

/**
 * The relaunch consumer: a retraining task stopped by a Fargate Spot interruption becomes one
 * launch request on the launcher's queue, `{model_name, trigger, relaunch_of}`, whose origin
 * (`retraining-origin-message-id`) is `relaunch-<task id>`. The launcher then runs it under its cap,
 * on FARGATE, once per origin (its intent and clientToken), so duplicate events, a redelivered
 * event and a SendMessage whose answer was lost all end in one task.
 */
export function createRelaunchHandler(deps: RelaunchDeps): SqsBatchHandler {
  return async (event: SQSEvent, context?: Context) => {
    const response = await processSqsBatch(event, (record) => relaunch(deps, record), context);
    deps.metrics.publishStoredMetrics();
    return response;
  };
}

async function relaunch(deps: RelaunchDeps, record: SQSRecord): Promise<void> {
  const decision = decideRelaunch(record.body, deps.config.clusterArn);
  if (decision.kind === "malformed") {
    await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, decision.reason, deps);
    return;
  }
  if (decision.kind === "skip") {
    logStep(deps.logger, decision.reason === "relaunch_interrupted" ? "warn" : "info", "relaunch_skipped", {
      task_arn: decision.taskArn,
      reason: decision.reason,
    });
    countOne(deps.metrics, "RelaunchSkipped");
    return;
  }
  const { taskArn, origin, modelName, trigger, jobId } = decision;
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.config.retrainingQueueUrl,
      MessageBody: JSON.stringify({ model_name: modelName, trigger, relaunch_of: { task_arn: taskArn, job_id: jobId } }),
      MessageAttributes: { [ORIGIN_ATTRIBUTE]: { DataType: "String", StringValue: origin } },
    }),
  );
  logStep(deps.logger, "info", "relaunch_requested", { task_arn: taskArn, origin_message_id: origin, model_name: modelName, job_id: jobId });
  countOne(deps.metrics, "SpotRelaunches");
}
