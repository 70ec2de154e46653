/** Lambda entry point (bundled by the infra): drains the ingest DLQ, auto-starting the GPU. */
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseDlqConfig } from "./config";
import { gpuServiceUrlFor } from "./deliver-window";
import { createDlqHandler, type DlqHandlerDeps } from "./dlq-handler";

export { createDlqHandler as createHandler } from "./dlq-handler";
export { DLQ_IAM_ACTIONS, DLQ_IAM_PERMISSIONS } from "./iam";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ssm = new SSMClient({});
const ec2 = new EC2Client({});
const sqs = new SQSClient({});

export function defaultDeps(env: NodeJS.ProcessEnv = process.env): DlqHandlerDeps {
  const config = parseDlqConfig(env);
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

export const handler = createDlqHandler(defaultDeps());
