"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.dlqConsumerCanStartGpu = exports.DEFAULT_REQUIRED_ACTIONS = void 0;
const graph_1 = require("../lib/graph");
const iam_1 = require("../lib/iam");
const props_1 = require("../lib/props");
const roles_1 = require("../lib/roles");
const types_1 = require("../lib/types");
exports.DEFAULT_REQUIRED_ACTIONS = ["ec2:StartInstances", "ec2:DescribeInstances"];
/**
 * The DLQ consumer's job is to wake the GPU instance so parked work can be replayed; without
 * these grants it fails only at runtime, when the queue is already backing up.
 */
exports.dlqConsumerCanStartGpu = {
    name: "dlq-consumer-can-start-gpu",
    description: "A Lambda consuming a dead-letter queue must be allowed ec2:StartInstances and ec2:DescribeInstances " +
        "(inline or attached policy) so it can start the GPU instance.",
    enforcementLevel: "mandatory",
    configSchema: {
        properties: {
            requiredActions: {
                type: "array",
                items: { type: "string" },
                default: exports.DEFAULT_REQUIRED_ACTIONS,
                description: "Actions a DLQ consumer's role must be granted.",
            },
        },
    },
    validateStack: (args, reportViolation) => {
        const config = args.getConfig();
        const required = config.requiredActions ? (0, props_1.stringList)(config.requiredActions) : exports.DEFAULT_REQUIRED_ACTIONS;
        const dlqs = (0, graph_1.dlqUrns)(args.resources);
        const consumers = new Map();
        for (const mapping of (0, graph_1.ofType)(args.resources, types_1.EVENT_SOURCE_MAPPING)) {
            const queues = (0, graph_1.depsOf)(mapping, "eventSourceArn", types_1.QUEUE).filter((q) => dlqs.has(q.urn));
            if (queues.length === 0)
                continue;
            const fns = (0, graph_1.depsOf)(mapping, "functionName", types_1.FUNCTION);
            if (fns.length === 0) {
                reportViolation(`Event source mapping '${mapping.name}' reads DLQ '${queues[0].name}' but its functionName is not ` +
                    "derived from a Function in this stack, so its permissions cannot be checked.", mapping.urn);
                continue;
            }
            for (const fn of fns) {
                const entry = consumers.get(fn.urn) ?? { fn, queues: [] };
                entry.queues.push(...queues.map((q) => q.name));
                consumers.set(fn.urn, entry);
            }
        }
        for (const { fn, queues } of consumers.values()) {
            const roles = (0, graph_1.uniqueByUrn)((0, graph_1.depsOf)(fn, "role", types_1.ROLE));
            if (roles.length === 0) {
                reportViolation(`DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) has a role that is not a Role in this stack; ` +
                    `cannot verify ${required.join(", ")}.`, fn.urn);
                continue;
            }
            const statements = roles.flatMap((role) => (0, roles_1.roleStatements)(args.resources, role));
            const missing = required.filter((action) => !(0, iam_1.isActionAllowed)(statements, action));
            if (missing.length > 0) {
                reportViolation(`DLQ consumer '${fn.name}' (reads ${queues.join(", ")}) cannot start the GPU instance: role ` +
                    `${roles.map((r) => `'${r.name}'`).join(", ")} is not allowed ${missing.join(", ")}.`, fn.urn);
            }
        }
    },
};
