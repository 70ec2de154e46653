/** Lambda entry point (bundled by the infra): tops each warm pool up to its size. */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseRefillConfig } from "./config";
import { createRefillHandler, type RefillHandlerDeps } from "./refill-handler";

export { createRefillHandler as createHandler } from "./refill-handler";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ec2 = new EC2Client({});
const dynamodb = new DynamoDBClient({});
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): RefillHandlerDeps {
  return { ec2, dynamodb, sqs, clock: Date.now, config: parseRefillConfig(env), logger: createLogger(), metrics: createMetrics() };
}

export const handler = createRefillHandler(defaultDeps());
