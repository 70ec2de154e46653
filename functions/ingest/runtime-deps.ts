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

/** The real clients and telemetry both ingest entry points run with; tests build their own. */
export function runtimeDeps<C extends GpuConfig>(config: C) {
  return {
    ssm,
    ec2,
    sqs,
    fetch: (url: string, init: RequestInit) => fetch(url, init),
    gpuServiceUrl: gpuServiceUrlFor(config),
    config,
    logger: createLogger(),
    metrics: createMetrics(),
  };
}
