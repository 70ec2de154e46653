import { VISIBILITY_TIMEOUT_MULTIPLIER } from "../contract";
import type { StackValidationPolicy } from "@pulumi/policy";
import { depsOf, ofType } from "../lib/graph";
import { numberOr } from "../lib/props";
import { EVENT_SOURCE_MAPPING, FUNCTION, LAMBDA_DEFAULT_TIMEOUT_SECONDS, QUEUE, SQS_DEFAULT_VISIBILITY_SECONDS } from "../lib/types";

/** The program enforces the same multiplier on every consumer it declares. */
export const DEFAULT_TIMEOUT_MULTIPLIER = VISIBILITY_TIMEOUT_MULTIPLIER;

interface Config {
  timeoutMultiplier?: number;
}

/**
 * AWS's guidance for SQS-triggered Lambdas: a visibility timeout below several function timeouts
 * (plus the time a batch waits to fill) lets a message reappear while it is still being processed.
 */
export const visibilityTimeoutCoversConsumer: StackValidationPolicy = {
  name: "visibility-timeout-covers-consumer",
  description:
    "For every SQS event source mapping, the queue's visibilityTimeoutSeconds (default 30) is at least " +
    "timeoutMultiplier × the function timeout (default 3) + maximumBatchingWindowInSeconds (default 0).",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      timeoutMultiplier: {
        type: "number",
        minimum: 1,
        default: DEFAULT_TIMEOUT_MULTIPLIER,
        description: "How many function timeouts the visibility timeout must cover.",
      },
    },
  },
  validateStack: (args, reportViolation) => {
    const multiplier = args.getConfig<Config>().timeoutMultiplier ?? DEFAULT_TIMEOUT_MULTIPLIER;
    for (const mapping of ofType(args.resources, EVENT_SOURCE_MAPPING)) {
      const queues = depsOf(mapping, "eventSourceArn", QUEUE);
      if (queues.length === 0) continue;
      const fns = depsOf(mapping, "functionName", FUNCTION);
      const window = numberOr(mapping.props.maximumBatchingWindowInSeconds, 0);
      for (const queue of queues) {
        const visibility = numberOr(queue.props.visibilityTimeoutSeconds, SQS_DEFAULT_VISIBILITY_SECONDS);
        for (const fn of fns) {
          const timeout = numberOr(fn.props.timeout, LAMBDA_DEFAULT_TIMEOUT_SECONDS);
          const needed = multiplier * timeout + window;
          if (visibility < needed) {
            reportViolation(
              `Queue '${queue.name}' visibility timeout ${visibility}s is below ${needed}s ` +
                `(${multiplier} × '${fn.name}' timeout ${timeout}s + batching window ${window}s of mapping ` +
                `'${mapping.name}').`,
              queue.urn,
            );
          }
        }
      }
    }
  },
};
