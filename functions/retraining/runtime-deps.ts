import { ECSClient } from "@aws-sdk/client-ecs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { createLogger } from "../shared/logger";
import type { LauncherConfig } from "./config";
import type { LauncherDeps } from "./handler";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ecs = new ECSClient({});
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const sqs = new SQSClient({});

/**
 * Seed 001 publishes with the `Environment` dimension alone. Powertools adds a `service`
 * dimension by default, which would put the metrics in a different dimension set than the
 * original system's dashboards query, so the defaults are cleared; the handler adds Environment.
 */
export function launcherMetrics(): Metrics {
  const metrics = new Metrics();
  metrics.clearDefaultDimensions();
  return metrics;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The real clients and telemetry the entry point runs with; tests build their own. */
export function runtimeDeps(config: LauncherConfig): LauncherDeps {
  return { ecs, db, sqs, config, logger: createLogger(), metrics: launcherMetrics(), now: () => new Date(), sleep };
}
