/**
 * The tags the scaler keeps on its group as state, in a module of its own: the scaler's code writes
 * them and its grant (functions/ingest/iam.ts SCALER_GRANTS) names them, and the program imports the
 * grant without loading the handler and its SDK clients.
 */

/** The group tag holding the last scale-out's time (ISO 8601): the scale-in cool-down counts from it. */
export const SCALED_OUT_AT_TAG = "encache:scaled-out-at";
