import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";

/** The slice of Powertools Metrics the handlers use; tests inject a recorder. */
export interface MetricsSink {
  addMetric(name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): unknown;
  publishStoredMetrics(): unknown;
}

/** Namespace and service come from POWERTOOLS_METRICS_NAMESPACE / POWERTOOLS_SERVICE_NAME. */
export function createMetrics(): Metrics {
  return new Metrics();
}

export function countOne(metrics: MetricsSink, name: string): void {
  metrics.addMetric(name, MetricUnit.Count, 1);
}
