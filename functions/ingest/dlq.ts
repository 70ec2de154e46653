/** Lambda entry point (bundled by the infra): drains the ingest DLQ, auto-starting the GPU. */
import { parseDlqConfig } from "./config";
import { createDlqHandler, type DlqHandlerDeps } from "./dlq-handler";
import { runtimeDeps } from "./runtime-deps";

export { createDlqHandler as createHandler } from "./dlq-handler";

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): DlqHandlerDeps {
  return runtimeDeps(parseDlqConfig(env));
}

export const handler = createDlqHandler(defaultDeps());
