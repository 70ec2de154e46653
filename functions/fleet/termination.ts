/** Lambda entry point (bundled by the infra): completes jobs from the termination queue. */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { fleetMetrics } from "./telemetry";
import { parseTerminationConfig } from "./config";
import { createTerminationHandler, type TerminationHandlerDeps } from "./termination-handler";

export { createTerminationHandler as createHandler } from "./termination-handler";

// Module scope so warm invocations reuse connections. The SDK's standard retry mode (3 attempts,
// exponential backoff with jitter) handles throttling; there is no hand-rolled backoff on top.
const dynamodb = new DynamoDBClient({});
const ssm = new SSMClient({});
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): TerminationHandlerDeps {
  return { dynamodb, ssm, sqs, logger: createLogger(), metrics: fleetMetrics(), config: parseTerminationConfig(env) };
}

export const handler = createTerminationHandler(defaultDeps());
