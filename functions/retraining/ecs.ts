import { createHash } from "node:crypto";
import { type ECSClient, paginateListTasks, RunTaskCommand, type RunTaskCommandInput, type Task } from "@aws-sdk/client-ecs";
import type { LauncherConfig } from "./config";
import { strategyOf, type RetrainingMessage } from "./message";

/** Every task the launcher starts carries this `startedBy`; the capacity count filters on it. */
export const STARTED_BY = "retraining-scheduler";
/** The container env var naming the interrupted task a relaunch replaces. */
export const RELAUNCH_OF_ENV = "RELAUNCH_OF";

export type CapacityProvider = "FARGATE" | "FARGATE_SPOT";

export function capacityProviderFor(useSpot: boolean): CapacityProvider {
  return useSpot ? "FARGATE_SPOT" : "FARGATE";
}

/** Running launcher tasks: ListTasks by startedBy with desired status RUNNING (pending ones count too), all pages. */
export async function countRunningTasks(ecs: ECSClient, cluster: string): Promise<number> {
  let count = 0;
  for await (const page of paginateListTasks({ client: ecs }, { cluster, startedBy: STARTED_BY, desiredStatus: "RUNNING" })) {
    count += page.taskArns?.length ?? 0;
  }
  return count;
}

export interface LaunchRequest {
  message: RetrainingMessage;
  messageId: string;
  jobId: string;
}

/** Where one RunTask asks for capacity, and the clientToken that makes that one call idempotent. */
export interface Placement {
  capacityProvider: CapacityProvider;
  clientToken: string;
}

/**
 * The first RunTask of an origin: the configured provider, the origin's id as its token. A relaunch
 * of a task Spot interrupted runs on FARGATE, which Spot cannot take back. Pure.
 */
export function firstPlacement(config: Pick<LauncherConfig, "useSpot">, originMessageId: string, relaunch = false): Placement {
  return { capacityProvider: relaunch ? "FARGATE" : capacityProviderFor(config.useSpot), clientToken: originMessageId };
}

/**
 * The on-demand retry of a Spot launch refused for capacity: FARGATE, with a token of its own
 * derived from the origin's id (ECS answers a reused token with the first call's outcome), so a
 * redelivery of the retry names the same task. At most 64 ASCII characters, as RunTask requires. Pure.
 */
export function fallbackPlacement(originMessageId: string): Placement {
  return { capacityProvider: "FARGATE", clientToken: `od-${createHash("sha256").update(originMessageId).digest("hex").slice(0, 48)}` };
}

/**
 * RunTask's failure when Fargate Spot has no capacity: reason "Capacity is unavailable at this time.
 * Please try again later or in a different availability zone" (AWS re:Post, "ecs-fargate-runtask-capacity").
 */
export function isCapacityFailure(error: unknown): boolean {
  return error instanceof LaunchFailedError && error.failures.some((f) => /^Capacity is unavailable/i.test(f.reason ?? ""));
}

/**
 * The RunTask request of docs/parts/retraining.md: a capacity provider strategy (never `launchType`, which
 * cannot pick Spot), the container env overrides and tags of the original system, `startedBy`, no public
 * IP, and the SQS message id as `clientToken` so a redelivered message starts no second task.
 */
export function runTaskInput(config: LauncherConfig, r: LaunchRequest, placement: Placement = firstPlacement(config, r.messageId)): RunTaskCommandInput {
  const strategy = strategyOf(r.message.modelName);
  return {
    cluster: config.cluster,
    taskDefinition: config.taskDefinition,
    count: 1,
    startedBy: STARTED_BY,
    clientToken: placement.clientToken,
    capacityProviderStrategy: [{ capacityProvider: placement.capacityProvider, weight: 1 }],
    networkConfiguration: {
      awsvpcConfiguration: { subnets: config.subnets, securityGroups: config.securityGroups, assignPublicIp: "DISABLED" },
    },
    overrides: {
      containerOverrides: [
        {
          name: config.containerName,
          environment: [
            { name: "JOB_ID", value: r.jobId },
            { name: "TRADING_MODE", value: "train" },
            { name: "STRATEGY", value: strategy },
            { name: "MODEL_NAME", value: r.message.modelName },
            { name: "RETRAINING_TRIGGER", value: r.message.trigger },
            { name: "ENVIRONMENT", value: config.environment },
            // The relaunch consumer reads it back from the task's overrides: a relaunch is never relaunched again.
            ...(r.message.relaunchOf ? [{ name: RELAUNCH_OF_ENV, value: r.message.relaunchOf.taskArn }] : []),
          ],
        },
      ],
    },
    tags: [
      { key: "job_id", value: r.jobId },
      { key: "model_name", value: r.message.modelName },
      { key: "strategy", value: strategy },
      { key: "trigger", value: r.message.trigger },
      { key: "environment", value: config.environment },
    ],
  };
}

/** RunTask answers 200 with `failures` (capacity, bad subnet…) instead of throwing; that is a failed launch. */
export class LaunchFailedError extends Error {
  constructor(readonly failures: ReadonlyArray<{ arn?: string; reason?: string; detail?: string }>) {
    super(`RunTask started no task: ${failures.map((f) => [f.reason, f.detail].filter(Boolean).join(" ")).join("; ") || "no failure reason given"}`);
    this.name = "LaunchFailedError";
  }
}

export async function launchTask(ecs: ECSClient, input: RunTaskCommandInput): Promise<Task & { taskArn: string }> {
  const out = await ecs.send(new RunTaskCommand(input));
  const task = out.tasks?.find((t) => t.taskArn);
  if (!task?.taskArn) throw new LaunchFailedError(out.failures ?? []);
  return { ...task, taskArn: task.taskArn };
}
