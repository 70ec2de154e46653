/**
 * Container entry point (bundled by esbuild into one file, run by `node` in the image). SIGTERM
 * (a deployment, scale-in of an unprotected task, or the 2-minute Fargate Spot warning) starts
 * the shutdown; the process exits 0 once unfinished jobs are back on the queue and protection
 * is released.
 */
import { flushAndExit } from "../shared/exit";
import { errorMessage } from "../shared/logger";
import { createWorker, defaultDeps } from "./runtime";

const deps = defaultDeps();
const worker = createWorker(deps);
for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => worker.stop(signal));

worker.run().then(
  () => flushAndExit(0),
  (error: unknown) => {
    deps.logger.error("worker_crashed", { step: "worker_crashed", error: errorMessage(error) });
    flushAndExit(1);
  },
);
