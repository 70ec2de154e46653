import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { DYNAMODB_TABLE } from "../lib/types";

/** Job records, launcher state and pool claims are the platform's memory: a bad write must be undoable. */
export const dynamodbTablePitr: ResourceValidationPolicy = {
  name: "dynamodb-table-pitr",
  description: "DynamoDB tables enable point-in-time recovery (pointInTimeRecovery.enabled = true).",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== DYNAMODB_TABLE) args.notApplicable(`applies to ${DYNAMODB_TABLE}`);
    const pitr: unknown = args.props.pointInTimeRecovery;
    if (!isRecord(pitr) || pitr.enabled !== true) {
      reportViolation(`Table '${args.name}' must enable point-in-time recovery: set pointInTimeRecovery.enabled to true.`);
    }
  },
};
