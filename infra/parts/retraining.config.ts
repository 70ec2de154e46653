import { createHash } from "node:crypto";
import { z } from "zod";
import { MODEL_NAME_PATTERN, MODEL_NAME_RULE } from "../../functions/shared/patterns";
import { SPOT_FALLBACKS } from "../../functions/retraining/env";
import { FARGATE_CPU_UNITS, fargateSizeProblem, scheduleExpressionProblem, scheduleTimezoneProblem } from "../aws-rules";
import { consumerIssues, consumerSchema } from "./consumer.config";
import type { PartArgs, QueueBudget } from "./part-args";

/**
 * `encache:retraining` (docs/parts/retraining.md). Defaults are the original system's: queue visibility 600 s, retention
 * 1 day, launcher 30 s / 256 MB, batch 10 with a 5 s window, 5 concurrent tasks, family
 * `tradai-strategy-generic`, container `strategy`, on-demand Fargate.
 */

/** The launcher's sizing, the original system's: 30 s, 256 MB, batches of 10 with a 5 s window. */
const launcherSchema = consumerSchema({ timeoutSeconds: 30, memoryMb: 256, batchSize: 10, batchingWindowSeconds: 5, maxConcurrency: 2 }).prefault({});

const scheduleSchema = z.object({
  /** The model the schedule retrains; sent as `model_name`. */
  modelName: z.string().regex(MODEL_NAME_PATTERN, `must be a model name the launcher accepts: ${MODEL_NAME_RULE}`),
  /** Scheduler expression: rate(…), cron(6 fields) or at(…). */
  scheduleExpression: z.string().superRefine((expression, ctx) => {
    const problem = scheduleExpressionProblem(expression);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  /** Time zone of a cron expression: a canonical IANA name of at most 50 characters, as Scheduler takes. */
  timezone: z
    .string()
    .superRefine((timezone, ctx) => {
      const problem = scheduleTimezoneProblem(timezone);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .default("UTC"),
});

const strategySchema = z.object({
  /** Container image of the generic strategy task (required: nothing sensible to default to). */
  image: z.string().regex(/^[a-z0-9][\w.\-/:@]+$/i, "must be a container image reference"),
  /** Task CPU units (a Fargate size). */
  cpu: z.number().int().default(1024),
  /** Task and container memory in MiB; must fit `cpu`. */
  memoryMb: z.number().int().default(2048),
  /** CPU architecture of the image. */
  cpuArchitecture: z.enum(["X86_64", "ARM64"]).default("X86_64"),
  /**
   * The strategy container's hardening. The image comes from outside this repository, so each
   * default can be turned off for an image that needs it (one that writes outside /tmp, needs
   * root, or a capability); the container's `encache.hardening-waived` label then says so.
   */
  hardening: z
    .object({
      /** A read-only root filesystem, with a writable scratch volume at `scratchPath`. */
      readOnlyRootFilesystem: z.boolean().default(true),
      /** The user[:group] to run as; `null` runs as the image's own user, which may be root. */
      user: z
        .string()
        .regex(/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/, "must be user or user:group")
        .nullable()
        .default("1000:1000"),
      /** Drop every Linux capability. */
      dropAllCapabilities: z.boolean().default(true),
      /** Where the scratch volume is mounted. */
      scratchPath: z
        .string()
        .regex(/^\/[A-Za-z0-9_.\-/]+$/, "must be an absolute path")
        .default("/tmp"),
    })
    .prefault({}),
});

export const retrainingConfigSchema = z
  .object({
    /** Retraining queue visibility (original: 600); must be ≥ 6 × launcher.timeoutSeconds + launcher.batchingWindowSeconds. */
    queueVisibilityTimeoutSeconds: z.number().int().min(1).max(43_200).default(600),
    /** Retraining queue retention (original: 1 day); below the DLQ's 14 days. */
    messageRetentionSeconds: z.number().int().min(60).max(1_209_599).default(86_400),
    launcher: launcherSchema,
    /** Most launcher tasks running at once (MAX_CONCURRENT_TASKS; original: 5). */
    maxConcurrentTasks: z.number().int().min(1).max(1000).default(5),
    /** Seconds a message deferred by the cap or a busy lease waits before it is tried again (DEFER_DELAY_SECONDS; SQS DelaySeconds 0–900). */
    deferDelaySeconds: z.number().int().min(0).max(900).default(60),
    /** Launch on FARGATE_SPOT instead of FARGATE (USE_SPOT). */
    useSpot: z.boolean().default(false),
    /**
     * With useSpot, a launch Fargate Spot refuses for capacity: retried at once on FARGATE
     * (`on-demand`), or failed and retried by SQS (`fail`) (SPOT_FALLBACK).
     * @default "on-demand"
     */
    spotFallback: z.enum(SPOT_FALLBACKS).default("on-demand"),
    /** Task definition family prefix; the family is `<prefix>-<environment>` (ECS_TASK_DEFINITION_FAMILY). */
    taskDefinitionFamily: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,200}$/, "must be letters, digits, _ or -")
      .default("tradai-strategy-generic"),
    /** The strategy container's name, which RunTask overrides address (ECS_CONTAINER_NAME). */
    containerName: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,255}$/, "must be letters, digits, _ or -")
      .default("strategy"),
    strategy: strategySchema,
    /** One EventBridge Scheduler schedule per model, each sending {model_name, trigger: "scheduled"}. */
    schedules: z.array(scheduleSchema).default([]),
  })
  .superRefine((c, ctx) => {
    for (const issue of retrainingConfigProblems(c)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

export type RetrainingConfig = z.output<typeof retrainingConfigSchema>;

/** Cross-field checks, pure: paths are relative to `encache:retraining`. */
export function retrainingConfigProblems(
  c: Pick<RetrainingConfig, "queueVisibilityTimeoutSeconds" | "launcher" | "schedules"> & {
    strategy: Omit<RetrainingConfig["strategy"], "hardening">;
  } & Partial<Pick<RetrainingConfig, "useSpot">>,
): Array<{ path: Array<string | number>; message: string }> {
  const problems: Array<{ path: Array<string | number>; message: string }> = [];
  problems.push(
    ...consumerIssues(c.launcher, {
      key: ["launcher"],
      visibilityPath: ["queueVisibilityTimeoutSeconds"],
      visibilityTimeoutSeconds: c.queueVisibilityTimeoutSeconds,
      prefix: "launcher",
    }),
  );
  const size = fargateSizeProblem(c.strategy.cpu, c.strategy.memoryMb);
  // The shared check names cpu when cpu itself is no Fargate size, else memory that does not fit it.
  if (size) problems.push({ path: ["strategy", FARGATE_CPU_UNITS.includes(c.strategy.cpu) ? "memoryMb" : "cpu"], message: size });
  if (c.useSpot && c.strategy.cpuArchitecture === "ARM64") {
    problems.push({ path: ["strategy", "cpuArchitecture"], message: "must be X86_64 when useSpot is true: Fargate Spot runs no ARM64 tasks" });
  }
  const seen = new Map<string, number>();
  c.schedules.forEach((s, i) => {
    const slug = scheduleSlug(s.modelName);
    const first = seen.get(slug);
    if (first !== undefined)
      problems.push({ path: ["schedules", i, "modelName"], message: `collides with schedules[${first}] (both name the schedule "${slug}")` });
    else seen.set(slug, i);
  });
  return problems;
}

/**
 * The longest slug whose schedule still fits AWS's names after Pulumi's 8-character auto-name
 * suffix: `retraining-schedule-<slug>-role` must stay within IAM's 64 (and the schedule within
 * Scheduler's 64).
 */
export const MAX_SCHEDULE_SLUG = 64 - 8 - "retraining-schedule-".length - "-role".length;

/**
 * A resource-name-safe form of a model name: `PascalStrategy-v2` → `pascalstrategy-v2`. A longer
 * one is cut and given a hash of the whole name, so it stays unique and deterministic. Pure.
 */
export function scheduleSlug(modelName: string): string {
  const slug = modelName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  if (slug.length <= MAX_SCHEDULE_SLUG) return slug;
  const hash = createHash("sha256").update(modelName, "utf8").digest("hex").slice(0, 6);
  return `${slug.slice(0, MAX_SCHEDULE_SLUG - hash.length - 1).replace(/-+$/, "")}-${hash}`;
}

/** The retraining queue, with the keys behind its numbers. Pure. */
/**
 * The interruptions queue's fixed settings (infra/parts/retraining.relaunch.ts): visibility covers
 * the relaunch consumer's 30 s timeout (6 × 30 s + a 5 s margin for the window), and four days'
 * retention outlasts every receive.
 */
export const RELAUNCH_QUEUE = { consumerTimeoutSeconds: 30, visibilitySeconds: 6 * 30 + 5, retentionSeconds: 345_600 } as const;

export function retrainingQueueBudgets(
  c: Pick<RetrainingConfig, "messageRetentionSeconds" | "queueVisibilityTimeoutSeconds"> & Partial<Pick<RetrainingConfig, "useSpot">>,
): QueueBudget[] {
  return [
    // With useSpot, the interruptions queue (infra/parts/retraining.relaunch.ts): its settings are the code's.
    ...(c.useSpot
      ? [
          {
            queue: "retraining-interruptions",
            retentionSeconds: RELAUNCH_QUEUE.retentionSeconds,
            retentionFrom: "the interruptions queue's retention (fixed)",
            visibilitySeconds: RELAUNCH_QUEUE.visibilitySeconds,
            visibilityFrom: "the relaunch consumer's 6 × 30 s + 5 s (fixed)",
            path: ["retraining", "useSpot"],
          },
        ]
      : []),
    {
      queue: "retraining",
      retentionSeconds: c.messageRetentionSeconds,
      retentionFrom: "retraining.messageRetentionSeconds",
      visibilitySeconds: c.queueVisibilityTimeoutSeconds,
      visibilityFrom: "retraining.queueVisibilityTimeoutSeconds",
      path: ["retraining", "messageRetentionSeconds"],
    },
  ];
}

/** Part 2's arguments (here, beside its config, so the relaunch (./retraining.relaunch) and the part (./retraining) both take them without importing each other). */
export interface RetrainingArgs extends PartArgs {
  /** `encache:retraining`. The strategy tasks run in the network's private subnets, with no public IP. */
  config: RetrainingConfig;
}
