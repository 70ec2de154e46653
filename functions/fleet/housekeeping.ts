/** Lambda entry point (bundled by the infra): runs the scheduled housekeeping tasks. */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { fleetMetrics } from "./telemetry";
import { parseHousekeepingConfig } from "./config";
import { createHousekeepingHandler, type HousekeepingHandlerDeps } from "./housekeeping-handler";

export { createHousekeepingHandler as createHandler } from "./housekeeping-handler";

// Module scope so warm invocations reuse connections; the SDK's standard retries handle throttling.
const dynamodb = new DynamoDBClient({});
const ec2 = new EC2Client({});
const ssm = new SSMClient({});
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): HousekeepingHandlerDeps {
  return {
    dynamodb,
    ec2,
    ssm,
    sqs,
    logger: createLogger(),
    metrics: fleetMetrics(),
    config: parseHousekeepingConfig(env),
    now: () => new Date(),
  };
}

export const handler = createHousekeepingHandler(defaultDeps());
