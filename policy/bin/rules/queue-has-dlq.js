"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.queueHasDlq = void 0;
const graph_1 = require("../lib/graph");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
/** A literal redrive policy naming an existing (out-of-stack) DLQ by ARN also counts. */
function hasLiteralDeadLetterTarget(queue) {
    const raw = queue.props.redrivePolicy;
    if (raw === undefined || raw === null || raw === "")
        return false;
    let parsed = raw;
    if (typeof raw === "string") {
        try {
            parsed = JSON.parse(raw);
        }
        catch {
            return false;
        }
    }
    return (0, props_1.isRecord)(parsed) && typeof parsed.deadLetterTargetArn === "string" && parsed.deadLetterTargetArn !== "";
}
/** Nothing is lost: every message is processed, retried or parked in a DLQ. */
exports.queueHasDlq = {
    name: "queue-has-dlq",
    description: "Every SQS queue that is not itself a DLQ redrives to a DLQ. A queue tagged encache:queue-role=quarantine " +
        "is a terminal sink instead, and must have no event source mapping reading it.",
    enforcementLevel: "mandatory",
    validateStack: (args, reportViolation) => {
        const dlqs = (0, graph_1.dlqUrns)(args.resources);
        for (const queue of (0, graph_1.ofType)(args.resources, types_1.QUEUE)) {
            if (dlqs.has(queue.urn))
                continue;
            if ((0, graph_1.isQuarantine)(queue)) {
                for (const mapping of (0, graph_1.mappingsReading)(args.resources, queue)) {
                    reportViolation(`Quarantine queue '${queue.name}' is a terminal sink but event source mapping '${mapping.name}' reads it; ` +
                        "quarantined messages must wait for an operator, not be consumed.", queue.urn);
                }
                continue;
            }
            // The literal is read only when no DLQ edge exists: an edge means the value is built from the
            // DLQ's ARN and is unknown on a first preview.
            if ((0, graph_1.dlqTargets)(queue).length > 0 || hasLiteralDeadLetterTarget(queue))
                continue;
            reportViolation(`Queue '${queue.name}' has no redrive policy to a dead-letter queue; failed messages would be lost ` +
                "after the retention period.", queue.urn);
        }
    },
};
