import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
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

/**
 * Powertools adds a `service` default dimension (from POWERTOOLS_SERVICE_NAME) to every metric,
 * and again to each `singleMetric()` it creates, which would put JobSuccess & co. in a dimension
 * set the original system's dashboards do not query (JobDuration {Status}, JobSuccess {}, JobFailure {Error},
 * Pool* {PoolName}). Both the instance and its single metrics therefore clear the defaults.
 */
class SeedDimensionMetrics extends Metrics {
  constructor() {
    super();
    this.clearDefaultDimensions();
  }

  override singleMetric(): Metrics {
    const single = super.singleMetric();
    single.clearDefaultDimensions();
    return single;
  }
}

export function fleetMetrics(): Metrics {
  return new SeedDimensionMetrics();
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

/** One metric without dimensions, written at once as its own EMF line (not stored for the end of the batch). */
export function emitNow(metrics: FleetMetrics, name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): void {
  metrics.singleMetric().addMetric(name, unit, value);
}

export { MetricUnit };
