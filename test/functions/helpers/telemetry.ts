import type { LogFields, LogLevel, StepLogger } from "../../../functions/shared/logger";
import type { MetricsSink } from "../../../functions/shared/metrics";

export interface LogEntry {
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/** Captures what the handlers log, so tests can assert the `step` field and its companions. */
export class RecordingLogger implements StepLogger {
  readonly entries: LogEntry[] = [];

  debug(message: string, ...fields: LogFields[]): void {
    this.record("debug", message, fields);
  }
  info(message: string, ...fields: LogFields[]): void {
    this.record("info", message, fields);
  }
  warn(message: string, ...fields: LogFields[]): void {
    this.record("warn", message, fields);
  }
  error(message: string, ...fields: LogFields[]): void {
    this.record("error", message, fields);
  }

  steps(): string[] {
    return this.entries.map((e) => String(e.fields.step));
  }

  /** Every entry whose `step` field is `step`. */
  withStep(step: string): LogEntry[] {
    return this.entries.filter((e) => e.fields.step === step);
  }

  private record(level: LogLevel, message: string, fields: LogFields[]): void {
    this.entries.push({ level, message, fields: Object.assign({}, ...fields) });
  }
}

export class RecordingMetrics implements MetricsSink {
  readonly added: { name: string; unit: string; value: number }[] = [];
  published = 0;

  addMetric(name: string, unit: string, value: number): this {
    this.added.push({ name, unit, value });
    return this;
  }

  publishStoredMetrics(): this {
    this.published += 1;
    return this;
  }

  count(name: string): number {
    return this.added.filter((m) => m.name === name).reduce((sum, m) => sum + m.value, 0);
  }
}
