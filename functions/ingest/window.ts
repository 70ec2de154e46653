/** Lambda entry point (bundled by the infra): sends each ingest window to the GPU service. */
import { parseWindowConfig } from "./config";
import { runtimeDeps } from "./runtime-deps";
import { createWindowHandler, type WindowHandlerDeps } from "./window-handler";

export { createWindowHandler as createHandler } from "./window-handler";

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): WindowHandlerDeps {
  return runtimeDeps(parseWindowConfig(env));
}

export const handler = createWindowHandler(defaultDeps());
