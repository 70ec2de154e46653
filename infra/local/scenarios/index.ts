import { fleet } from "./fleet";
import { ingestGpuOutage } from "./ingest-gpu-outage";
import { retraining } from "./retraining";
import type { Scenario } from "./scenario";

/** In the order `npm start` runs them. Fleet's instances are launched at start-up, so it runs late. */
export const SCENARIOS: Scenario[] = [ingestGpuOutage, retraining, fleet];
