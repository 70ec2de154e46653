/**
 * Container entry point (bundled by esbuild into one file, run by `node` in the image). SIGTERM
 * (a deployment, scale-in of an unprotected task, or the 2-minute Fargate Spot warning) starts
 * the shutdown; the process exits 0 once unfinished jobs are back on the queue and protection
 * is released (runtime.ts, `runWorkerProcess`).
 */
import { defaultDeps, runWorkerProcess } from "./runtime";

void runWorkerProcess(defaultDeps());
