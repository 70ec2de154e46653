import { dlqRedrive } from "./dlq-redrive";
import { fleet } from "./fleet";
import { gpuBurst } from "./gpu-burst";
import { gpuIdle } from "./gpu-idle";
import { gpuLaunchFailure } from "./gpu-launch-failure";
import { gpuSpotInterruption } from "./gpu-spot-interruption";
import { ingestGpuOutage } from "./ingest-gpu-outage";
import { pool } from "./pool";
import { retraining } from "./retraining";
import { retrainingSpot } from "./retraining-spot";
import type { Scenario } from "./scenario";
import { worker } from "./worker";

/** In the order `npm start` runs them. Fleet's instances are launched at start-up, so it runs late. */
export const SCENARIOS: Scenario[] = [
  ingestGpuOutage,
  retraining,
  retrainingSpot,
  worker,
  pool,
  fleet,
  gpuIdle,
  gpuBurst,
  gpuSpotInterruption,
  gpuLaunchFailure,
  dlqRedrive,
];
