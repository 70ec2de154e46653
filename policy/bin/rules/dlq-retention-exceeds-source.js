"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.dlqRetentionExceedsSource = exports.DEFAULT_MIN_MAX_RECEIVE_COUNT = void 0;
const graph_1 = require("../lib/graph");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
exports.DEFAULT_MIN_MAX_RECEIVE_COUNT = 2;
function retention(queue) {
    return (0, props_1.numberOr)(queue.props.messageRetentionSeconds, types_1.SQS_DEFAULT_RETENTION_SECONDS);
}
/**
 * The redrive policy is usually built from the DLQ's ARN, so on a first preview it is unknown;
 * maxReceiveCount is checked only once it is known, and the retention check still runs.
 */
function maxReceiveCount(source) {
    const raw = (0, props_1.readIfKnown)(() => source.props.redrivePolicy);
    if (raw === undefined || raw === null || raw === "")
        return undefined;
    let parsed = raw;
    if (typeof raw === "string") {
        try {
            parsed = JSON.parse(raw);
        }
        catch {
            throw new Error(`queue '${source.name}': redrivePolicy is not valid JSON`);
        }
    }
    if (!(0, props_1.isRecord)(parsed) || parsed.maxReceiveCount === undefined)
        return undefined;
    return (0, props_1.numberOr)(parsed.maxReceiveCount, 0);
}
/**
 * SQS keeps a message's original enqueue time when it moves to a standard DLQ, so a DLQ that
 * keeps messages no longer than its source drops them on arrival.
 */
exports.dlqRetentionExceedsSource = {
    name: "dlq-retention-exceeds-source",
    description: "A DLQ's messageRetentionSeconds (default 345600) is strictly greater than each source queue's, and the " +
        "source's redrive maxReceiveCount is never 1.",
    enforcementLevel: "mandatory",
    configSchema: {
        properties: {
            minMaxReceiveCount: {
                type: "integer",
                minimum: 1,
                default: exports.DEFAULT_MIN_MAX_RECEIVE_COUNT,
                description: "Smallest maxReceiveCount accepted in a redrive policy.",
            },
        },
    },
    validateStack: (args, reportViolation) => {
        const minCount = args.getConfig().minMaxReceiveCount ?? exports.DEFAULT_MIN_MAX_RECEIVE_COUNT;
        for (const source of (0, graph_1.ofType)(args.resources, types_1.QUEUE)) {
            const dlqs = (0, graph_1.dlqTargets)(source);
            if (dlqs.length === 0)
                continue;
            const sourceRetention = retention(source);
            for (const dlq of dlqs) {
                const dlqRetention = retention(dlq);
                if (dlqRetention <= sourceRetention) {
                    reportViolation(`DLQ '${dlq.name}' keeps messages ${dlqRetention}s, not longer than its source '${source.name}' ` +
                        `(${sourceRetention}s); moved messages would expire on arrival.`, dlq.urn);
                }
            }
            const count = maxReceiveCount(source);
            if (count !== undefined && count < minCount) {
                reportViolation(`Queue '${source.name}' redrives after maxReceiveCount ${count}; use at least ${minCount} so one ` +
                    "transient failure does not park a message.", source.urn);
            }
        }
    },
};
