/** Lambda entry point (bundled by the infra): the scheduled GPU idle check, which stops an idle GPU. */
import { parseIdleConfig } from "../ingest/config";
import { createIdleHandler, type IdleHandlerDeps } from "./idle-handler";
import { runtimeClients } from "../ingest/runtime-deps";

export { createIdleHandler as createHandler } from "./idle-handler";

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): IdleHandlerDeps {
  return runtimeClients(parseIdleConfig(env));
}

export const handler = createIdleHandler(defaultDeps());
