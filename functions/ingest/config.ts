import { DLQ_ENV, IDLE_ENV, SCALER_ENV, WINDOW_ENV } from "./env";
import type { ParkConfig } from "./park";

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

/** Parses the idle check's environment (env.ts's `IDLE_ENV`); throws EnvConfigError naming each bad variable. */
export function parseIdleConfig(env: NodeJS.ProcessEnv): IdleConfig {
  return IDLE_ENV.parse(env);
}

export interface GpuConfig {
  instanceIdParam: string;
  nameTag: string;
  servicePort: number;
  servicePath: string;
  requestTimeoutMs: number;
  quarantineQueueUrl: string;
  /** Fleet mode: the Auto Scaling group; set together with fleetServiceHost. */
  fleetGroupName?: string;
  /** Fleet mode: the internal load balancer's DNS name. */
  fleetServiceHost?: string;
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

/** Parses the window consumer's environment (`WINDOW_ENV`). */
export function parseWindowConfig(env: NodeJS.ProcessEnv): WindowConfig {
  return WINDOW_ENV.parse(env);
}

/** Parses the DLQ consumer's environment (`DLQ_ENV`). */
export function parseDlqConfig(env: NodeJS.ProcessEnv): DlqConfig {
  return DLQ_ENV.parse(env);
}

export interface ScalerConfig {
  fleetGroupName: string;
  servicePort: number;
  statusPath: string;
  requestTimeoutMs: number;
  idleStopMinutes: number;
  holdTag: string;
  windowsPerInstance: number;
  scaleInCooldownSeconds: number;
  /** Percent of the capacity above the on-demand base on Spot, as configured (0: no Spot, no breaker). */
  spotPercent: number;
  spotBreakerInterruptions: number;
  spotBreakerWindowMinutes: number;
  spotBreakerCooldownMinutes: number;
  ingestQueueUrl: string;
  dlqUrl: string;
}

/** Parses the fleet scaler's environment (`SCALER_ENV`). */
export function parseScalerConfig(env: NodeJS.ProcessEnv): ScalerConfig {
  return SCALER_ENV.parse(env);
}
