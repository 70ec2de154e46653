import { z } from "zod";
import { SQS_MAX_RETENTION_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from "../../policy/contract";
import { fargateSizeProblem } from "../aws-rules";
import { executablesSchema } from "../../functions/worker/env";
import { HEARTBEAT_EXTENSION_FACTOR } from "../../functions/worker/job";
import type { QueueBudget } from "./part-args";

export { HEARTBEAT_EXTENSION_FACTOR };

/** Fargate's hard ceiling on the time between SIGTERM and SIGKILL; also the Spot warning. */
export const WORKER_STOP_TIMEOUT_SECONDS = 120;
/**
 * Seconds kept back from the stop timeout after the grace period: the abort settle (5 s,
 * `ABORT_SETTLE_MS` in functions/worker/config.ts), the parallel give-backs and the release of
 * protection (2 s agent timeout). So the grace is at most 105 s.
 */
export const SHUTDOWN_MARGIN_SECONDS = 15;

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** An image reference pinned by digest: `name[:tag]@sha256:<64 hex>`; the tag, if any, is for people. */
export const BASE_IMAGE_PATTERN = /^([a-z0-9.-]+(:\d+)?\/)?[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$/;

/** `encache:worker`: the long-running ECS queue worker (part 4, docs/parts/worker.md). */
export const workerConfigSchema = z
  .object({
    /** N: jobs one task runs at once (a receive asks for at most 10). */
    concurrency: int(1, 10),
    /** Task CPU units (a Fargate size). */
    cpu: int(256, 16_384),
    /** Task memory in MiB; also the container's hard memory limit. */
    memoryMb: int(512, 122_880),
    /** Fewest tasks; at least 1, because backlog ÷ running tasks has no value at 0 tasks. */
    minTasks: int(1, 1000),
    /** Most tasks. */
    maxTasks: int(1, 1000),
    /** Target visible messages per running task (acceptable latency ÷ average job time). */
    backlogPerTaskTarget: z.number().positive().max(100_000),
    scaleOutCooldownSeconds: int(0, 3600).default(60),
    scaleInCooldownSeconds: int(0, 3600).default(300),
    /** Tasks always placed on on-demand FARGATE before FARGATE_SPOT takes the rest. */
    fargateBase: int(0, 1000).default(0),
    /** Unprotected pause after the task goes idle, before it receives again. */
    idleWindowSeconds: int(0, 3600).default(30),
    /** Stop taking new jobs once protection has been held this long without a break. */
    maxProtectedSeconds: int(60, 172_800).default(14_400),
    /** Initial visibility of a job without `estimated_seconds`. */
    defaultVisibilitySeconds: int(1, SQS_MAX_VISIBILITY_SECONDS).default(900),
    /** Cap on the initial visibility (2 × estimate) and on every extension. */
    maxVisibilitySeconds: int(1, SQS_MAX_VISIBILITY_SECONDS).default(SQS_MAX_VISIBILITY_SECONDS),
    /** How often a running job's visibility is checked and, when near its end, extended. */
    heartbeatSeconds: int(5, 3600).default(60),
    /** Visibility a failed job's message gets before its next attempt. */
    retryDelaySeconds: int(0, SQS_MAX_VISIBILITY_SECONDS).default(60),
    /** How long in-flight jobs may finish after SIGTERM; must leave a margin below the 120 s stop timeout. */
    shutdownGraceSeconds: int(0, WORKER_STOP_TIMEOUT_SECONDS).default(100),
    /** `ExpiresInMinutes` of each protection call (1–2880); refreshed at 80 %. */
    protectionExpiresMinutes: int(1, 2880).default(60),
    /** Work queue retention; below the DLQ's 14 days. */
    messageRetentionSeconds: int(60, SQS_MAX_RETENTION_SECONDS - 1).default(345_600),
    /** The handler allow-list: job type → absolute executable path and fixed arguments. */
    executables: executablesSchema.refine((e) => Object.keys(e).length > 0, "must allow at least one executable"),
    /**
     * The image the worker's Dockerfile builds FROM, pinned by digest (`node:22-alpine@sha256:<64 hex>`):
     * the image tag hashes it, so a new base is a new tag, and the same tag is always the same base.
     * A tag alone would let `node:22-alpine` move under an existing image tag. README, "Refreshing
     * the worker's base image", says how to find the current digest.
     */
    baseImage: z
      .string()
      .regex(
        BASE_IMAGE_PATTERN,
        'must pin the image by digest: <name>[:<tag>]@sha256:<64 lowercase hex>, such as node:22-alpine@sha256:… (README, "Refreshing the worker\'s base image")',
      ),
    /**
     * Images the repository keeps. At least 2: during a deploy the service still runs the previous
     * image, and a rollback needs it, so it must not expire the moment the new one is pushed.
     */
    keepImages: z.number().int().min(2, "must be at least 2: the running service and a rollback still need the previous image").max(1000).default(10),
  })
  .superRefine((c, ctx) => {
    for (const issue of workerConfigIssues(c)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

export type WorkerConfig = z.infer<typeof workerConfigSchema>;

type WorkerChecked = Omit<WorkerConfig, "executables" | "keepImages" | "messageRetentionSeconds" | "baseImage">;

/** Cross-field rules, pure and exported for tests; paths are relative to `encache:worker`. */
export function workerConfigIssues(c: WorkerChecked): Array<{ path: string[]; message: string }> {
  const issues: Array<{ path: string[]; message: string }> = [];
  if (c.minTasks > c.maxTasks) issues.push({ path: ["minTasks"], message: `must not exceed maxTasks (${c.maxTasks})` });
  if (c.fargateBase > c.maxTasks) issues.push({ path: ["fargateBase"], message: `must not exceed maxTasks (${c.maxTasks})` });
  const size = fargateSizeProblem(c.cpu, c.memoryMb);
  if (size) issues.push({ path: ["memoryMb"], message: size });
  if (c.defaultVisibilitySeconds > c.maxVisibilitySeconds) {
    issues.push({ path: ["defaultVisibilitySeconds"], message: `must not exceed maxVisibilitySeconds (${c.maxVisibilitySeconds})` });
  }
  if (HEARTBEAT_EXTENSION_FACTOR * c.heartbeatSeconds > c.maxVisibilitySeconds) {
    issues.push({ path: ["heartbeatSeconds"], message: `× ${HEARTBEAT_EXTENSION_FACTOR} must fit in maxVisibilitySeconds (${c.maxVisibilitySeconds})` });
  }
  const graceLimit = WORKER_STOP_TIMEOUT_SECONDS - SHUTDOWN_MARGIN_SECONDS;
  if (c.shutdownGraceSeconds > graceLimit) {
    issues.push({
      path: ["shutdownGraceSeconds"],
      message: `must be at most ${graceLimit}: the stop timeout is ${WORKER_STOP_TIMEOUT_SECONDS} s and giving messages back needs ${SHUTDOWN_MARGIN_SECONDS} s`,
    });
  }
  if (c.protectionExpiresMinutes * 60 <= c.heartbeatSeconds) {
    issues.push({ path: ["protectionExpiresMinutes"], message: "must be longer than one heartbeat" });
  }
  return issues;
}

/**
 * The work queue's own visibility covers only the moment between a receive and the worker's
 * first ChangeMessageVisibility (or a task dying before it): one heartbeat extension.
 */
export function workQueueVisibilitySeconds(c: Pick<WorkerConfig, "heartbeatSeconds" | "maxVisibilitySeconds">): number {
  return Math.min(c.maxVisibilitySeconds, HEARTBEAT_EXTENSION_FACTOR * c.heartbeatSeconds);
}

/** The work queue (its visibility derived from the heartbeat), with the keys behind its numbers. Pure. */
export function workerQueueBudgets(c: Pick<WorkerConfig, "messageRetentionSeconds" | "heartbeatSeconds" | "maxVisibilitySeconds">): QueueBudget[] {
  return [
    {
      queue: "worker",
      retentionSeconds: c.messageRetentionSeconds,
      retentionFrom: "worker.messageRetentionSeconds",
      visibilitySeconds: workQueueVisibilitySeconds(c),
      visibilityFrom: "worker.heartbeatSeconds and worker.maxVisibilitySeconds",
      path: ["worker", "messageRetentionSeconds"],
    },
  ];
}
