import type { z } from "zod";
import type { EnvValuesOf } from "../shared/env";
import { type poolClassShape, REFILL_ENV } from "./env";

export type PoolClassConfig = z.output<typeof poolClassShape>;

/** The refill function's settings: exactly REFILL_ENV's fields. */
export type RefillConfig = EnvValuesOf<typeof REFILL_ENV>;

/** Parses the refill function's environment (env.ts's `REFILL_ENV`); throws EnvConfigError naming each bad variable. */
export function parseRefillConfig(env: NodeJS.ProcessEnv): RefillConfig {
  return REFILL_ENV.parse(env);
}
