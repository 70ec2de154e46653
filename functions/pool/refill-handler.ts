import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { EC2Client } from "@aws-sdk/client-ec2";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { logStep, type StepLogger } from "../shared/logger";
import type { MetricsSink } from "../shared/metrics";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import type { RefillConfig } from "./config";
import type { Clock } from "./pickup";
import { refillClass, type RefillOutcome } from "./refill-class";
import { parseRefillMessage } from "./refill-message";

export interface RefillHandlerDeps {
  ec2: EC2Client;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  clock: Clock;
  config: RefillConfig;
  logger: StepLogger;
  metrics: MetricsSink;
}


/**
 * The pool-refill consumer: one scheduled message per class. A malformed message, or one
 * naming a class this stack does not have, is quarantined to the refill DLQ; a failed run is
 * reported as a batch item failure and retried by SQS (the lease makes retries safe).
 * Several messages for one class in a batch (a backlog after an outage) share one run: a second
 * run would only repeat the count and send every idle instance's advert again.
 */
export function createRefillHandler(deps: RefillHandlerDeps): SqsBatchHandler {
  return async (event, context) => {
    const runs = new Map<string, Promise<RefillOutcome>>();
    const handleRecord = async (record: SQSRecord): Promise<void> => {
      const parsed = parseRefillMessage(record.body);
      if (!parsed.ok) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, parsed.reason, deps);
        return;
      }
      const cls = deps.config.classes.find((c) => c.name === parsed.message.resource_class);
      if (!cls) {
        await quarantine(deps.sqs, deps.config.quarantineQueueUrl, record, `unknown resource_class ${parsed.message.resource_class}`, deps);
        return;
      }
      let run = runs.get(cls.name);
      if (run) {
        logStep(deps.logger, "info", "refill_shared_run", { resource_class: cls.name, message_id: record.messageId });
      } else {
        run = refillClass(deps, cls, record.messageId);
        runs.set(cls.name, run);
      }
      // A failed run fails every message of its class, so each is retried.
      await run;
    };
    try {
      return await processSqsBatch(event, handleRecord, context);
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}
