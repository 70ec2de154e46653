import type { z } from "zod";
import { type poolClassShape, REFILL_ENV } from "./env";

export type PoolClassConfig = z.output<typeof poolClassShape>;

export interface RefillConfig {
  classes: PoolClassConfig[];
  claimTableName: string;
  poolTag: string;
  /** The pool tag's key (`encache:pool`). */
  poolTagKey: string;
  /** The class tag's key (`encache:pool-class`). */
  poolClassTagKey: string;
  leaseSeconds: number;
  quarantineQueueUrl: string;
}

/** Parses the refill function's environment (env.ts's `REFILL_ENV`); throws EnvConfigError naming each bad variable. */
export function parseRefillConfig(env: NodeJS.ProcessEnv): RefillConfig {
  return REFILL_ENV.parse(env);
}
