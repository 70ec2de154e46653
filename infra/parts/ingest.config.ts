import { z } from "zod";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { requiredVisibilityTimeoutSeconds, SQS_MAX_RETENTION_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from "../../policy/contract";
import { consumerIssues, consumerSchema } from "./consumer.config";
import { managedQueueDefaults } from "../components/managed-queue";
import type { QueueBudget } from "./part-args";

/**
 * `encache:gpu` and `encache:ingest` (part 1, docs/parts/ingest.md): the GPU instance, and the ingest queue,
 * its DLQ and their two consumers.
 */

const positiveInt = (max: number) => z.number().int().min(1).max(max);

/** The ingest consumers' sizing: memory and batching window default, the rest is per stack. */
const ingestConsumerSchema = consumerSchema({ memoryMb: 256, batchingWindowSeconds: 0 });

/**
 * `encache:gpu.capacity.fleet`: the GPU tier as an EC2 Auto Scaling group behind an internal load
 * balancer (docs/parts/ingest.md, "The fleet"). Desired capacity belongs to the scaler, never to
 * Pulumi: it follows the backlog, from 0 to maxSize.
 */
export const gpuFleetSchema = z
  .object({
    /** Instances at most; the group's min is 0 (it scales to zero when idle). */
    maxSize: z.number().int().min(1).max(100),
    /**
     * Instance types the group may launch, in order of preference; several give Spot more pools to draw from.
     * @default [gpu.instanceType]
     */
    instanceTypes: z.array(z.string().regex(INSTANCE_TYPE_PATTERN, "must be EC2 instance types such as g5.xlarge")).min(1).max(20).optional(),
    /** On-demand instances before any Spot. */
    onDemandBaseCapacity: z.number().int().min(0).default(0),
    /** Percent of the capacity above the base that runs on Spot (0: on-demand only). */
    spotPercent: z.number().int().min(0).max(100).default(0),
    /** How Spot picks its pools: capacity first (fewer interruptions), or price and capacity. */
    spotAllocationStrategy: z.enum(["capacity-optimized", "price-capacity-optimized"]).default("capacity-optimized"),
    /**
     * Spot's discount on the on-demand price, 0–0.95, for the local run's cost figures only (AWS bills
     * the market price). No default: a cost table must not rest on a number nobody chose.
     */
    spotDiscount: z.number().min(0).max(0.95).optional(),
    /**
     * Stopped instances kept ready, so a scale-out from zero pays a start, not a boot. On-demand only:
     * AWS refuses a warm pool on a group with a mixed instances policy or Spot (PutWarmPool).
     */
    warmPool: z
      .object({
        /** Stopped instances the warm pool keeps ready at least. */
        minSize: z.number().int().min(0).max(100).default(1),
      })
      .optional(),
    /** Windows one instance works through per scale-check: desired = ceil(backlog / this). */
    windowsPerInstance: z.number().int().min(1).max(1_000_000),
    /** A scale-in waits this long after the last scale-out (a backlog that dips between bursts keeps its instances). */
    scaleInCooldownSeconds: z.number().int().min(0).max(86_400).default(600),
    /** How often the scaler sizes the group, in minutes (it also does the idle stop). */
    scaleCheckMinutes: z.number().int().min(1).max(60).default(1),
    /**
     * How long a leaving instance drains: the load balancer's deregistration delay and the terminate
     * lifecycle hook's timeout. At most 110, so a Spot interruption's two minutes cover it.
     */
    drainSeconds: z.number().int().min(10).max(110, "must be at most 110: a Spot interruption gives two minutes").default(90),
  })
  .superRefine((f, ctx) => {
    if (f.warmPool && f.spotPercent > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["warmPool"],
        message: `cannot be set with spotPercent ${f.spotPercent}: AWS refuses a warm pool on a group with a mixed instances policy or Spot instances (PutWarmPool); drop one of the two`,
      });
    }
    if (f.onDemandBaseCapacity > f.maxSize) {
      ctx.addIssue({ code: "custom", path: ["onDemandBaseCapacity"], message: `must be at most maxSize (${f.maxSize})` });
    }
    if (f.spotPercent > 0 && f.spotDiscount === undefined) {
      ctx.addIssue({ code: "custom", path: ["spotDiscount"], message: "is required with Spot (spotPercent > 0): the cost figures need it" });
    }
  });
export type GpuFleetConfig = z.output<typeof gpuFleetSchema>;

/** `encache:gpu.capacity`: one instance (the default, as before) or the fleet. */
export const gpuCapacitySchema = z
  .object({
    /** `instance`: one GPU, started by the DLQ consumer and stopped when idle. `fleet`: an Auto Scaling group. */
    mode: z.enum(["instance", "fleet"]).default("instance"),
    fleet: gpuFleetSchema.optional(),
  })
  .superRefine((c, ctx) => {
    if (c.mode === "fleet" && c.fleet === undefined) ctx.addIssue({ code: "custom", path: ["fleet"], message: "is required when mode is fleet" });
    if (c.mode === "instance" && c.fleet !== undefined) {
      ctx.addIssue({ code: "custom", path: ["mode"], message: "is instance, but gpu.capacity.fleet is set: set mode to fleet, or drop the fleet block" });
    }
  });
