import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { DYNAMODB_TABLE } from "../lib/types";

/**
 * Every table the program declares encrypts with a KMS key in the account (`serverSideEncryption.enabled`;
 * the AWS-managed `aws/dynamodb` key unless a key ARN is given), so the key of the job records,
 * launcher state and pool claims can be seen and its use audited in CloudTrail; DynamoDB's default,
 * an AWS-owned key, can be neither. Pulumi's AWS pack (`@pulumi/awsguard`) holds the same under
 * this name. Judged on inputs: a literal the program sets (infra/components/table.ts).
 */
export const dynamodbTableEncryptionEnabled: ResourceValidationPolicy = {
  name: "dynamodb-table-encryption-enabled",
  description: "DynamoDB tables enable server-side encryption with a KMS key (serverSideEncryption.enabled = true), not only DynamoDB's default AWS-owned key.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== DYNAMODB_TABLE) args.notApplicable(`applies to ${DYNAMODB_TABLE}`);
    const sse: unknown = args.props.serverSideEncryption;
    if (!isRecord(sse) || sse.enabled !== true) {
      reportViolation(`Table '${args.name}' must enable server-side encryption with a KMS key: set serverSideEncryption.enabled to true.`);
    }
  },
};
