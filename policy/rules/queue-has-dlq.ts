import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { dlqTargets, dlqUrns, isTerminalSink, mappingsReading, ofType } from "../lib/graph";
import { isRecord } from "../lib/props";
import { QUEUE } from "../lib/types";

/** A literal redrive policy naming an existing (out-of-stack) DLQ by ARN also counts. */
function hasLiteralDeadLetterTarget(queue: PolicyResource): boolean {
  const raw: unknown = queue.props.redrivePolicy;
  if (raw === undefined || raw === null || raw === "") return false;
  let parsed: unknown = raw;
  if (typeof raw === "string") {
    try {
      parsed = JSON.parse(raw);
    } catch {
      return false;
    }
  }
  return isRecord(parsed) && typeof parsed.deadLetterTargetArn === "string" && parsed.deadLetterTargetArn !== "";
}

/** Nothing is lost: every message is processed, retried or parked in a DLQ. */
export const queueHasDlq: StackValidationPolicy = {
  name: "queue-has-dlq",
  description:
    "Every SQS queue that is not itself a DLQ redrives to a DLQ. A queue tagged encache:queue-role=quarantine " +
    "(or =dlq, for scheduler dead-letter queues) is a terminal sink instead, and must have no event source mapping reading it.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const dlqs = dlqUrns(args.resources);
    for (const queue of ofType(args.resources, QUEUE)) {
      if (dlqs.has(queue.urn)) continue;
      if (isTerminalSink(queue)) {
        for (const mapping of mappingsReading(args.resources, queue)) {
          reportViolation(
            `Terminal queue '${queue.name}' (quarantine or DLQ sink) is a terminal sink but event source mapping '${mapping.name}' reads it; ` +
              "quarantined messages must wait for an operator, not be consumed.",
            queue.urn,
          );
        }
        continue;
      }
      // The literal is read only when no DLQ edge exists: an edge means the value is built from the
      // DLQ's ARN and is unknown on a first preview.
      if (dlqTargets(queue).length > 0 || hasLiteralDeadLetterTarget(queue)) continue;
      reportViolation(
        `Queue '${queue.name}' has no redrive policy to a dead-letter queue; failed messages would be lost ` +
          "after the retention period.",
        queue.urn,
      );
    }
  },
};
