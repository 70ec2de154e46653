/**
 * Names that operators of the original runs-fleet system rely on. They are stack config
 * (`encache:fleet.names`); these are the defaults, which the program's config and the fleet
 * functions' environment share. The runner parameter path is not among them: it carries the
 * stack's environment (`/runs-fleet/<environment>/runners`), and the program always sets it.
 */
export const FLEET_NAME_DEFAULTS = {
  /** The tag that makes an instance the fleet's: the orphan sweep and TerminateInstances key on it. */
  managedTagKey: "runs-fleet:managed",
  managedTagValue: "true",
  /** The tag naming an instance's pool (pool_audit). */
  poolTagKey: "runs-fleet:pool",
  /** CloudWatch namespace of the fleet's metrics. */
  metricsNamespace: "RunsFleet",
} as const;
