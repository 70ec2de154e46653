import { MetricUnit } from "@aws-lambda-powertools/metrics";
import type { StepLogger } from "../shared/logger";
import type { MetricsSink } from "../shared/metrics";

/**
 * Metrics with per-metric dimensions (`JobDuration` by Status, `JobFailure` by Error, the pool
 * metrics by PoolName) go through Powertools' `singleMetric()`: an EMF line of their own, written
 * at once, so the batch's shared dimensions never leak onto them.
 */
export interface DimensionedMetric {
  addDimension(name: string, value: string): unknown;
  addMetric(name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): unknown;
}

export interface FleetMetrics extends MetricsSink {
  singleMetric(): DimensionedMetric;
}

export interface FleetTelemetry {
  logger: StepLogger;
  metrics: FleetMetrics;
}

export function emitWithDimension(
  metrics: FleetMetrics,
  name: string,
  unit: (typeof MetricUnit)[keyof typeof MetricUnit],
  value: number,
  dimension: { name: string; value: string },
): void {
  const single = metrics.singleMetric();
  single.addDimension(dimension.name, dimension.value);
  single.addMetric(name, unit, value);
}

export { MetricUnit };
