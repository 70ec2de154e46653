import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";
import { interruptionTagCap, SPOT_BREAKER_MAX_TAGS } from "../../functions/gpu/spot-breaker";
import { requiredVisibilityTimeoutSeconds, SQS_MAX_RETENTION_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from "../../policy/contract";
import { consumerIssues, consumerSchema } from "./consumer.config";
import { managedQueueDefaults } from "../components/managed-queue";
import { BASE_IMAGE_PATTERN } from "./worker.config";
import type { PartArgs, QueueBudget } from "./part-args";

/**
 * `encache:gpu` and `encache:ingest` (part 1, docs/parts/ingest.md): the GPU instance, and the ingest queue,
 * its DLQ and their two consumers.
 */

const positiveInt = (max: number) => z.number().int().min(1).max(max);

/** The ingest consumers' sizing: memory and batching window default, the rest is per stack. */
const ingestConsumerSchema = consumerSchema({ memoryMb: 256, batchingWindowSeconds: 0 });

/** The longest drain Spot's two-minute interruption notice leaves room for. */
export const SPOT_DRAIN_MAX_SECONDS = 110;

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
     * Instance types the group may launch, in order of preference (with Spot, capacity-optimized
     * honours it as capacity-optimized-prioritized; on-demand launches them in that order); several
     * give Spot more pools to draw from. One type only with a warm pool.
     * @default [gpu.instanceType]
     */
    instanceTypes: z.array(z.string().regex(INSTANCE_TYPE_PATTERN, "must be EC2 instance types such as g5.xlarge")).min(1).max(20).optional(),
    /** On-demand instances before any Spot. */
    onDemandBaseCapacity: z.number().int().min(0).default(0),
    /** Percent of the capacity above the base that runs on Spot (0: on-demand only). */
    spotPercent: z.number().int().min(0).max(100).default(0),
    /**
     * How Spot picks its pools: capacity first in the listed order (declared as
     * capacity-optimized-prioritized), or price and capacity (which does not follow the order).
     */
    spotAllocationStrategy: z.enum(["capacity-optimized", "price-capacity-optimized"]).default("capacity-optimized"),
    /**
     * Stopped instances kept ready, so a scale-out from zero pays a start, not a boot. On-demand only:
     * AWS refuses a warm pool on a group with a mixed instances policy or Spot (PutWarmPool).
     */
    warmPool: z
      .object({
        /** Stopped instances the warm pool keeps ready: exactly this many (its maxGroupPreparedCapacity is the same). */
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
     * The Spot circuit breaker (docs/parts/ingest.md, "The Spot breaker"): after `interruptions` Spot
     * interruption notices or rebalance recommendations of the group's instances within
     * `windowMinutes`, the scaler launches on demand only for `cooldownMinutes`, then returns to the
     * configured mix. Acts only with Spot (spotPercent > 0).
     * @default { interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 }
     */
    spotBreaker: z
      .object({
        /** Interruptions within the window that open the breaker (1: any one does). */
        interruptions: z.number().int().min(1).max(10).default(2),
        /** The window the interruptions must fall within, minutes. */
        windowMinutes: z.number().int().min(1).max(1440).default(15),
        /** How long the group stays on demand after the interruption that opened the breaker, minutes. */
        cooldownMinutes: z.number().int().min(1, "must be at least 1: a breaker that opens for no time does nothing").max(1440).default(30),
      })
      .superRefine((b, ctx) => {
        const cap = interruptionTagCap(b);
        if (cap > SPOT_BREAKER_MAX_TAGS) {
          ctx.addIssue({
            code: "custom",
            message:
              `keeps ${cap} interruption tags on the group (interruptions + (interruptions − 1) × ⌈cooldownMinutes / windowMinutes⌉), ` +
              `more than ${SPOT_BREAKER_MAX_TAGS}: an Auto Scaling group holds 50 tags; fewer interruptions or a longer window`,
          });
        }
      })
      .default({ interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 }),
    /**
     * How long a leaving instance drains: the load balancer's deregistration delay and the terminate
     * lifecycle hook's heartbeat timeout. AWS's bounds: a hook's heartbeat timeout is 30–7200 s
     * (PutLifecycleHook) and a deregistration delay 0–3600 s, so 30–3600; with Spot (spotPercent > 0)
     * at most 110, so a Spot interruption's two minutes cover it.
     * @default 90
     */
    drainSeconds: z
      .number()
      .int()
      .min(30, "must be at least 30: AWS refuses a lifecycle hook heartbeat timeout below 30 s (PutLifecycleHook)")
      .max(3600, "must be at most 3600: the load balancer's deregistration delay (the same value) allows no more")
      .default(90),
  })
  .superRefine((f, ctx) => {
    if (f.spotPercent > 0 && f.drainSeconds > SPOT_DRAIN_MAX_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["drainSeconds"],
        message: `must be at most ${SPOT_DRAIN_MAX_SECONDS} with Spot (spotPercent ${f.spotPercent}): a Spot interruption gives two minutes`,
      });
    }
    if (f.warmPool && f.spotPercent > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["warmPool"],
        message: `cannot be set with spotPercent ${f.spotPercent}: AWS refuses a warm pool on a group with a mixed instances policy or Spot instances (PutWarmPool); drop one of the two`,
      });
    }
    if (f.warmPool && (f.instanceTypes?.length ?? 1) > 1) {
      ctx.addIssue({
        code: "custom",
        path: ["warmPool"],
        message: `cannot be set with ${f.instanceTypes?.length} instanceTypes: several types need a mixed instances policy, which AWS refuses beside a warm pool (PutWarmPool); list one type or drop the warm pool`,
      });
    }
    if (f.onDemandBaseCapacity > f.maxSize) {
      ctx.addIssue({ code: "custom", path: ["onDemandBaseCapacity"], message: `must be at most maxSize (${f.maxSize})` });
    }
  });
