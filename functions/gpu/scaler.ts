/** Lambda entry point (bundled by the infra): fleet mode's scheduled scaler, which sizes the GPU group to the backlog. */
import { parseScalerConfig } from "../ingest/config";
import { runtimeClients } from "../ingest/runtime-deps";
import { createScalerHandler, type ScalerHandlerDeps } from "./scaler-handler";

export { createScalerHandler as createHandler } from "./scaler-handler";

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): ScalerHandlerDeps {
  return runtimeClients(parseScalerConfig(env));
}

export const handler = createScalerHandler(defaultDeps());
