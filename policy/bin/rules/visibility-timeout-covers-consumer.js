"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.visibilityTimeoutCoversConsumer = exports.DEFAULT_TIMEOUT_MULTIPLIER = void 0;
const graph_1 = require("../lib/graph");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
exports.DEFAULT_TIMEOUT_MULTIPLIER = 6;
/**
 * AWS's guidance for SQS-triggered Lambdas: a visibility timeout below several function timeouts
 * (plus the time a batch waits to fill) lets a message reappear while it is still being processed.
 */
exports.visibilityTimeoutCoversConsumer = {
    name: "visibility-timeout-covers-consumer",
    description: "For every SQS event source mapping, the queue's visibilityTimeoutSeconds (default 30) is at least " +
        "timeoutMultiplier × the function timeout (default 3) + maximumBatchingWindowInSeconds (default 0).",
    enforcementLevel: "mandatory",
    configSchema: {
        properties: {
            timeoutMultiplier: {
                type: "number",
                minimum: 1,
                default: exports.DEFAULT_TIMEOUT_MULTIPLIER,
                description: "How many function timeouts the visibility timeout must cover.",
            },
        },
    },
    validateStack: (args, reportViolation) => {
        const multiplier = args.getConfig().timeoutMultiplier ?? exports.DEFAULT_TIMEOUT_MULTIPLIER;
        for (const mapping of (0, graph_1.ofType)(args.resources, types_1.EVENT_SOURCE_MAPPING)) {
            const queues = (0, graph_1.depsOf)(mapping, "eventSourceArn", types_1.QUEUE);
            if (queues.length === 0)
                continue;
            const fns = (0, graph_1.depsOf)(mapping, "functionName", types_1.FUNCTION);
            const window = (0, props_1.numberOr)(mapping.props.maximumBatchingWindowInSeconds, 0);
            for (const queue of queues) {
                const visibility = (0, props_1.numberOr)(queue.props.visibilityTimeoutSeconds, types_1.SQS_DEFAULT_VISIBILITY_SECONDS);
                for (const fn of fns) {
                    const timeout = (0, props_1.numberOr)(fn.props.timeout, types_1.LAMBDA_DEFAULT_TIMEOUT_SECONDS);
                    const needed = multiplier * timeout + window;
                    if (visibility < needed) {
                        reportViolation(`Queue '${queue.name}' visibility timeout ${visibility}s is below ${needed}s ` +
                            `(${multiplier} × '${fn.name}' timeout ${timeout}s + batching window ${window}s of mapping ` +
                            `'${mapping.name}').`, queue.urn);
                    }
                }
            }
        }
    },
};
