"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.dlqHasDepthAlarm = exports.DEFAULT_DEPTH_METRIC = void 0;
const graph_1 = require("../lib/graph");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
exports.DEFAULT_DEPTH_METRIC = "ApproximateNumberOfMessagesVisible";
/** Both a plain metric alarm and a metric-math alarm whose queries use the metric count. */
function alarmWatches(props, metricName) {
    if (props.metricName === metricName)
        return true;
    return (0, props_1.records)(props.metricQueries).some((q) => {
        const metric = q.metric;
        return typeof metric === "object" && metric !== null && metric.metricName === metricName;
    });
}
/** A message parked in a DLQ (or quarantine) is only "not lost" if someone is told it is there. */
exports.dlqHasDepthAlarm = {
    name: "dlq-has-depth-alarm",
    description: "Every DLQ and quarantine queue has a CloudWatch MetricAlarm on ApproximateNumberOfMessagesVisible whose inputs " +
        "(e.g. dimensions) are derived from the queue.",
    enforcementLevel: "advisory",
    configSchema: {
        properties: {
            metricName: {
                type: "string",
                default: exports.DEFAULT_DEPTH_METRIC,
                description: "The SQS metric a depth alarm must watch.",
            },
        },
    },
    validateStack: (args, reportViolation) => {
        const metricName = args.getConfig().metricName ?? exports.DEFAULT_DEPTH_METRIC;
        const dlqs = (0, graph_1.dlqUrns)(args.resources);
        for (const queue of (0, graph_1.ofType)(args.resources, types_1.QUEUE)) {
            const quarantine = (0, graph_1.isQuarantine)(queue);
            if (!dlqs.has(queue.urn) && !quarantine)
                continue;
            const alarmed = (0, graph_1.alarmsOn)(args.resources, queue).some((a) => alarmWatches(a.props, metricName));
            if (!alarmed) {
                reportViolation(`${quarantine ? "Quarantine queue" : "DLQ"} '${queue.name}' has no MetricAlarm on ${metricName} ` +
                    "derived from it; parked messages would go unnoticed.", queue.urn);
            }
        }
    },
};
