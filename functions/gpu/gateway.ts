/**
 * The GPU gateway's process entry (bundled by esbuild into one file, run by `node` under systemd on
 * every GPU instance, docs/parts/gpu.md). It reads GATEWAY_ENV, asks the instance metadata for its
 * instance id, listens on the service port, and drains on SIGTERM (or on a metadata signal, see
 * drain.ts): exit 0 once every window it holds is answered and, in fleet mode, its lifecycle action
 * completed.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { flushAndExit } from "../shared/exit";
import { errorMessage, logStep } from "../shared/logger";
import { parseGatewayConfig } from "./config";
import { imdsReader, type MetadataReader } from "./drain";
import { createGateway } from "./server";

// Module scope: one client (and its connection pool) for the life of the process; the SDK's default retries apply.
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const autoScaling = new AutoScalingClient({});

// The user data carries GATEWAY_ENV and AWS_REGION only; the service name and namespace default here.
const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? "gpu-gateway" });
const metrics = new Metrics({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? "gpu-gateway",
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? "Encache/Gpu",
});

/** Attempts at reading the instance id before the process gives up (systemd restarts it). */
const INSTANCE_ID_ATTEMPTS = 10;

async function instanceId(metadata: MetadataReader): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await metadata.get("instance-id");
      if (res.status === 200 && res.body.trim() !== "") return res.body.trim();
      throw new Error(`instance-id: HTTP ${res.status}`);
    } catch (error) {
      if (attempt >= INSTANCE_ID_ATTEMPTS) throw error;
      logStep(logger, "warn", "metadata_unreadable", { attempt, error: errorMessage(error) });
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

async function main(): Promise<void> {
  const config = parseGatewayConfig(process.env);
  const metadata = imdsReader({ endpoint: process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT, fetch });
  const gateway = createGateway({ config, db, autoScaling, metadata, instanceId: await instanceId(metadata), fetch, logger, metrics });
  let exiting = false;
  const shutdown = (signal: "SIGTERM" | "SIGINT") => {
    if (exiting) return;
    exiting = true;
    logStep(logger, "info", "signal_received", { signal });
    void gateway
      .drain("SIGTERM")
      .then(() => gateway.stop())
      .then(
        () => flushAndExit(0),
        (error: unknown) => {
          logStep(logger, "error", "gateway_crashed", { error: errorMessage(error) });
          flushAndExit(1);
        },
      );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  await gateway.start();
}

main().catch((error: unknown) => {
  logStep(logger, "error", "gateway_crashed", { error: errorMessage(error) });
  flushAndExit(1);
});
