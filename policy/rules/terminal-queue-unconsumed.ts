import type { StackValidationPolicy } from "@pulumi/policy";
import { dlqUrns, isTerminalSink, mappingsReading, ofType } from "../lib/graph";
import { QUEUE } from "../lib/types";

/**
 * The graph half of "nothing is lost" (queue-has-dlq holds the literal half). A queue that
 * queue-has-dlq lets through by its role tag is a DLQ some queue redrives into, or a terminal sink
 * (a quarantine, a Scheduler dead-letter queue) whose messages wait for an operator. Consuming a
 * sink would drop them with no second chance; and a source queue tagged as a sink to escape the DLQ
 * rule shows up here the moment anything reads it. Edges come from propertyDependencies, known on a
 * first preview.
 */
export const terminalQueueUnconsumed: StackValidationPolicy = {
  name: "terminal-queue-unconsumed",
  description: "A queue tagged encache:queue-role=quarantine, or =dlq without a queue redriving into it, is a terminal sink: no event source mapping reads it.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    const dlqs = dlqUrns(args.resources);
    for (const queue of ofType(args.resources, QUEUE)) {
      if (dlqs.has(queue.urn) || !isTerminalSink(queue)) continue;
      for (const mapping of mappingsReading(args.resources, queue)) {
        reportViolation(
          `Terminal queue '${queue.name}' (quarantine or DLQ sink) is a terminal sink but event source mapping '${mapping.name}' reads it; ` +
            "quarantined messages must wait for an operator, not be consumed.",
          queue.urn,
        );
      }
    }
  },
};
