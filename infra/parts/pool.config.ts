import { z } from "zod";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { consumerIssues, consumerSchema } from "./consumer.config";
import type { QueueBudget } from "./part-args";

/**
 * Stack config of the warm-instance pool (`encache:pool`). Composed into `infra/config.ts`;
 * every error names its key path (`encache:pool.classes.gpu-small.size`).
 */

/** SQS retention minimum is 60 s; the DLQ keeps 14 days, so pool queues must stay well below. */
const MAX_ADVERT_RETENTION_SECONDS = 86_400;

export const poolClassSchema = z.object({
  /** Idle warm instances the refill keeps in this class. */
  size: z.number().int().min(0).max(50),
  /** Instance types of the class; the launch template launches the first. */
  instanceTypes: z.array(z.string().regex(INSTANCE_TYPE_PATTERN, "must be an EC2 instance type such as g5.xlarge")).min(1),
  /** vCPUs of every instance type in the class. */
  cpu: z.number().int().min(1).max(448),
  /** Memory of every instance type in the class, MiB. */
  memoryMib: z.number().int().min(512).max(24_576_000),
  /** Purchase option of the class's instances. */
  usageClass: z.enum(["on-demand", "spot"]).default("on-demand"),
  /** Public SSM parameter that resolves the AMI. */
  amiParameter: z
    .string()
    .regex(/^\/aws\/service\//, "must be a public AWS SSM parameter under /aws/service/")
    .default("/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"),
  /** Root device name of the AMI (`/dev/xvda` Amazon Linux, `/dev/sda1` Ubuntu). */
  rootDeviceName: z
    .string()
    .regex(/^\/dev\/[a-z0-9]+$/, "must be a device name such as /dev/xvda")
    .default("/dev/xvda"),
  /** Encrypted gp3 root volume size, GiB. */
  rootVolumeGiB: z.number().int().min(8).max(16_384).default(30),
});

export const poolConfigSchema = z
  .object({
    /**
     * Value of the `encache:pool` tag; IAM conditions on EC2 start/run key on it, so it carries the
     * environment (infra/stack-scope.ts).
     * @default `encache-warm-pool-<environment>`
     */
    poolTag: z.string().regex(/^[A-Za-z0-9_.:/=+@-]{1,128}$/, "must be a valid tag value"),
    /** Pool queue retention: adverts go stale, so short (60 s – 1 day); 1–2 refill periods. */
    advertRetentionSeconds: z.number().int().min(60).max(MAX_ADVERT_RETENTION_SECONDS),
    /** DelaySeconds of a re-queued unsuitable advert (SQS: 0–900). */
    requeueDelaySeconds: z.number().int().min(0).max(900).default(5),
    /** Sightings of one instance per pickup before local exhaustion (the original system's 5). */
    tolerance: z.number().int().min(1).max(100).default(5),
    /** Claim lock lifetime (DynamoDB TTL), seconds. */
    lockTtlSeconds: z.number().int().min(60).max(604_800).default(3600),
    /**
     * The refill consumer: its sizing (timeoutSeconds at least 10; maxConcurrency 2–1000, the
     * per-class lease serialises runs), one class per invocation, and its queue.
     */
    refill: consumerSchema({ memoryMb: 256, batchingWindowSeconds: 0, maxConcurrency: 2 }).extend({
      /** One class per invocation: each refill run gets the whole timeout. */
      batchSize: z.literal(1, { message: "must be 1: each refill run tops up one class" }).default(1),
      /** Minutes between refill runs of each class (EventBridge Scheduler `rate`). */
      everyMinutes: z.number().int().min(1).max(1440),
      /** Refill queue visibility timeout; ≥ 6 × timeoutSeconds. */
      queueVisibilityTimeoutSeconds: z.number().int().min(1).max(43_200),
      /**
       * Refill queue retention; it must cover `queues.maxReceiveCount` receives of
       * `queueVisibilityTimeoutSeconds` each.
       * @default 4 refill periods (4 × everyMinutes × 60 s, at least 60 s): a request older than that is superseded
       */
      messageRetentionSeconds: z.number().int().min(60).max(1_209_599).optional(),
    }),
    /** One pool (queue + launch template + schedule) per resource class. */
    classes: z
      .record(z.string().regex(/^[a-z][a-z0-9-]{0,30}$/, "class names are lowercase letters, digits and dashes (≤ 31)"), poolClassSchema)
      .refine((c) => Object.keys(c).length > 0, "must declare at least one resource class"),
  })
  .superRefine((cfg, ctx) => {
    for (const issue of poolCrossFieldIssues(cfg)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

export type PoolConfig = z.infer<typeof poolConfigSchema>;
export type PoolClassConfig = z.infer<typeof poolClassSchema>;

/** The shortest refill timeout: a run makes several EC2, DynamoDB and SQS calls. */
const MIN_REFILL_TIMEOUT_SECONDS = 10;

/** A pool queue is emptied by delete-on-receive; its visibility only covers one pickup cycle. */
export const POOL_QUEUE_VISIBILITY_SECONDS = 30;

/** The refill queue's retention: the configured value, else four refill periods. Pure. */
export function refillRetentionSeconds(refill: Pick<PoolConfig["refill"], "everyMinutes" | "messageRetentionSeconds">): number {
  return refill.messageRetentionSeconds ?? Math.max(60, refill.everyMinutes * 60 * 4);
}

/** Checks across keys, pure so tests call it directly. Paths are relative to `encache:pool`. */
export function poolCrossFieldIssues(cfg: Pick<PoolConfig, "advertRetentionSeconds" | "refill">): Array<{ path: Array<string | number>; message: string }> {
  const { refill } = cfg;
  const issues = consumerIssues(refill, {
    key: ["refill"],
    visibilityPath: ["refill", "queueVisibilityTimeoutSeconds"],
    visibilityTimeoutSeconds: refill.queueVisibilityTimeoutSeconds,
    prefix: "refill",
  });
  // The refill's lease (REFILL_LEASE_SECONDS) is its timeout; a run needs a few EC2 and SQS round trips.
  if (refill.timeoutSeconds < MIN_REFILL_TIMEOUT_SECONDS)
    issues.push({ path: ["refill", "timeoutSeconds"], message: `must be at least ${MIN_REFILL_TIMEOUT_SECONDS}` });
  // Idle instances are re-advertised each run; an advert must live until the next run.
  const period = cfg.refill.everyMinutes * 60;
  if (cfg.advertRetentionSeconds < period) {
    issues.push({
      path: ["advertRetentionSeconds"],
      message: `must be at least one refill period (refill.everyMinutes × 60 = ${period}), or idle instances drop out of the pool between runs`,
    });
  } else if (cfg.advertRetentionSeconds > 2 * period) {
    issues.push({
      path: ["advertRetentionSeconds"],
      message: `must be at most two refill periods (${2 * period}): each run re-advertises idle instances, so longer retention piles up duplicates`,
    });
  }
  return issues;
}

/** The refill queue and each class's advert queue (`pool-<class>`), with the keys behind their numbers. Pure. */
export function poolQueueBudgets(c: Pick<PoolConfig, "refill" | "advertRetentionSeconds" | "classes">): QueueBudget[] {
  const derived = c.refill.messageRetentionSeconds === undefined;
  return [
    {
      queue: "pool-refill",
      retentionSeconds: refillRetentionSeconds(c.refill),
      retentionFrom: derived ? "4 × pool.refill.everyMinutes (set pool.refill.messageRetentionSeconds to choose it)" : "pool.refill.messageRetentionSeconds",
      visibilitySeconds: c.refill.queueVisibilityTimeoutSeconds,
      visibilityFrom: "pool.refill.queueVisibilityTimeoutSeconds",
      path: ["pool", "refill", derived ? "queueVisibilityTimeoutSeconds" : "messageRetentionSeconds"],
    },
    ...Object.keys(c.classes).map((className) => ({
      queue: `pool-${className}`,
      retentionSeconds: c.advertRetentionSeconds,
      retentionFrom: "pool.advertRetentionSeconds",
      visibilitySeconds: POOL_QUEUE_VISIBILITY_SECONDS,
      visibilityFrom: "the pool queues' fixed visibility",
      path: ["pool", "advertRetentionSeconds"],
    })),
  ];
}
