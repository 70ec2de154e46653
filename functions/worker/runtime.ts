import { SQSClient } from "@aws-sdk/client-sqs";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseWorkerConfig } from "./config";
import { buildHandlers } from "./handlers";
import { TaskProtection } from "./protection";
import type { WorkerDeps } from "./worker";

export { createWorker } from "./worker";

// Module scope: one client (and its connection pool) for the life of the task; the SDK's
// default retries apply to every call.
const sqs = new SQSClient({});

/** The real client, config and telemetry the container runs with; tests build their own. */
export function defaultDeps(env: NodeJS.ProcessEnv = process.env): WorkerDeps {
  const config = parseWorkerConfig(env);
  const logger = createLogger();
  const metrics = createMetrics();
  return {
    sqs,
    config,
    handlers: buildHandlers(config.executables, config.scratchDir),
    protection: new TaskProtection({ agentUri: config.agentUri, expiresInMinutes: config.protectionExpiresMinutes, logger, metrics }),
    logger,
    metrics,
  };
}
