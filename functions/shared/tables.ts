/**
 * DynamoDB table shapes: the program declares these keys and indexes, the functions read and
 * write them, the local runtime creates them in moto.
 */

/** Part 3 (fleet): one item per job. */
export const JOBS_TABLE = {
  hashKey: "job_id",
  /** Epoch seconds; DynamoDB's TTL deletes the item after it. */
  ttlAttribute: "expires_at",
  /**
   * "Completed before a cutoff" as a Query. Partition: the terminal status (4 values), sort:
   * completed_at (RFC 3339, UTC, lexically ordered). Sparse: running/queued jobs carry no
   * completed_at, so they are not in the index at all.
   */
  completedIndex: { name: "status-completed_at-index", hashKey: "status", rangeKey: "completed_at" },
  /** "Which jobs ran on this instance" (the orphan and idle checks); projects the status. */
  instanceIndex: { name: "instance_id-index", hashKey: "instance_id" },
  /**
   * "Which instances have a queued or running job", read in pages by the orphan sweep (one Query
   * per active status) instead of one Query per candidate. Sparse: a job without an instance yet
   * is on no instance, so it is rightly absent.
   */
  activeIndex: { name: "status-instance_id-index", hashKey: "status", rangeKey: "instance_id" },
  /** Who completed the job: the termination message id (stable across redeliveries). */
  completedByAttribute: "completed_by",
  /**
   * Which attempt of the completing write applied (a token per attempt, the same in the SDK's
   * retries of it): the one that finds its own token completed the job and emits its metrics.
   */
  completionAttemptAttribute: "completion_attempt",
  /**
   * Who logs the completion and emits its metrics: `pending` once the job is completed, then the
   * delivery (`<message id> <attempt token>`) whose conditional claim applied.
   */
  completionReportedByAttribute: "completion_reported_by",
  /** Epoch seconds of that claim: an unfinished claim older than Lambda's longest timeout may be taken over. */
  completionReportClaimedAtAttribute: "completion_report_claimed_at",
  /** Epoch seconds by which that claimant's invocation has certainly ended (its Lambda deadline): its own message's redelivery waits for it. */
  completionReportDeadlineAttribute: "completion_report_deadline",
  /** The claimant, written after its log line and metrics: the report is done, never taken over. */
  completionReportedAttribute: "completion_reported",
  /**
   * The housekeeping sweeps' cursors are items of this table too, keyed `<prefix><task>`: no status,
   * instance or completion time, so they are in none of the (sparse) indexes the sweeps query.
   */
  sweepCursorKeyPrefix: "housekeeping-cursor#",
} as const;

/** Part 2 (retraining): one item per model (its last launch) plus the capacity lease items. */
export const RETRAINING_STATE_TABLE = { hashKey: "model_name" } as const;

/**
 * Part 2 (retraining): one launch intent per origin message id (functions/retraining/intent.ts),
 * expiring by TTL once no copy of the message can come back.
 */
export const RETRAINING_INTENT_TABLE = { hashKey: "origin_message_id", ttlAttribute: "expires_at" } as const;

/** Part 5 (pool): one claim lock or refill lease per key, expiring by TTL. */
export const CLAIM_TABLE = { hashKey: "instance_id", ttlAttribute: "expires_at" } as const;

/**
 * Part 4 (worker): the job ledger, one item per job (its job id, or the message id where there is
 * none): the lease that lets one task run it, then its completion (functions/worker/ledger.ts).
 */
export const WORKER_JOBS_TABLE = { hashKey: "job_key", ttlAttribute: "expires_at" } as const;
