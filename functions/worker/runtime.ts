import * as os from "node:os";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { flushAndExit } from "../shared/exit";
import { createLogger, errorMessage } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseWorkerConfig } from "./config";
import { buildHandlers } from "./handlers";
import { HEARTBEAT_EXTENSION_FACTOR } from "./job";
import { dynamoLedgerStore, JobLedger } from "./ledger";
import { TaskProtection } from "./protection";
import { createWorker, type WorkerDeps } from "./worker";

export { createWorker } from "./worker";

// Module scope: one client (and its connection pool) for the life of the task; the SDK's
// default retries apply to every call.
const sqs = new SQSClient({});
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));

/** How long the task metadata endpoint gets to name the task before hostname:pid stands in. */
const METADATA_TIMEOUT_MS = 2000;

/**
 * This task's identity in the ledger's `holder`: the ECS task ARN from the task metadata endpoint
 * (v4 `/task`), else hostname:pid (outside ECS, or if the endpoint does not answer). Informational:
 * the lease token, not the holder, fences every write.
 */
export async function taskIdentity(
  metadataUri: string | undefined,
  fetchFn: typeof fetch = fetch,
  fallback = `${os.hostname()}:${process.pid}`,
): Promise<string> {
  if (!metadataUri) return fallback;
  try {
    const res = await fetchFn(`${metadataUri}/task`, { signal: AbortSignal.timeout(METADATA_TIMEOUT_MS) });
    if (!res.ok) return fallback;
    const body = (await res.json()) as { TaskARN?: unknown };
    return typeof body.TaskARN === "string" && body.TaskARN !== "" ? body.TaskARN : fallback;
  } catch {
    return fallback;
  }
}

/** The ledger's `holder`: this task's identity, looked up at the first take and kept for the task's life. */
export function taskHolder(metadataUri: string | undefined, fetchFn: typeof fetch = fetch): () => Promise<string> {
  let identity: Promise<string> | undefined;
  return () => (identity ??= taskIdentity(metadataUri, fetchFn));
}

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
    // A lease outlives two missed beats, as a visibility extension does.
    ledger: new JobLedger({
      store: dynamoLedgerStore(db, config.jobsTable),
      holder: taskHolder(config.metadataUri),
      leaseMs: HEARTBEAT_EXTENSION_FACTOR * config.heartbeatMs,
    }),
    logger,
    metrics,
  };
}

/** The slice of `process` the entry point uses; tests pass an EventEmitter. */
export interface SignalSource {
  once(signal: "SIGTERM" | "SIGINT", listener: () => void): unknown;
}

/**
 * Runs the worker until SIGTERM or SIGINT stops it, then exits: 0 once its shutdown is done, 1
 * (after logging `worker_crashed`) if the loop itself failed.
 */
export function runWorkerProcess(deps: WorkerDeps, signals: SignalSource = process, exit: (code: number) => void = flushAndExit): Promise<void> {
  const worker = createWorker(deps);
  for (const signal of ["SIGTERM", "SIGINT"] as const) signals.once(signal, () => worker.stop(signal));
  return worker.run().then(
    () => exit(0),
    (error: unknown) => {
      deps.logger.error("worker_crashed", { step: "worker_crashed", error: errorMessage(error) });
      exit(1);
    },
  );
}
