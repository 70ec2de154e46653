import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import { createLogger } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import type { GpuConfig } from "./config";
import { gpuServiceUrlFor } from "./deliver-window";

// Module scope so warm invocations reuse connections; the SDK's default retries apply.
const ssm = new SSMClient({});
const ec2 = new EC2Client({});
const sqs = new SQSClient({});

/** The real clients and telemetry every ingest entry point runs with; tests build their own. */
export function runtimeClients<C>(config: C) {
  return {
    ssm,
    ec2,
    sqs,
    fetch: (url: string, init: RequestInit) => fetch(url, init),
    config,
    logger: createLogger(),
    metrics: createMetrics(),
  };
}

/** runtimeClients, plus the GPU service's window URL the consumers post to. */
export function runtimeDeps<C extends GpuConfig>(config: C) {
  return { ...runtimeClients(config), gpuServiceUrl: gpuServiceUrlFor(config) };
}
