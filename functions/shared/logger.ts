import { Logger } from "@aws-lambda-powertools/logger";

export type LogFields = Record<string, unknown>;

/**
 * The slice of the Powertools Logger the handlers use. Declared as an interface so tests can
 * inject a recorder instead of scraping stdout.
 */
export interface StepLogger {
  debug(message: string, ...fields: LogFields[]): void;
  info(message: string, ...fields: LogFields[]): void;
  warn(message: string, ...fields: LogFields[]): void;
  error(message: string, ...fields: LogFields[]): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

/** Service name, level and sampling come from the POWERTOOLS_* env vars the infra sets. */
export function createLogger(): Logger {
  return new Logger();
}

/**
 * Operators' dashboards key on a top-level `step` field whose values are the original system's names, so
 * every step log goes through here rather than free-form messages.
 */
export function logStep(logger: StepLogger, level: LogLevel, step: string, fields: LogFields = {}): void {
  logger[level](step, { step, ...fields });
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
