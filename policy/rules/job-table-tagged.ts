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
 * unknown `environment`/`variables` object throws; then the function is skipped.
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

/** The function and env var through which a function reads `table` as its jobs table, or undefined. */
export function jobsTableReader(resources: readonly PolicyResource[], table: PolicyResource, keys: readonly string[]): string | undefined {
  for (const fn of ofType(resources, FUNCTION)) {
    if (!depsOf(fn, "environment").some((d) => d.urn === table.urn)) continue;
    const key = envKeys(fn).find((k) => keys.includes(k));
    if (key) return `function '${fn.name}' env ${key}`;
  }
  return undefined;
}

/**
 * The graph half of "job records expire" (job-table-ttl holds the literal half on the tag). A
 * table that a Lambda function is handed under a jobs-table env var holds job records whatever its
 * tags say; requiring the tag there means dropping it cannot hide the table from job-table-ttl.
 * Decided on a first preview: tags are literal, env var names too, and the edge is a
 * propertyDependency.
 */
export const jobTableTagged: StackValidationPolicy = {
  name: "job-table-tagged",
  description:
    `A DynamoDB table passed to a Lambda function under a jobs-table env var (such as ${DEFAULT_JOBS_TABLE_ENV_KEYS.join(", ")}) ` +
    `is tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}, so job-table-ttl holds it to TTL.`,
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
      const tags: unknown = table.props.tags;
      if (isRecord(tags) && tags[TABLE_ROLE_TAG] === JOBS_TABLE_ROLE) continue;
      const reader = jobsTableReader(args.resources, table, keys);
      if (reader) {
        reportViolation(
          `Job table '${table.name}' (${reader}) holds job records but is not tagged ${TABLE_ROLE_TAG}=${JOBS_TABLE_ROLE}, so job-table-ttl cannot hold it to TTL: tag it.`,
          table.urn,
        );
      }
    }
  },
};
