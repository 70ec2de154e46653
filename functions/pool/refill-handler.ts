import type { SQSRecord } from "aws-lambda";
import { logStep } from "../shared/logger";
import { quarantine } from "../shared/quarantine";
import { processSqsBatch, type SqsBatchHandler } from "../shared/sqs";
import { refillClass, type RefillDeps, type RefillOutcome } from "./refill-class";
import { parseRefillMessage } from "./refill-message";

/** The handler needs exactly what refilling one class needs. */
export type RefillHandlerDeps = RefillDeps;

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
