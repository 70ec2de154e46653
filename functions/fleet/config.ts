import type { EnvValuesOf } from "../shared/env";
import { HOUSEKEEPING_ENV, TERMINATION_ENV } from "./env";

/** `fleet-termination`'s settings: exactly TERMINATION_ENV's fields. */
export type TerminationConfig = EnvValuesOf<typeof TERMINATION_ENV>;

/**
 * HOUSEKEEPING_ENV's fields, except that parse pairs the two tags' keys and values: the sweeps
 * always use a tag's key and value together, and the env carries each as its own variable.
 */
export interface HousekeepingConfig
  extends Omit<EnvValuesOf<typeof HOUSEKEEPING_ENV>, "managedTagKey" | "managedTagValue" | "environmentTagKey" | "environment"> {
  managedTag: { key: string; value: string };
  /** The stack's environment tag (`encache:environment=<the stack's>`): the second tag every swept instance must carry. */
  environmentTag: { key: string; value: string };
}

export function parseTerminationConfig(env: NodeJS.ProcessEnv): TerminationConfig {
  return TERMINATION_ENV.parse(env);
}

export function parseHousekeepingConfig(env: NodeJS.ProcessEnv): HousekeepingConfig {
  const { managedTagKey, managedTagValue, environmentTagKey, environment, ...e } = HOUSEKEEPING_ENV.parse(env);
  return { ...e, managedTag: { key: managedTagKey, value: managedTagValue }, environmentTag: { key: environmentTagKey, value: environment } };
}
