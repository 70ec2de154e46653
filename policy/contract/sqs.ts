/** SQS's own limits and the visibility rule, which the program's config checks and the pack's rules share. */
/** A message's visibility timeout: at most 12 hours. */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;
/** A queue's retention: 60 s to 14 days. A DLQ keeps the maximum, so it outlives its source. */
export const SQS_MAX_RETENTION_SECONDS = 1_209_600;
/** AWS advises visibility ≥ 6 × function timeout + batching window for Lambda SQS consumers. */
export const VISIBILITY_TIMEOUT_MULTIPLIER = 6;

/** Visibility a queue needs so Lambda never sees a message twice while a batch is in flight. Pure. */
export function requiredVisibilityTimeoutSeconds(functionTimeoutSeconds: number, batchingWindowSeconds: number): number {
  return VISIBILITY_TIMEOUT_MULTIPLIER * functionTimeoutSeconds + batchingWindowSeconds;
}

/**
 * The visibility check every Lambda queue consumer is held to, in the stack schema's words: why
 * `visibility` does not cover a consumer whose timeout and batching window the config keys
 * `names` hold, or undefined when it does. Pure.
 */
export function visibilityTimeoutProblem(
  c: { visibilityTimeoutSeconds: number; timeoutSeconds: number; batchingWindowSeconds: number },
  names: { timeout: string; batchingWindow?: string },
): string | undefined {
  const needed = requiredVisibilityTimeoutSeconds(c.timeoutSeconds, c.batchingWindowSeconds);
  if (c.visibilityTimeoutSeconds >= needed) return undefined;
  const window = names.batchingWindow ? ` + ${names.batchingWindow}` : "";
  return `must be at least ${VISIBILITY_TIMEOUT_MULTIPLIER} × ${names.timeout}${window} = ${needed} (got ${c.visibilityTimeoutSeconds})`;
}

/**
 * How long a message with a DLQ must be kept so its last receive can happen: every receive may
 * hide it for the whole visibility timeout. A shorter retention lets SQS delete a failing message
 * before its last receive, so it never reaches the DLQ and nobody is told. Pure.
 */
export function retentionNeededSeconds(visibilityTimeoutSeconds: number, maxReceiveCount: number): number {
  return visibilityTimeoutSeconds * maxReceiveCount;
}