export type GpuFleetConfig = z.output<typeof gpuFleetSchema>;

/** The AMI: an AMI id, or an SSM parameter (a public `/aws/service/…` one or the account's own) that holds one. */
export const AMI_ID_PATTERN = /^ami-[0-9a-f]{8,17}$/;
const AMI_PARAMETER_PATTERN = /^\/[A-Za-z0-9_.\-/]{1,2047}$/;
export const DEFAULT_GPU_AMI = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id";

/**
 * A private ECR image pinned by digest: `<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag]@sha256:<64 hex>`.
 * ECR only: the instance role pulls it with ECR's login, granted on this one repository (its ARN is
 * derived from the URI, `modelRepositoryArn`).
 */
export const ECR_IMAGE_PATTERN =
  /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com\/([a-z0-9]+(?:[._/-][a-z0-9]+)*)(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$/;

const urlPath = z.string().regex(/^\/[A-Za-z0-9_.\-/]*$/, "must be an absolute URL path");

/**
 * What the gateway needs of any model server on the instance, whoever starts it (`gpu.model`'s
 * fields common to both sources). Written under a `model` key so the config reference
 * (scripts/docs-generate.ts, which matches a JSDoc by the property names above it) files these
 * docs under gpu.model.*, not under every other `port` or `concurrency`.
 */
const MODEL_SERVER = {
  model: {
    /** TCP port the model server listens on, on localhost (not the service port: the gateway holds that one). */
    port: z.number().int().min(1).max(65_535),
    /** Path the gateway POSTs each window to (same body, same Idempotency-Key header). */
    path: urlPath,
    /** The model server's own health path: the gateway answers 200 on the status path only while this answers 200. */
    healthPath: urlPath,
    /**
     * Windows the gateway forwards to the model at once; more wait their turn.
     * @default 1
     */
    concurrency: z.number().int().min(1).max(256).default(1),
    /**
     * How long the gateway waits for the model's answer to one window, ms. Below gpu.requestTimeoutMs:
     * the consumer gives up on its POST then.
     * @default 9000
     */
    timeoutMs: z.number().int().min(100).max(120_000).default(9_000),
  },
};

/** `<account>.dkr.ecr.<region>.amazonaws.com/<repo>…@sha256:…` → the repository's ARN. Pure. */
export function modelRepositoryArn(image: string): string {
  const m = ECR_IMAGE_PATTERN.exec(image);
  if (!m) throw new Error(`not an ECR image pinned by digest: ${image}`);
  return `arn:aws:ecr:${m[2]}:${m[1]}:repository/${m[3]}`;
}

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

/**
 * `gpu.amiParameter`, gpu.ami's former name (a public parameter then), read as gpu.ami: a stack
 * file that still says it keeps its AMI rather than losing the key silently (nested unknown keys
 * are dropped). Both at once is an error.
 */
function amiParameterAlias(raw: unknown, ctx: z.core.$RefinementCtx): unknown {
  if (typeof raw !== "object" || raw === null || !("amiParameter" in raw)) return raw;
  const { amiParameter, ...rest } = raw as Record<string, unknown>;
  if ("ami" in rest) {
    ctx.addIssue({ code: "custom", path: ["amiParameter"], message: "is the former name of gpu.ami: set one of the two" });
    return rest;
  }
  return { ...rest, ami: amiParameter };
}

const gpuConfigObject = z
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
    /**
     * The GPU's AMI: an AMI id (`ami-…`), or an SSM parameter that holds one, public (`/aws/service/…`)
     * or the account's own. Resolved at deploy time, so a new AMI is a visible diff (a new instance in
     * instance mode, an instance refresh that can roll back in a fleet). With `model.source: ami`, this
     * AMI starts the model server itself. Formerly `gpu.amiParameter`, which is still read.
     */
    ami: z
      .string()
      .refine((v) => AMI_ID_PATTERN.test(v) || AMI_PARAMETER_PATTERN.test(v), "must be an AMI id (ami-…) or an absolute SSM parameter name")
      .default(DEFAULT_GPU_AMI),
    /**
     * The user's model server, which the gateway forwards windows to on localhost. `source: image`:
     * a container image the user data pulls and runs (`--gpus all`, host network). `source: ami`: the
     * AMI (gpu.ami, the user's own) starts the model server at boot, and the user data starts the
     * gateway only. The gateway runs in both.
     */
    model: z.discriminatedUnion("source", [
      z.object({
        /** `image`: the user data pulls and runs `image`; `ami`: the AMI starts the model server itself. */
        source: z.literal("image"),
        /**
         * The model server's container image, pinned by digest: `<account>.dkr.ecr.<region>.amazonaws.com/<repo>@sha256:<64 hex>`.
         * A new digest is a new user data: a new instance (instance mode) or an instance refresh (fleet).
         */
        image: z
          .string()
          .regex(ECR_IMAGE_PATTERN, "must be an ECR image pinned by digest: <account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag]@sha256:<64 lowercase hex>"),
        ...MODEL_SERVER.model,
      }),
      z.object({ source: z.literal("ami"), ...MODEL_SERVER.model }),
    ]),
    /**
     * Base image of the GPU gateway's container, pinned by digest (as encache:worker.baseImage):
     * part of the image tag, so a new base is a new tag.
     */
    gatewayBaseImage: z
      .string()
      .regex(BASE_IMAGE_PATTERN, "must pin the image by digest: <name>[:<tag>]@sha256:<64 lowercase hex>, such as node:22-alpine@sha256:…"),
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
  })
  .superRefine((g, ctx) => {
    if (g.servicePort < 1024) {
      ctx.addIssue({
        code: "custom",
        path: ["servicePort"],
        message: "must be 1024 or above: the gateway listens on it as a non-root user (functions/gpu/Dockerfile)",
      });
    }
    if (g.model.port === g.servicePort) {
      ctx.addIssue({
        code: "custom",
        path: ["model", "port"],
        message: `must differ from gpu.servicePort (${g.servicePort}): the gateway listens there, on the same host`,
      });
    }
    if (g.model.timeoutMs >= g.requestTimeoutMs) {
      ctx.addIssue({
        code: "custom",
        path: ["model", "timeoutMs"],
        message: `must be below gpu.requestTimeoutMs (${g.requestTimeoutMs}): the consumer gives up on its POST then`,
      });
    }
    if (g.idleStopMinutes > 0 && g.idleCheckMinutes >= g.idleStopMinutes) {
      ctx.addIssue({
        code: "custom",
        path: ["idleCheckMinutes"],
        message: `must be below gpu.idleStopMinutes (${g.idleStopMinutes}), or the GPU idles a whole check longer than asked`,
      });
    }
  });
