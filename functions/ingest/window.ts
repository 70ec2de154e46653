/** Lambda entry point (bundled by the infra): sends each ingest window to the GPU service. */
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseWindowConfig } from "./config";
import { gpuServiceUrlFor } from "./deliver-window";
import { createWindowHandler, type WindowHandlerDeps } from "./window-handler";

export { createWindowHandler as createHandler } from "./window-handler";
export { WINDOW_IAM_ACTIONS, WINDOW_IAM_PERMISSIONS } from "./iam";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ssm = new SSMClient({});
const ec2 = new EC2Client({});
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): WindowHandlerDeps {
  const config = parseWindowConfig(env);
  return {
    ssm,
    ec2,
    sqs,
    fetch: (url, init) => fetch(url, init),
    gpuServiceUrl: gpuServiceUrlFor(config),
    config,
    logger: createLogger(),
    metrics: createMetrics(),
  };
}

export const handler = createWindowHandler(defaultDeps());
