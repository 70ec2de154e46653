import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { depsOf, ofType } from "../lib/graph";
import { isRecord, readIfKnown, stringList } from "../lib/props";
import { JOBS_TABLE_ROLE, TABLE_ROLE_TAG } from "../contract";
import { DYNAMODB_TABLE, FUNCTION } from "../lib/types";

/** Env var names that hand a function the table it writes job records to. */
export const DEFAULT_JOBS_TABLE_ENV_KEYS = ["RUNS_FLEET_JOBS_TABLE"];

interface Config {
  envKeys?: string[];
}

/**
 * The env var NAMES of a function. Names are literal in the program even on a first preview,
 * when the values (table names) are still unknown: the policy SDK's unknownCheckingProxy only
 * traps property reads, and `Object.keys` enumerates without reading a value. Only a wholly
 * unknown `environment`/`variables` object throws; then the function is skipped (the tag still
 * marks the table).
 */
export function envKeys(fn: PolicyResource): string[] {
  return (
    readIfKnown(() => {
      const env: unknown = fn.props.environment;
      if (!isRecord(env)) return [];
      const vars: unknown = env.variables;
      return isRecord(vars) ? Object.keys(vars) : [];
    }) ?? []
  );
}

/**
 * Why `table` holds job records, or undefined: the `encache:table-role=jobs` tag, or (the
 * structural marker, which dropping the tag cannot hide) a Lambda function whose environment is
 * derived from the table (propertyDependencies) under one of the jobs-table env var names.
 */
export function jobsTableMarker(resources: readonly PolicyResource[], table: PolicyResource, keys: readonly string[]): string | undefined {
  const tags: unknown = table.props.tags;
  if (isRecord(tags) && tags[TABLE_ROLE_TAG] === JOBS_TABLE_ROLE) return `tag ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}`;
  for (const fn of ofType(resources, FUNCTION)) {
    if (!depsOf(fn, "environment").some((d) => d.urn === table.urn)) continue;
    const key = envKeys(fn).find((k) => keys.includes(k));
    if (key) return `function '${fn.name}' env ${key}`;
  }
  return undefined;
}

/**
 * Job records are written for every job and are only useful for days. A table holding them must
 * expire them with TTL; a housekeeping task alone lets the table grow whenever that task falls
 * behind. A stack policy, so a table is recognised by what reads it, not only by its own tag.
 */
export const jobTableTtl: StackValidationPolicy = {
  name: "job-table-ttl",
  description:
    `DynamoDB tables holding job records (tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}, or passed to a Lambda function ` +
    `under a jobs-table env var such as ${DEFAULT_JOBS_TABLE_ENV_KEYS.join(", ")}) enable TTL (ttl.enabled = true with an attributeName).`,
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      envKeys: {
        type: "array",
        items: { type: "string" },
        default: DEFAULT_JOBS_TABLE_ENV_KEYS,
        description: "Lambda env var names whose value, derived from a table, marks that table as a jobs table.",
      },
    },
  },
  validateStack: (args, reportViolation) => {
    const config = args.getConfig<Config>();
    const keys = config.envKeys ? stringList(config.envKeys) : DEFAULT_JOBS_TABLE_ENV_KEYS;
    for (const table of ofType(args.resources, DYNAMODB_TABLE)) {
      const marker = jobsTableMarker(args.resources, table, keys);
      if (!marker) continue;
      const ttl: unknown = table.props.ttl;
      if (!isRecord(ttl) || ttl.enabled !== true || typeof ttl.attributeName !== "string" || ttl.attributeName === "") {
        reportViolation(
          `Job table '${table.name}' (${marker}) must expire its records: set ttl.enabled to true and ttl.attributeName (e.g. expires_at).`,
          table.urn,
        );
      }
    }
  },
};
