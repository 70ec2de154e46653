import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { workerConfigSchema } from "./parts/worker.config";
import { retrainingConfigSchema } from "./parts/retraining.config";
import { poolConfigSchema } from "./parts/pool.config";
import { fleetConfigSchema } from "./parts/fleet.config";

/**
 * The stack config, validated with zod before any resource is declared.
 *
 * Keys live under the project namespace (`encache:`) as structured YAML objects, so
 * one `Pulumi.<stack>.yaml` reads like a document and every error can name the
 * full key path (`encache:ingest.window.timeoutSeconds`).
 */

export const PROJECT_NAMESPACE = "encache";

/** SQS allows a visibility timeout of at most 12 hours. */
const SQS_MAX_VISIBILITY_SECONDS = 43_200;
/** SQS retention is 60 s to 14 days. */
const SQS_MAX_RETENTION_SECONDS = 1_209_600;
/** AWS advises visibility ≥ 6 × function timeout + batching window for Lambda SQS consumers. */
export const VISIBILITY_TIMEOUT_MULTIPLIER = 6;

/** `g5.xlarge`, `p4d.24xlarge`, `g6e.2xlarge`, `inf2.xlarge`… family, generation, options, a dot, a size. */
const INSTANCE_TYPE = /^[a-z]+[0-9][a-z0-9-]*\.[0-9]*(nano|micro|small|medium|large|xlarge|metal(-[0-9]+xl)?)$/;

const positiveInt = (max: number) => z.number().int().min(1).max(max);

const consumerSchema = z.object({
  /** Lambda timeout in seconds (1–900). */
  timeoutSeconds: positiveInt(900),
  /** Lambda memory in MB (128–10240). */
  memoryMb: z.number().int().min(128).max(10_240).default(256),
  /** SQS batch size (1–10000; above 10 needs a batching window). */
  batchSize: positiveInt(10_000),
  /** Batching window in seconds (0–300). */
  batchingWindowSeconds: z.number().int().min(0).max(300).default(0),
  /** Event source mapping maximum concurrency (2–1000). */
  maxConcurrency: z.number().int().min(2).max(1000),
});

const retention = z.number().int().min(60).max(SQS_MAX_RETENTION_SECONDS);

export const stackConfigSchema = z
  .object({
    /** Short environment name, used in tags and resource names. */
    environment: z.string().regex(/^[a-z][a-z0-9-]{1,15}$/, "must be 2–16 lowercase letters, digits or dashes"),
    /** CloudWatch log retention for every function, in days. */
    logRetentionDays: z
      .number()
      .int()
      .refine((d) => [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653].includes(d), {
        message: "must be a CloudWatch retention value (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, …)",
      }),
    /** Turn on termination/deletion protection for stateful resources (prod). */
    deletionProtection: z.boolean().default(false),
    /** SNS topic ARNs notified by every DLQ depth alarm. */
    alarmActions: z.array(z.string().regex(/^arn:aws[a-z-]*:sns:/, "must be an SNS topic ARN")).default([]),
    network: z.object({
      /** IPv4 CIDR of the platform VPC. */
      cidrBlock: z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/(1[6-9]|2[0-4])$/, "must be an IPv4 CIDR between /16 and /24"),
      /** NAT gateways: one shared (cheap, dev) or one per AZ (resilient, prod). */
      natGateways: z.enum(["Single", "OnePerAz"]).default("Single"),
      /** How many availability zones to spread subnets over. */
      availabilityZones: z.number().int().min(2).max(3).default(2),
    }),
    queues: z
      .object({
        /** Receives before a message moves to its DLQ. Never 1: one transient error would dead-letter it. */
        maxReceiveCount: z
          .number()
          .int()
          .min(2, "must be at least 2 (1 dead-letters a message on its first transient failure)")
          .max(1000)
          .default(3),
      })
      .default({ maxReceiveCount: 3 }),
    gpu: z.object({
      /** EC2 instance type of the GPU worker. */
      instanceType: z.string().regex(INSTANCE_TYPE, "must be an EC2 instance type such as g5.xlarge"),
      /** Value of the instance's `Name` tag; the auto-starter's tag scan looks for it. */
      nameTag: z.string().min(1).max(255).default("encache-gpu-worker"),
      /** SSM parameter that holds the instance id (or the sentinel `none`). */
      instanceIdParameter: z
        .string()
        .regex(/^\/[A-Za-z0-9_.\-/]+$/, "must be an absolute SSM parameter path")
        .default("/encache/gpu/instance_id"),
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
    }),
    retraining: retrainingConfigSchema,
    worker: workerConfigSchema,
    pool: poolConfigSchema,
    fleet: fleetConfigSchema,
    ingest: z.object({
      /** Visibility timeout of the ingest queue; must cover the window consumer. */
      queueVisibilityTimeoutSeconds: positiveInt(SQS_MAX_VISIBILITY_SECONDS),
      /** Retention of the ingest queue (its DLQ keeps 14 days). */
      messageRetentionSeconds: retention.default(345_600),
      /** Visibility timeout of the ingest DLQ; must cover the DLQ consumer. */
      dlqVisibilityTimeoutSeconds: positiveInt(SQS_MAX_VISIBILITY_SECONDS),
      /** How long a parked DLQ message stays hidden while the GPU boots (seed: 900). */
      dlqParkSeconds: z.number().int().min(0).max(SQS_MAX_VISIBILITY_SECONDS).default(900),
      window: consumerSchema,
      dlqConsumer: consumerSchema.extend({
        /** The seed reads the DLQ one message per invocation. */
        batchSize: z.literal(1, { message: "must be 1: the DLQ consumer parks messages one at a time (seed 000)" }),
      }),
    }),
  })
  .superRefine((cfg, ctx) => {
    const checks: Array<{ path: (string | number)[]; visibility: number; consumer: z.infer<typeof consumerSchema>; label: string }> = [
      { path: ["ingest", "queueVisibilityTimeoutSeconds"], visibility: cfg.ingest.queueVisibilityTimeoutSeconds, consumer: cfg.ingest.window, label: "ingest.window" },
      { path: ["ingest", "dlqVisibilityTimeoutSeconds"], visibility: cfg.ingest.dlqVisibilityTimeoutSeconds, consumer: cfg.ingest.dlqConsumer, label: "ingest.dlqConsumer" },
    ];
    for (const c of checks) {
      const needed = requiredVisibilityTimeoutSeconds(c.consumer.timeoutSeconds, c.consumer.batchingWindowSeconds);
      if (c.visibility < needed) {
        ctx.addIssue({
          code: "custom",
          path: c.path,
          message: `must be at least ${VISIBILITY_TIMEOUT_MULTIPLIER} × ${c.label}.timeoutSeconds + ${c.label}.batchingWindowSeconds = ${needed} (got ${c.visibility})`,
        });
      }
    }
    for (const [label, consumer] of [["ingest.window", cfg.ingest.window], ["ingest.dlqConsumer", cfg.ingest.dlqConsumer]] as const) {
      if (consumer.batchSize > 10 && consumer.batchingWindowSeconds === 0) {
        ctx.addIssue({ code: "custom", path: [...label.split("."), "batchingWindowSeconds"], message: "must be > 0 when batchSize is above 10 (Lambda rule)" });
      }
    }
    if (cfg.ingest.messageRetentionSeconds >= SQS_MAX_RETENTION_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["ingest", "messageRetentionSeconds"],
        message: "must be below 14 days: the DLQ keeps 14 days and must outlive its source",
      });
    }
  });

