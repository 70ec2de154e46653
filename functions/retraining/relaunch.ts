/** Lambda entry point (bundled by the infra): relaunches retraining tasks that Fargate Spot interrupted. */
import { SQSClient } from "@aws-sdk/client-sqs";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { RELAUNCH_ENV } from "./env";
import { createRelaunchHandler, type RelaunchDeps } from "./relaunch-handler";

export { createRelaunchHandler as createHandler } from "./relaunch-handler";

// Module scope so warm invocations reuse the connection; the SDK's default retries apply.
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): RelaunchDeps {
  return { sqs, config: RELAUNCH_ENV.parse(env), logger: createLogger(), metrics: createMetrics() };
}

export const handler = createRelaunchHandler(defaultDeps());