export type GpuCapacityConfig = z.output<typeof gpuCapacitySchema>;

export const gpuConfigSchema = z
  .object({
    /**
     * One instance or an Auto Scaling fleet.
     * @default { mode: "instance" }
     */
    capacity: gpuCapacitySchema.default({ mode: "instance" }),
    /** EC2 instance type of the GPU worker. */
    instanceType: z.string().regex(INSTANCE_TYPE_PATTERN, "must be an EC2 instance type such as g5.xlarge"),
    /**
     * Value of the instance's `Name` tag; the auto-starter's tag scan and StartInstances grant key on
     * it, so it carries the environment (infra/stack-scope.ts).
     * @default `encache-gpu-worker-<environment>`
     */
    nameTag: z.string().min(1).max(255),
    /**
     * SSM parameter that holds the instance id (or the sentinel `none`); one per stack.
     * @default `/encache/<environment>/gpu/instance_id`
     */
    instanceIdParameter: z.string().regex(/^\/[A-Za-z0-9_.\-/]+$/, "must be an absolute SSM parameter path"),
    /** Public SSM parameter that resolves the AMI id. */
    amiParameter: z
      .string()
      .regex(/^\/aws\/service\//, "must be a public AWS SSM parameter under /aws/service/")
      .default("/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"),
    /** Root gp3 volume size in GiB. */
    rootVolumeGiB: z.number().int().min(30).max(16_384).default(100),
    /** TCP port of the GPU ingest service. */
    servicePort: z.number().int().min(1).max(65_535),
    /** HTTP path the window consumer POSTs each window to. */
    servicePath: z.string().regex(/^\/[A-Za-z0-9_.\-/]*$/, "must be an absolute URL path"),
    /** Per-request timeout of the POST to the GPU service, in ms. */
    requestTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
    /**
     * Stop the GPU after this many minutes without work (nothing queued, parked or running on it).
     * 0 turns the idle stop off, and then neither its function nor its StopInstances grant exists.
     */
    idleStopMinutes: z.number().int().min(0).max(1440),
    /** How often the idle check runs, in minutes; below idleStopMinutes. */
    idleCheckMinutes: z.number().int().min(1).max(60).default(5),
    /** GET path of the GPU service's status (`{"active": n, "idleSeconds": s}`). */
    statusPath: z
      .string()
      .regex(/^\/[A-Za-z0-9_.\-/]*$/, "must be an absolute URL path")
      .default("/status"),
    /**
     * An operator holds the GPU on, without a deploy, by tagging the instance with this key: value
     * `true` (until the tag is removed) or an ISO time the hold ends at.
     */
    holdTag: z.string().min(1).max(128).default("encache:gpu-hold"),
    /**
     * On-demand USD per instance-hour by instance type, like the fleet's table: what the local run's
     * gpu-idle scenario prices the GPU's running time at (against an always-on GPU).
     * @default {}
     */
    pricesUsdPerHour: z
      .record(z.string().regex(INSTANCE_TYPE_PATTERN, "keys must be EC2 instance types such as g5.xlarge"), z.number().min(0).max(1000))
      .default({}),
  })
  .superRefine((g, ctx) => {
    if (g.idleStopMinutes > 0 && g.idleCheckMinutes >= g.idleStopMinutes) {
      ctx.addIssue({
        code: "custom",
        path: ["idleCheckMinutes"],
        message: `must be below gpu.idleStopMinutes (${g.idleStopMinutes}), or the GPU idles a whole check longer than asked`,
      });
    }
  });
export type GpuConfig = z.output<typeof gpuConfigSchema>;

export const ingestConfigSchema = z
  .object({
    /** Visibility timeout of the ingest queue; must cover the window consumer. */
    queueVisibilityTimeoutSeconds: positiveInt(SQS_MAX_VISIBILITY_SECONDS),
    /** Retention of the ingest queue (its DLQ keeps 14 days). */
    messageRetentionSeconds: z.number().int().min(60).max(SQS_MAX_RETENTION_SECONDS).default(345_600),
    /** Visibility timeout of the ingest DLQ; must cover the DLQ consumer. */
    dlqVisibilityTimeoutSeconds: positiveInt(SQS_MAX_VISIBILITY_SECONDS),
    /** How long a parked DLQ message stays hidden while the GPU boots (original: 900). */
    dlqParkSeconds: z.number().int().min(0).max(SQS_MAX_VISIBILITY_SECONDS).default(900),
    /**
     * How long a parked DLQ message stays hidden while the GPU boots (a start was accepted, it is
     * pending or stopping, or its service does not answer yet). At most 45, so the parked backlog
     * is delivered within a minute of the service answering.
     */
    dlqBootParkSeconds: z.number().int().min(1).max(45, "must be at most 45: the parked backlog must drain within a minute of the GPU answering").default(10),
    /** How long a parked message waits when EC2 had no capacity for the GPU's type (the start is retried then). */
    dlqCapacityRetrySeconds: z.number().int().min(1).max(SQS_MAX_VISIBILITY_SECONDS).default(120),
    /**
     * How soon the window consumer tries a window again when the GPU is down or booting, instead
     * of the queue's visibility timeout: windows then reach the DLQ (which starts the GPU) within
     * maxReceiveCount × this.
     */
    windowRetrySeconds: z.number().int().min(1).max(SQS_MAX_VISIBILITY_SECONDS).default(10),
    /** A running GPU whose service refuses within this many seconds of launch is treated as booting. */
    gpuBootGraceSeconds: z.number().int().min(0).max(3600).default(600),
    window: ingestConsumerSchema,
    dlqConsumer: ingestConsumerSchema.extend({
      /**
       * Records per invocation. The original system reads one; up to 10 lets one invocation park
       * a batch with one lookup, one start attempt and one ChangeMessageVisibilityBatch, and
       * deliver a returned batch in parallel (docs/parts/ingest.md, "Batch size").
       */
      batchSize: z
        .number()
        .int()
        .min(1)
        .max(10, "must be at most 10: one invocation parks its records with one ChangeMessageVisibilityBatch (docs/parts/ingest.md)"),
      batchingWindowSeconds: z
        .literal(0, { message: "must be 0: a batching window would hold a returned (unparked) message back before it is tried" })
        .default(0),
    }),
  })
  .superRefine((c, ctx) => {
    for (const issue of ingestConfigProblems(c)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });
export type IngestConfig = z.output<typeof ingestConfigSchema>;

/** Cross-field checks, pure: paths are relative to `encache:ingest`. */
export function ingestConfigProblems(
  c: Pick<IngestConfig, "queueVisibilityTimeoutSeconds" | "dlqVisibilityTimeoutSeconds" | "messageRetentionSeconds" | "window" | "dlqConsumer">,
): Array<{ path: Array<string | number>; message: string }> {
  const problems = [
    ...consumerIssues(c.window, {
      key: ["window"],
      visibilityPath: ["queueVisibilityTimeoutSeconds"],
      visibilityTimeoutSeconds: c.queueVisibilityTimeoutSeconds,
      prefix: "ingest.window",
    }),
    ...consumerIssues(c.dlqConsumer, {
      key: ["dlqConsumer"],
      visibilityPath: ["dlqVisibilityTimeoutSeconds"],
      visibilityTimeoutSeconds: c.dlqVisibilityTimeoutSeconds,
      prefix: "ingest.dlqConsumer",
    }),
  ];
  if (c.messageRetentionSeconds >= SQS_MAX_RETENTION_SECONDS) {
    problems.push({ path: ["messageRetentionSeconds"], message: "must be below 14 days: the DLQ keeps 14 days and must outlive its source" });
  }
  return problems;
}

/** The GPU idle check's consumer sizing: one tick at a time, a few AWS calls and one HTTP GET. */
export const IDLE_CONSUMER = { timeoutSeconds: 30, memoryMb: 256, batchSize: 1, batchingWindowSeconds: 0, maxConcurrency: 2 } as const;

/** The idle-check queue's visibility (and its DLQ's): what its consumer needs. */
export const GPU_IDLE_QUEUE_VISIBILITY_SECONDS = requiredVisibilityTimeoutSeconds(IDLE_CONSUMER.timeoutSeconds, IDLE_CONSUMER.batchingWindowSeconds);

/**
 * The ingest part's source queues (`ingest`; `ingest-gpu-idle` while the single GPU's idle stop is
 * on, or `ingest-gpu-scaler` in fleet mode), with the keys behind their numbers. Pure.
 */
export function ingestQueueBudgets(c: {
  ingest: Pick<IngestConfig, "messageRetentionSeconds" | "queueVisibilityTimeoutSeconds">;
  gpu: Pick<GpuConfig, "idleStopMinutes"> & { capacity?: Pick<GpuCapacityConfig, "mode"> };
}): QueueBudget[] {
  const fleet = c.gpu.capacity?.mode === "fleet";
  return [
    {
      queue: "ingest",
      retentionSeconds: c.ingest.messageRetentionSeconds,
      retentionFrom: "ingest.messageRetentionSeconds",
      visibilitySeconds: c.ingest.queueVisibilityTimeoutSeconds,
      visibilityFrom: "ingest.queueVisibilityTimeoutSeconds",
      path: ["ingest", "messageRetentionSeconds"],
    },
    ...(fleet || c.gpu.idleStopMinutes > 0
      ? [
          {
            queue: fleet ? "ingest-gpu-scaler" : "ingest-gpu-idle",
            retentionSeconds: managedQueueDefaults.messageRetentionSeconds,
            retentionFrom: "the ManagedQueue default",
            visibilitySeconds: GPU_IDLE_QUEUE_VISIBILITY_SECONDS,
            visibilityFrom: fleet ? "the scaler's fixed sizing" : "the idle check's fixed sizing",
            path: fleet ? ["gpu", "capacity"] : ["gpu", "idleStopMinutes"],
          },
        ]
      : []),
  ];
}
