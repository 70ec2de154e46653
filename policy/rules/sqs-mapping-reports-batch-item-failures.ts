import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { depsOf, ofType } from "../lib/graph";
import { stringList } from "../lib/props";
import { EVENT_SOURCE_MAPPING, QUEUE } from "../lib/types";

function readsSqs(mapping: PolicyResource): boolean {
  const deps = depsOf(mapping, "eventSourceArn");
  if (deps.length > 0) return deps.some((d) => d.type === QUEUE);
  // No edge means the ARN is a literal (a queue outside the stack), so reading it is safe.
  const arn: unknown = mapping.props.eventSourceArn;
  return typeof arn === "string" && /^arn:[^:]+:sqs:/.test(arn);
}

/** Without partial batch responses one bad message makes the whole batch retry (and eventually park). */
export const sqsMappingReportsBatchItemFailures: StackValidationPolicy = {
  name: "sqs-mapping-reports-batch-item-failures",
  description: "Every Lambda event source mapping that reads an SQS queue sets functionResponseTypes to include ReportBatchItemFailures.",
  enforcementLevel: "mandatory",
  validateStack: (args, reportViolation) => {
    for (const mapping of ofType(args.resources, EVENT_SOURCE_MAPPING)) {
      if (!readsSqs(mapping)) continue;
      if (!stringList(mapping.props.functionResponseTypes).includes("ReportBatchItemFailures")) {
        reportViolation(
          `Event source mapping '${mapping.name}' reads SQS without functionResponseTypes ["ReportBatchItemFailures"]; ` +
            "a single failed message would retry the whole batch.",
          mapping.urn,
        );
      }
    }
  },
};
