/**
 * The tags the scaler keeps on its group as state, in a module of its own: the scaler's code writes
 * them and its grant (functions/ingest/iam.ts SCALER_GRANTS) names them, and the program imports the
 * grant without loading the handler and its SDK clients.
 */

/** The group tag holding the last scale-out's time (ISO 8601): the scale-in cool-down counts from it. */
export const SCALED_OUT_AT_TAG = "encache:scaled-out-at";

/**
 * The Spot breaker's record (functions/gpu/spot-breaker.ts): one tag per interrupted member,
 * `encache:spot-interruption:<instance-id>`, whose value is the EC2 event's own `time` (ISO 8601).
 * One key per interruption, so a duplicate delivery writes the same key and value again.
 */
export const SPOT_INTERRUPTION_TAG_PREFIX = "encache:spot-interruption:";

/** The tag recording `instanceId`'s interruption. Pure. */
export function spotInterruptionTag(instanceId: string): string {
  return `${SPOT_INTERRUPTION_TAG_PREFIX}${instanceId}`;
}
