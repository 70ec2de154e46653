import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord } from "../lib/props";
import { JOBS_TABLE_ROLE, TABLE_ROLE_TAG } from "../contract";
import { DYNAMODB_TABLE } from "../lib/types";

/**
 * Job records are written for every job and are only useful for days. A table holding them must
 * expire them with TTL; a housekeeping task alone lets the table grow whenever that task falls
 * behind. A literal fact of the table's inputs, judged as a resource rule: the `ttl` output is
 * Optional+Computed, unknown on a first preview when left unset. Which table holds job records is
 * the graph's to say too: `job-table-tagged` holds every table a function uses as its jobs table
 * to this tag.
 */
export const jobTableTtl: ResourceValidationPolicy = {
  name: "job-table-ttl",
  description: `DynamoDB tables tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE} declare TTL (ttl.enabled = true with an attributeName).`,
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== DYNAMODB_TABLE) args.notApplicable(`applies to ${DYNAMODB_TABLE}`);
    const tags: unknown = args.props.tags;
    if (!isRecord(tags) || tags[TABLE_ROLE_TAG] !== JOBS_TABLE_ROLE) return;
    const ttl: unknown = args.props.ttl;
    if (!isRecord(ttl) || ttl.enabled !== true || typeof ttl.attributeName !== "string" || ttl.attributeName === "") {
      reportViolation(
        `Job table '${args.name}' (tag ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}) must expire its records: set ttl.enabled to true and ttl.attributeName (e.g. expires_at).`,
      );
    }
  },
};
