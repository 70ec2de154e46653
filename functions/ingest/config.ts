import { z } from "zod";
import type { EnvName } from "../../policy/contract";
import { envInt, envUrl, parseEnv } from "../shared/env";
import type { ParkConfig } from "./park";

const gpuShape = {
  GPU_INSTANCE_ID_PARAM: z.string().startsWith("/", "must start with /").default("/encache/gpu/instance_id"),
  GPU_NAME_TAG: z.string().default("encache-gpu-worker"),
  GPU_SERVICE_PORT: envInt(1, 65535),
  GPU_SERVICE_PATH: z.string().startsWith("/", "must start with /"),
  GPU_REQUEST_TIMEOUT_MS: envInt(1, 900_000).default(10_000),
  QUARANTINE_QUEUE_URL: envUrl(),
};

const windowShape = {
  ...gpuShape,
  INGEST_QUEUE_URL: envUrl(),
  // A window the GPU could not take comes back this soon (not after the queue's visibility
  // timeout), so while the GPU is down windows reach the DLQ, which starts it, within a minute.
  WINDOW_RETRY_SECONDS: envInt(0, 43_200).default(10),
  DLQ_BOOT_GRACE_SECONDS: envInt(0, 3600).default(600),
} satisfies Record<EnvName<"ingest-window">, z.ZodType>;

const dlqShape = {
  ...gpuShape,
  INGEST_DLQ_URL: envUrl(),
  // SQS caps a message's visibility timeout at 12 h.
  DLQ_VISIBILITY_EXTENSION_SECONDS: envInt(0, 43_200).default(900),
  // A DLQ message older than this is quarantined rather than parked again: SQS would otherwise
  // delete it silently when the DLQ's 14-day retention runs out. Default: 13 days.
  DLQ_MAX_AGE_SECONDS: envInt(60, 1_209_600).default(1_123_200),
  // While the GPU boots, parks are this short, so the backlog drains within one park of the
  // service answering (≤ 45 s keeps that under a minute with the poller's latency).
  DLQ_BOOT_PARK_SECONDS: envInt(1, 45).default(10),
  DLQ_CAPACITY_RETRY_SECONDS: envInt(1, 43_200).default(120),
  DLQ_BOOT_GRACE_SECONDS: envInt(0, 3600).default(600),
} satisfies Record<EnvName<"ingest-dlq-consumer">, z.ZodType>;

const idleShape = {
  GPU_INSTANCE_ID_PARAM: gpuShape.GPU_INSTANCE_ID_PARAM,
  GPU_SERVICE_PORT: gpuShape.GPU_SERVICE_PORT,
  GPU_STATUS_PATH: z.string().startsWith("/", "must start with /").default("/status"),
  GPU_REQUEST_TIMEOUT_MS: gpuShape.GPU_REQUEST_TIMEOUT_MS,
  GPU_IDLE_STOP_MINUTES: envInt(1, 1440),
  GPU_HOLD_TAG: z.string().min(1).default("encache:gpu-hold"),
  INGEST_QUEUE_URL: envUrl(),
  INGEST_DLQ_URL: envUrl(),
} satisfies Record<EnvName<"ingest-gpu-idle">, z.ZodType>;

export interface IdleConfig {
  instanceIdParam: string;
  servicePort: number;
  statusPath: string;
  requestTimeoutMs: number;
  idleStopMinutes: number;
  holdTag: string;
  ingestQueueUrl: string;
  dlqUrl: string;
}

export function parseIdleConfig(env: NodeJS.ProcessEnv): IdleConfig {
  const p = parseEnv(idleShape, env);
  return {
    instanceIdParam: p.GPU_INSTANCE_ID_PARAM,
    servicePort: p.GPU_SERVICE_PORT,
    statusPath: p.GPU_STATUS_PATH,
    requestTimeoutMs: p.GPU_REQUEST_TIMEOUT_MS,
    idleStopMinutes: p.GPU_IDLE_STOP_MINUTES,
    holdTag: p.GPU_HOLD_TAG,
    ingestQueueUrl: p.INGEST_QUEUE_URL,
    dlqUrl: p.INGEST_DLQ_URL,
  };
}

export interface GpuConfig {
  instanceIdParam: string;
  nameTag: string;
  servicePort: number;
  servicePath: string;
  requestTimeoutMs: number;
  quarantineQueueUrl: string;
}

export interface WindowConfig extends GpuConfig {
  ingestQueueUrl: string;
  retrySeconds: number;
  /** A running GPU whose service refuses this soon after launch is booting: retry soon too. */
  bootGraceSeconds: number;
}

export interface DlqConfig extends GpuConfig, ParkConfig {
  dlqUrl: string;
  maxAgeSeconds: number;
}

function toGpuConfig(env: z.output<z.ZodObject<typeof gpuShape>>): GpuConfig {
  return {
    instanceIdParam: env.GPU_INSTANCE_ID_PARAM,
    nameTag: env.GPU_NAME_TAG,
    servicePort: env.GPU_SERVICE_PORT,
    servicePath: env.GPU_SERVICE_PATH,
    requestTimeoutMs: env.GPU_REQUEST_TIMEOUT_MS,
    quarantineQueueUrl: env.QUARANTINE_QUEUE_URL,
  };
}

export function parseWindowConfig(env: NodeJS.ProcessEnv): WindowConfig {
  const parsed = parseEnv(windowShape, env);
  return { ...toGpuConfig(parsed), ingestQueueUrl: parsed.INGEST_QUEUE_URL, retrySeconds: parsed.WINDOW_RETRY_SECONDS, bootGraceSeconds: parsed.DLQ_BOOT_GRACE_SECONDS };
}

export function parseDlqConfig(env: NodeJS.ProcessEnv): DlqConfig {
  const parsed = parseEnv(dlqShape, env);
  return {
    ...toGpuConfig(parsed),
    dlqUrl: parsed.INGEST_DLQ_URL,
    visibilityExtensionSeconds: parsed.DLQ_VISIBILITY_EXTENSION_SECONDS,
    maxAgeSeconds: parsed.DLQ_MAX_AGE_SECONDS,
    bootParkSeconds: parsed.DLQ_BOOT_PARK_SECONDS,
    capacityRetrySeconds: parsed.DLQ_CAPACITY_RETRY_SECONDS,
    bootGraceSeconds: parsed.DLQ_BOOT_GRACE_SECONDS,
  };
}
