/**
 * The environment each function reads. The program sets exactly these names on the function
 * (checked by the type of `infra/parts/<part>.ts`'s environment objects) and the function's schema
 * parses exactly these (checked by `satisfies` in `functions/<part>/config.ts`), so a name cannot
 * drift on one side. Names follow the original systems: operators' runbooks and dashboards key on them.
 */
const GPU = ["GPU_INSTANCE_ID_PARAM", "GPU_NAME_TAG", "GPU_SERVICE_PORT", "GPU_SERVICE_PATH", "GPU_REQUEST_TIMEOUT_MS", "QUARANTINE_QUEUE_URL"] as const;
const FLEET = ["RUNS_FLEET_JOBS_TABLE", "RUNS_FLEET_JOB_RETENTION_DAYS", "RUNS_FLEET_RUNNER_PARAMETER_PATH"] as const;

export const FUNCTION_ENV = {
  "ingest-window": [...GPU, "INGEST_QUEUE_URL", "WINDOW_RETRY_SECONDS", "DLQ_BOOT_GRACE_SECONDS"],
  "ingest-dlq-consumer": [...GPU, "INGEST_DLQ_URL", "DLQ_VISIBILITY_EXTENSION_SECONDS", "DLQ_MAX_AGE_SECONDS", "DLQ_BOOT_PARK_SECONDS", "DLQ_CAPACITY_RETRY_SECONDS", "DLQ_BOOT_GRACE_SECONDS"],
  "ingest-gpu-idle": ["GPU_INSTANCE_ID_PARAM", "GPU_SERVICE_PORT", "GPU_STATUS_PATH", "GPU_REQUEST_TIMEOUT_MS", "GPU_IDLE_STOP_MINUTES", "GPU_HOLD_TAG", "INGEST_QUEUE_URL", "INGEST_DLQ_URL"],
  "retraining-launcher": [
    "ECS_CLUSTER",
    "ECS_TASK_DEFINITION_ARN",
    "ECS_TASK_DEFINITION_FAMILY",
    "ECS_SUBNETS",
    "ECS_SECURITY_GROUPS",
    "ECS_CONTAINER_NAME",
    "USE_SPOT",
    "RETRAINING_STATE_TABLE",
    "MAX_CONCURRENT_TASKS",
    "ENVIRONMENT",
    "QUARANTINE_QUEUE_URL",
    "RETRAINING_QUEUE_URL",
    "DEFER_DELAY_SECONDS",
    "RETRAINING_INTENT_TABLE",
    "RETRAINING_INTENT_RETENTION_SECONDS",
    "MAX_RECEIVE_COUNT",
  ],
  "fleet-termination": [...FLEET, "RUNS_FLEET_TERMINATION_QUEUE_URL", "RUNS_FLEET_TERMINATION_DLQ_URL"],
  "fleet-housekeeping": [
    ...FLEET,
    "RUNS_FLEET_HOUSEKEEPING_QUEUE_URL",
    "RUNS_FLEET_HOUSEKEEPING_DLQ_URL",
    "RUNS_FLEET_MAX_RUNTIME_MINUTES",
    "RUNS_FLEET_SSM_MIN_AGE_MINUTES",
    "RUNS_FLEET_POOLS",
    "RUNS_FLEET_INSTANCE_PRICES",
    "RUNS_FLEET_TIME_MARGIN_MS",
    "RUNS_FLEET_MANAGED_TAG_KEY",
    "RUNS_FLEET_MANAGED_TAG_VALUE",
    "RUNS_FLEET_POOL_TAG_KEY",
    "RUNS_FLEET_ENVIRONMENT",
  ],
  "pool-refill": ["POOL_CLASSES", "CLAIM_TABLE_NAME", "POOL_TAG", "REFILL_LEASE_SECONDS", "QUARANTINE_QUEUE_URL"],
  worker: [
    "WORK_QUEUE_URL",
    "QUARANTINE_QUEUE_URL",
    "WORKER_CONCURRENCY",
    "WORKER_WAIT_TIME_SECONDS",
    "WORKER_IDLE_WINDOW_SECONDS",
    "WORKER_MAX_PROTECTED_SECONDS",
    "WORKER_DEFAULT_VISIBILITY_SECONDS",
    "WORKER_MAX_VISIBILITY_SECONDS",
    "WORKER_HEARTBEAT_SECONDS",
    "WORKER_RETRY_DELAY_SECONDS",
    "WORKER_SHUTDOWN_GRACE_SECONDS",
    "TASK_PROTECTION_EXPIRES_MINUTES",
    "WORKER_EXECUTABLES",
    "WORKER_SCRATCH_DIR",
    "WORKER_JOBS_TABLE",
  ],
} as const;

export type FunctionName = keyof typeof FUNCTION_ENV;
/** The names function `F` reads from its environment. */
export type EnvName<F extends FunctionName> = (typeof FUNCTION_ENV)[F][number];

/** Powertools' own variables, which the program sets beside every function's. */
export type PowertoolsEnvName = "POWERTOOLS_SERVICE_NAME" | "POWERTOOLS_METRICS_NAMESPACE" | "POWERTOOLS_LOG_LEVEL";
