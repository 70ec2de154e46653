import { PRODUCT } from "./product";

/**
 * Marker tags. The program sets them, the pack's rules and the local runtime read them. A tag is a
 * literal on a first preview, when every ARN is still unknown, which is why the rules key on tags.
 */

/** Every resource: the stack's environment (`dev`, `prod`) and Pulumi stack name. */
export const ENVIRONMENT_TAG = `${PRODUCT}:environment`;
export const STACK_TAG = `${PRODUCT}:stack`;
/** Every resource of a part: `ingest`, `retraining`, `fleet`, `worker`, `pool`. */
export const PART_TAG = `${PRODUCT}:part`;

/** What a queue is for. */
export const QUEUE_ROLE_TAG = `${PRODUCT}:queue-role`;
export const QUEUE_ROLES = {
  /** A queue that redrives to a DLQ. */
  source: "source",
  /** A dead-letter queue (ManagedQueue DLQs and scheduler DLQs). */
  dlq: "dlq",
  /** A terminal sink for malformed messages that nobody consumes. */
  quarantine: "quarantine",
} as const;
export type QueueRole = (typeof QUEUE_ROLES)[keyof typeof QUEUE_ROLES];

/**
 * A source queue's maxReceiveCount, as a literal: its redrive policy is a JSON string that is
 * unknown on a first preview (it holds the DLQ's ARN), so the retention rule reads this instead.
 */
export const MAX_RECEIVE_COUNT_TAG = `${PRODUCT}:max-receive-count`;

/**
 * A container whose stack config turned a hardening default off carries this Docker label, listing
 * what is off (`readonlyRootFilesystem`, `user`, `capabilities`): the waiver is in the container
 * definition itself, where a reviewer and the policy pack see it, on every preview.
 */
export const HARDENING_WAIVED_LABEL = `${PRODUCT}.hardening-waived`;
export const HARDENING_CHECKS = ["readonlyRootFilesystem", "user", "capabilities"] as const;
export type HardeningCheck = (typeof HARDENING_CHECKS)[number];

/** What a DynamoDB table holds; `jobs` tables hold job records and must expire them (TTL). */
export const TABLE_ROLE_TAG = `${PRODUCT}:table-role`;
export const JOBS_TABLE_ROLE = "jobs";

/**
 * A task definition whose containers hold ECS task scale-in protection carries this tag, and its
 * containers this environment variable, both with the mode below.
 */
export const TASK_PROTECTION_TAG = `${PRODUCT}:task-protection`;
export const TASK_PROTECTION_ENV = "ENCACHE_TASK_PROTECTION";
export const TASK_PROTECTION_MODE = "agent-endpoint";