export const gpuConfigSchema = z.preprocess(amiParameterAlias, gpuConfigObject);
export type GpuConfig = z.output<typeof gpuConfigObject>;
export type GpuModelConfig = GpuConfig["model"];

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

/** Part 1's arguments (here, beside its config, so the GPU tier (./gpu) and the part (./ingest) both take them without importing each other). */
export interface IngestArgs extends PartArgs {
  /** `encache:ingest` and `encache:gpu`. */
  config: { ingest: IngestConfig; gpu: GpuConfig };
}

/** Part 1's stack outputs. */
export interface IngestOutputs extends Record<string, pulumi.Input<unknown>> {
  ingestQueueUrl: pulumi.Output<string>;
  ingestDlqUrl: pulumi.Output<string>;
  ingestQuarantineUrl: pulumi.Output<string>;
  /** Instance mode. */
  gpuInstanceId?: pulumi.Output<string>;
  gpuInstanceIdParameter?: pulumi.Output<string>;
  /** Fleet mode: the group, and the load balancer's DNS name the consumers POST to. */
  gpuFleetGroupName?: pulumi.Output<string>;
  gpuServiceHost?: pulumi.Output<string>;
  /** Fleet mode: the terminate hook the gateway completes once drained (its GPU_DRAIN_HOOK_NAME). */
  gpuDrainHookName?: pulumi.Output<string>;
  /** The key table every GPU's gateway claims window keys in. */
  gpuKeysTable: pulumi.Output<string>;
  /** The gateway image every GPU runs, pinned by digest. */
  gpuGatewayImageUri: pulumi.Output<string>;
  ingestWindowFunction: pulumi.Output<string>;
  ingestDlqConsumerFunction: pulumi.Output<string>;
}
