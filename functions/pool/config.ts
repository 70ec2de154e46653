import { z } from "zod";
import type { EnvName } from "../../policy/contract";
import { envInt, envUrl, parseEnv } from "../shared/env";
import { USAGE_CLASSES } from "./advert";

/** One class as the refill function sees it (POOL_CLASSES is a JSON array of these). */
const classShape = z.object({
  name: z.string().min(1),
  queueUrl: z.url(),
  launchTemplateId: z.string().min(1),
  size: z.number().int().min(0),
  instanceTypes: z.array(z.string().min(1)).min(1),
  cpu: z.number().int().positive(),
  memoryMib: z.number().int().positive(),
  usageClass: z.enum(USAGE_CLASSES),
});

export type PoolClassConfig = z.output<typeof classShape>;

const refillShape = {
  POOL_CLASSES: z
    .string()
    .transform((s, ctx) => {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(z.array(classShape).min(1)),
  CLAIM_TABLE_NAME: z.string().min(1),
  POOL_TAG: z.string().min(1),
  // The lease must outlive one run (the function timeout) so overlapping runs wait their turn.
  REFILL_LEASE_SECONDS: envInt(1, 3600).default(300),
  QUARANTINE_QUEUE_URL: envUrl(),
} satisfies Record<EnvName<"pool-refill">, z.ZodType>;

export interface RefillConfig {
  classes: PoolClassConfig[];
  claimTableName: string;
  poolTag: string;
  leaseSeconds: number;
  quarantineQueueUrl: string;
}

export function parseRefillConfig(env: NodeJS.ProcessEnv): RefillConfig {
  const e = parseEnv(refillShape, env);
  return {
    classes: e.POOL_CLASSES,
    claimTableName: e.CLAIM_TABLE_NAME,
    poolTag: e.POOL_TAG,
    leaseSeconds: e.REFILL_LEASE_SECONDS,
    quarantineQueueUrl: e.QUARANTINE_QUEUE_URL,
  };
}
