import type { EnvValues, EnvValuesOf } from "../shared/env";
import { DLQ_ENV, type GpuFields, IDLE_ENV, SCALER_ENV, WINDOW_ENV } from "./env";

/** `ingest-gpu-idle`'s settings: exactly IDLE_ENV's fields. */
export type IdleConfig = EnvValuesOf<typeof IDLE_ENV>;

/** Parses the idle check's environment (env.ts's `IDLE_ENV`); throws EnvConfigError naming each bad variable. */
export function parseIdleConfig(env: NodeJS.ProcessEnv): IdleConfig {
  return IDLE_ENV.parse(env);
}

/** The GPU fields the window and DLQ consumers share (env.ts's `GpuFields`); fleet mode's two are set together. */
export type GpuConfig = EnvValues<GpuFields>;

/** `ingest-window`'s settings: exactly WINDOW_ENV's fields. */
export type WindowConfig = EnvValuesOf<typeof WINDOW_ENV>;

/** `ingest-dlq-consumer`'s settings: exactly DLQ_ENV's fields (the park timings among them: park.ts's `ParkConfig`). */
export type DlqConfig = EnvValuesOf<typeof DLQ_ENV>;

/** Parses the window consumer's environment (`WINDOW_ENV`). */
export function parseWindowConfig(env: NodeJS.ProcessEnv): WindowConfig {
  return WINDOW_ENV.parse(env);
}

/** Parses the DLQ consumer's environment (`DLQ_ENV`). */
export function parseDlqConfig(env: NodeJS.ProcessEnv): DlqConfig {
  return DLQ_ENV.parse(env);
}

/** `ingest-gpu-scaler`'s settings: exactly SCALER_ENV's fields. */
export type ScalerConfig = EnvValuesOf<typeof SCALER_ENV>;

/** Parses the fleet scaler's environment (`SCALER_ENV`). */
export function parseScalerConfig(env: NodeJS.ProcessEnv): ScalerConfig {
  return SCALER_ENV.parse(env);
}
