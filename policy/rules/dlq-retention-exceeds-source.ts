import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { dlqTargets, ofType } from "../lib/graph";
import { isRecord, numberOr, readIfKnown } from "../lib/props";
import { MAX_RECEIVE_COUNT_TAG } from "../contract";
import { QUEUE, SQS_DEFAULT_RETENTION_SECONDS } from "../lib/types";

export const DEFAULT_MIN_MAX_RECEIVE_COUNT = 2;

interface Config {
  minMaxReceiveCount?: number;
}

function retention(queue: PolicyResource): number {
  return numberOr(queue.props.messageRetentionSeconds, SQS_DEFAULT_RETENTION_SECONDS);
}

/**
 * The redrive policy is usually built from the DLQ's ARN, so on a first preview it is unknown.
 * Then the literal `encache:max-receive-count` tag stands in for it; without either, only the
 * retention check runs.
 */
function maxReceiveCount(source: PolicyResource): number | undefined {
  const raw = readIfKnown((): unknown => source.props.redrivePolicy);
  if (raw === undefined || raw === null || raw === "") {
    const tags: unknown = readIfKnown((): unknown => source.props.tags);
    const tagged = isRecord(tags) ? tags[MAX_RECEIVE_COUNT_TAG] : undefined;
    return typeof tagged === "string" && tagged !== "" ? numberOr(tagged, 0) : undefined;
  }
  let parsed: unknown = raw;
  if (typeof raw === "string") {
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new Error(`queue '${source.name}': redrivePolicy is not valid JSON`);
    }
  }
  if (!isRecord(parsed) || parsed.maxReceiveCount === undefined) return undefined;
  return numberOr(parsed.maxReceiveCount, 0);
}

/**
 * SQS keeps a message's original enqueue time when it moves to a standard DLQ, so a DLQ that
 * keeps messages no longer than its source drops them on arrival.
 */
export const dlqRetentionExceedsSource: StackValidationPolicy = {
  name: "dlq-retention-exceeds-source",
  description:
    "A DLQ's messageRetentionSeconds (default 345600) is strictly greater than each source queue's, and the " + "source's redrive maxReceiveCount is never 1.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      minMaxReceiveCount: {
        type: "integer",
        minimum: 1,
        default: DEFAULT_MIN_MAX_RECEIVE_COUNT,
        description: "Smallest maxReceiveCount accepted in a redrive policy.",
      },
    },
  },
  validateStack: (args, reportViolation) => {
    const minCount = args.getConfig<Config>().minMaxReceiveCount ?? DEFAULT_MIN_MAX_RECEIVE_COUNT;
    for (const source of ofType(args.resources, QUEUE)) {
      const dlqs = dlqTargets(source);
      if (dlqs.length === 0) continue;
      const sourceRetention = retention(source);
      for (const dlq of dlqs) {
        const dlqRetention = retention(dlq);
        if (dlqRetention <= sourceRetention) {
          reportViolation(
            `DLQ '${dlq.name}' keeps messages ${dlqRetention}s, not longer than its source '${source.name}' ` +
              `(${sourceRetention}s); moved messages would expire on arrival.`,
            dlq.urn,
          );
        }
      }
      const count = maxReceiveCount(source);
      if (count !== undefined && count < minCount) {
        reportViolation(
          `Queue '${source.name}' redrives after maxReceiveCount ${count}; use at least ${minCount} so one ` + "transient failure does not park a message.",
          source.urn,
        );
      }
    }
  },
};
