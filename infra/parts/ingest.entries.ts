/** Handler entry points, relative to the repository root. */
export const INGEST_ENTRIES = {
  window: "functions/ingest/window.ts",
  dlq: "functions/ingest/dlq.ts",
  idle: "functions/ingest/idle.ts",
  scaler: "functions/ingest/scaler.ts",
} as const;
