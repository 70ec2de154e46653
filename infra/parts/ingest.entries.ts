/** Handler entry points, relative to the repository root. */
export const INGEST_ENTRIES = {
  window: "functions/ingest/window.ts",
  dlq: "functions/ingest/dlq.ts",
  idle: "functions/gpu/idle.ts",
  scaler: "functions/gpu/scaler.ts",
} as const;
