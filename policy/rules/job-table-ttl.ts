import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { DYNAMODB_TABLE, JOBS_TABLE_ROLE, TABLE_ROLE_TAG } from "../lib/types";

/**
 * Job records are written for every job and are only useful for days. A table the platform
 * writes them to declares itself with the tag `encache:table-role=jobs`, and must then expire
 * them with TTL; a housekeeping task alone lets the table grow whenever that task falls behind.
 */
export const jobTableTtl: ResourceValidationPolicy = {
  name: "job-table-ttl",
  description: `DynamoDB tables tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE} enable TTL (ttl.enabled = true with an attributeName).`,
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== DYNAMODB_TABLE) args.notApplicable(`applies to ${DYNAMODB_TABLE}`);
    const tags: unknown = args.props.tags;
    if (!isRecord(tags) || tags[TABLE_ROLE_TAG] !== JOBS_TABLE_ROLE) {
      args.notApplicable(`applies to tables tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}`);
    }
    const ttl: unknown = args.props.ttl;
    if (!isRecord(ttl) || ttl.enabled !== true || typeof ttl.attributeName !== "string" || ttl.attributeName === "") {
      reportViolation(`Job table '${args.name}' must expire its records: set ttl.enabled to true and ttl.attributeName (e.g. expires_at).`);
    }
  },
};
