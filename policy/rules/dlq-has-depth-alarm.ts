import type { StackValidationPolicy } from "@pulumi/policy";
import { alarmsOn, dlqUrns, isTerminalSink, ofType } from "../lib/graph";
import { records } from "../lib/props";
import { QUEUE } from "../lib/types";

export const DEFAULT_DEPTH_METRIC = "ApproximateNumberOfMessagesVisible";

interface Config {
  metricName?: string;
}

/** Both a plain metric alarm and a metric-math alarm whose queries use the metric count. */
function alarmWatches(props: Record<string, unknown>, metricName: string): boolean {
  if (props.metricName === metricName) return true;
  return records(props.metricQueries).some((q) => {
    const metric = q.metric;
    return typeof metric === "object" && metric !== null && (metric as Record<string, unknown>).metricName === metricName;
  });
}

/** A message parked in a DLQ (or quarantine) is only "not lost" if someone is told it is there. */
export const dlqHasDepthAlarm: StackValidationPolicy = {
  name: "dlq-has-depth-alarm",
  description:
    "Every DLQ and quarantine queue has a CloudWatch MetricAlarm on ApproximateNumberOfMessagesVisible whose inputs " +
    "(e.g. dimensions) are derived from the queue.",
  enforcementLevel: "advisory",
  configSchema: {
    properties: {
      metricName: {
        type: "string",
        default: DEFAULT_DEPTH_METRIC,
        description: "The SQS metric a depth alarm must watch.",
      },
    },
  },
  validateStack: (args, reportViolation) => {
    const metricName = args.getConfig<Config>().metricName ?? DEFAULT_DEPTH_METRIC;
    const dlqs = dlqUrns(args.resources);
    for (const queue of ofType(args.resources, QUEUE)) {
      const quarantine = isTerminalSink(queue);
      if (!dlqs.has(queue.urn) && !quarantine) continue;
      const alarmed = alarmsOn(args.resources, queue).some((a) => alarmWatches(a.props, metricName));
      if (!alarmed) {
        reportViolation(
          `${quarantine ? "Terminal queue" : "DLQ"} '${queue.name}' has no MetricAlarm on ${metricName} ` +
            "derived from it; parked messages would go unnoticed.",
          queue.urn,
        );
      }
    }
  },
};
