/** Lambda entry point (bundled by the infra): launches retraining tasks on ECS Fargate / Fargate Spot. */
import { parseLauncherConfig } from "./config";
import { createLauncherHandler, type LauncherDeps } from "./handler";
import { runtimeDeps } from "./runtime-deps";

export { createLauncherHandler as createHandler } from "./handler";

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): LauncherDeps {
  return runtimeDeps(parseLauncherConfig(env));
}

export const handler = createLauncherHandler(defaultDeps());
