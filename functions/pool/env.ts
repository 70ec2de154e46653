import { z } from "zod";
import { envCodec, envInt, envJson, envText, envUrl } from "../shared/env";
import { USAGE_CLASSES } from "./advert";

/** One class as the refill function sees it (POOL_CLASSES is a JSON array of these); the stack schema bounds each value. */
export const poolClassShape = z.object({
  name: z.string(),
  queueUrl: z.string(),
  launchTemplateId: z.string(),
  size: z.number().int(),
  instanceTypes: z.array(z.string()),
  cpu: z.number().int(),
  memoryMib: z.number().int(),
  usageClass: z.enum(USAGE_CLASSES),
});

/**
 * The refill function's environment: field, env var name and parser, once. The program builds it
 * (infra/parts/pool.ts) and the function parses it (config.ts) with this codec; defaults and bounds
 * are the stack schema's (infra/parts/pool.config.ts).
 */
export const REFILL_ENV = envCodec({
  classes: envJson("POOL_CLASSES", z.array(poolClassShape)),
  claimTableName: envText("CLAIM_TABLE_NAME"),
  /** Value of the pool tag every pool instance carries. */
  poolTag: envText("POOL_TAG"),
  /** The keys of the pool and class tags the refill filters and tags instances by. */
  poolTagKey: envText("POOL_TAG_KEY"),
  poolClassTagKey: envText("POOL_CLASS_TAG_KEY"),
  /** The lease must outlive one run (the function timeout) so overlapping runs wait their turn. */
  leaseSeconds: envInt("REFILL_LEASE_SECONDS"),
  quarantineQueueUrl: envUrl("QUARANTINE_QUEUE_URL"),
});