export type StackConfig = z.infer<typeof stackConfigSchema>;
export type RawStackConfig = z.input<typeof stackConfigSchema>;

/** Visibility a queue needs so Lambda never sees a message twice while a batch is in flight. */
export function requiredVisibilityTimeoutSeconds(functionTimeoutSeconds: number, batchingWindowSeconds: number): number {
  return VISIBILITY_TIMEOUT_MULTIPLIER * functionTimeoutSeconds + batchingWindowSeconds;
}

/** Thrown when the stack config is invalid; every line names a full config key. */
export class StackConfigError extends Error {
  constructor(
    readonly issues: ReadonlyArray<{ key: string; reason: string }>,
  ) {
    super(`Invalid stack config:\n${issues.map((i) => `  ${i.key}: ${i.reason}`).join("\n")}`);
    this.name = "StackConfigError";
  }
}

/** Validates a raw config object. Pure: tests call it without Pulumi. */
export function parseStackConfig(raw: unknown): StackConfig {
  const result = stackConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new StackConfigError(
    result.error.issues.map((issue) => ({
      key: configKey(issue.path),
      reason: issue.code === "invalid_type" && valueAt(raw, issue.path) === undefined ? "is required" : issue.message,
    })),
  );
}

function valueAt(raw: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node: unknown = raw;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** `["ingest", "window", "timeoutSeconds"]` → `encache:ingest.window.timeoutSeconds`. */
export function configKey(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return `${PROJECT_NAMESPACE}:<root>`;
  const [head, ...rest] = path;
  return `${PROJECT_NAMESPACE}:${String(head)}${rest.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("")}`;
}

/** The top-level keys the schema knows, so unknown keys in a stack file are reported, not ignored. */
const TOP_LEVEL_KEYS = Object.keys(stackConfigSchema.shape) as Array<keyof RawStackConfig>;

/**
 * Reads every `encache:*` key from the running stack and validates it. Call this first,
 * before declaring any resource, so a bad value fails `pulumi up` with the key and reason.
 */
export function loadStackConfig(): StackConfig {
  const all = pulumi.runtime.allConfig();
  const raw: Record<string, unknown> = {};
  const issues: Array<{ key: string; reason: string }> = [];
  for (const [fullKey, value] of Object.entries(all)) {
    const [namespace, key] = fullKey.split(":", 2);
    if (namespace !== PROJECT_NAMESPACE || key === undefined) continue;
    if (!(TOP_LEVEL_KEYS as string[]).includes(key)) {
      issues.push({ key: fullKey, reason: `is not a known key (known: ${TOP_LEVEL_KEYS.join(", ")})` });
      continue;
    }
    raw[key] = decodeConfigValue(value);
  }
  if (issues.length > 0) throw new StackConfigError(issues);
  return parseStackConfig(raw);
}

/** Pulumi hands every value over as a string; objects, numbers and booleans arrive JSON-encoded. */
function decodeConfigValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
