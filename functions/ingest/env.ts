import { envCodec, envInt, envText, envUrl, optional } from "../shared/env";

/**
 * The ingest functions' environments: field, env var name and parser, once. The program builds
 * each function's environment from these (infra/parts/ingest.ts) and the function parses its own
 * with the same codec (config.ts). Defaults and bounds are the stack schema's
 * (infra/parts/ingest.config.ts); names follow the original system, which runbooks key on.
 */
const GPU = {
  instanceIdParam: envText("GPU_INSTANCE_ID_PARAM"),
  nameTag: envText("GPU_NAME_TAG"),
  servicePort: envInt("GPU_SERVICE_PORT"),
  servicePath: envText("GPU_SERVICE_PATH"),
  requestTimeoutMs: envInt("GPU_REQUEST_TIMEOUT_MS"),
  quarantineQueueUrl: envUrl("QUARANTINE_QUEUE_URL"),
  /** Fleet mode only (`gpu.capacity.mode: fleet`): the stack's Auto Scaling group of GPUs. */
  fleetGroupName: optional(envText("GPU_FLEET_GROUP_NAME")),
  /** Fleet mode only: the internal load balancer's DNS name, the one address windows are POSTed to. */
  fleetServiceHost: optional(envText("GPU_FLEET_SERVICE_HOST")),
};

/** The GPU fields the window and DLQ consumers share (config.ts's `GpuConfig`). */
export type GpuFields = typeof GPU;

/** `ingest-window`: sends each window to the GPU service. */
export const WINDOW_ENV = envCodec({
  ...GPU,
  ingestQueueUrl: envUrl("INGEST_QUEUE_URL"),
  /** A window the GPU could not take comes back this soon, not after the queue's visibility timeout. */
  retrySeconds: envInt("WINDOW_RETRY_SECONDS"),
  /** A running GPU whose service refuses this soon after launch is booting: retry soon too. */
  bootGraceSeconds: envInt("DLQ_BOOT_GRACE_SECONDS"),
});

/** `ingest-dlq-consumer`: parks DLQ messages and starts the GPU. */
export const DLQ_ENV = envCodec({
  ...GPU,
  dlqUrl: envUrl("INGEST_DLQ_URL"),
  visibilityExtensionSeconds: envInt("DLQ_VISIBILITY_EXTENSION_SECONDS"),
  /** A DLQ message older than this is quarantined rather than parked again (the DLQ's retention would delete it). */
  maxAgeSeconds: envInt("DLQ_MAX_AGE_SECONDS"),
  bootParkSeconds: envInt("DLQ_BOOT_PARK_SECONDS"),
  capacityRetrySeconds: envInt("DLQ_CAPACITY_RETRY_SECONDS"),
  bootGraceSeconds: envInt("DLQ_BOOT_GRACE_SECONDS"),
});

/** `ingest-gpu-idle`: stops the GPU after a while without work. */
export const IDLE_ENV = envCodec({
  instanceIdParam: GPU.instanceIdParam,
  servicePort: GPU.servicePort,
  statusPath: envText("GPU_STATUS_PATH"),
  requestTimeoutMs: GPU.requestTimeoutMs,
  idleStopMinutes: envInt("GPU_IDLE_STOP_MINUTES"),
  /** The tag key an operator holds the GPU on with. */
  holdTag: envText("GPU_HOLD_TAG"),
  ingestQueueUrl: envUrl("INGEST_QUEUE_URL"),
  dlqUrl: envUrl("INGEST_DLQ_URL"),
});

/** `ingest-gpu-scaler`: fleet mode's idle stop, which sizes the GPU group to the backlog (scaler-handler.ts). */
export const SCALER_ENV = envCodec({
  fleetGroupName: envText("GPU_FLEET_GROUP_NAME"),
  servicePort: GPU.servicePort,
  statusPath: envText("GPU_STATUS_PATH"),
  requestTimeoutMs: GPU.requestTimeoutMs,
  /** 0: the fleet never goes to zero on its own (one instance stays once it has one). */
  idleStopMinutes: envInt("GPU_IDLE_STOP_MINUTES"),
  holdTag: envText("GPU_HOLD_TAG"),
  windowsPerInstance: envInt("GPU_FLEET_WINDOWS_PER_INSTANCE"),
  scaleInCooldownSeconds: envInt("GPU_FLEET_SCALE_IN_COOLDOWN_SECONDS"),
  /** The configured mix: the scaler keeps the group's on-demand share above the base at 100 − this while its Spot breaker is closed. */
  spotPercent: envInt("GPU_FLEET_SPOT_PERCENT"),
  /** The Spot breaker (functions/gpu/spot-breaker.ts): N interruptions within W minutes open it for C minutes. */
  spotBreakerInterruptions: envInt("GPU_SPOT_BREAKER_INTERRUPTIONS"),
  spotBreakerWindowMinutes: envInt("GPU_SPOT_BREAKER_WINDOW_MINUTES"),
  spotBreakerCooldownMinutes: envInt("GPU_SPOT_BREAKER_COOLDOWN_MINUTES"),
  ingestQueueUrl: envUrl("INGEST_QUEUE_URL"),
  dlqUrl: envUrl("INGEST_DLQ_URL"),
});
