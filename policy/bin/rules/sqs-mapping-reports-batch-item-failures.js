"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.sqsMappingReportsBatchItemFailures = void 0;
const graph_1 = require("../lib/graph");
const props_1 = require("../lib/props");
const types_1 = require("../lib/types");
function readsSqs(mapping) {
    const deps = (0, graph_1.depsOf)(mapping, "eventSourceArn");
    if (deps.length > 0)
        return deps.some((d) => d.type === types_1.QUEUE);
    // No edge means the ARN is a literal (a queue outside the stack), so reading it is safe.
    const arn = mapping.props.eventSourceArn;
    return typeof arn === "string" && /^arn:[^:]+:sqs:/.test(arn);
}
/** Without partial batch responses one bad message makes the whole batch retry (and eventually park). */
exports.sqsMappingReportsBatchItemFailures = {
    name: "sqs-mapping-reports-batch-item-failures",
    description: "Every Lambda event source mapping that reads an SQS queue sets functionResponseTypes to include ReportBatchItemFailures.",
    enforcementLevel: "mandatory",
    validateStack: (args, reportViolation) => {
        for (const mapping of (0, graph_1.ofType)(args.resources, types_1.EVENT_SOURCE_MAPPING)) {
            if (!readsSqs(mapping))
                continue;
            if (!(0, props_1.stringList)(mapping.props.functionResponseTypes).includes("ReportBatchItemFailures")) {
                reportViolation(`Event source mapping '${mapping.name}' reads SQS without functionResponseTypes ["ReportBatchItemFailures"]; ` +
                    "a single failed message would retry the whole batch.", mapping.urn);
            }
        }
    },
};
