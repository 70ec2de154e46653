import { SQSClient } from "@aws-sdk/client-sqs";
import { flushAndExit } from "../shared/exit";
import { createLogger, errorMessage } from "../shared/logger";
import { createMetrics } from "../shared/metrics";
import { parseWorkerConfig } from "./config";
import { buildHandlers } from "./handlers";
import { TaskProtection } from "./protection";
import { createWorker, type WorkerDeps } from "./worker";

export { createWorker } from "./worker";

// Module scope: one client (and its connection pool) for the life of the task; the SDK's
// default retries apply to every call.
const sqs = new SQSClient({});

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
